/// Where `/metrics` is served: `PORT` alone is loopback (127.0.0.1); any other address,
/// `0.0.0.0` included, must be named (`HOST:PORT`, `[IPv6]:PORT`).
public struct MetricsAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(Invalid) {
        let trimmed = text.trimmingSpaces
        var host = "127.0.0.1", portText = trimmed
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]"), trimmed[trimmed.index(after: close)...].hasPrefix(":") else {
                throw Invalid(description: "\(text): expected [IPv6]:PORT")
            }
            host = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
            portText = String(trimmed[trimmed.index(close, offsetBy: 2)...])
        } else if let colon = trimmed.lastIndex(of: ":") {
            host = String(trimmed[..<colon])
            portText = String(trimmed[trimmed.index(after: colon)...])
            guard !host.contains(":") else { throw Invalid(description: "\(text): write an IPv6 address in brackets, [ADDRESS]:PORT") }
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw Invalid(description: "\(text): expected PORT or HOST:PORT with a port from 1 to 65535")
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || ".-:".contains($0) }) else {
            throw Invalid(description: "\(text): \(host.isEmpty ? "no host before the port" : "\(host) is no host name or address")")
        }
        self.host = host
        self.port = port
    }

    /// Unchecked: port 0 (any free port) for tests.
    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
