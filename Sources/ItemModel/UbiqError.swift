/// The shape every ubiqfs error shares: a code to branch on, a message for people,
/// and the cause it came from, so a log line shows the whole chain.
public protocol UbiqError: Error, CustomStringConvertible, Sendable {
    associatedtype Code: Sendable & CustomStringConvertible
    var code: Code { get }
    var message: String { get }
    var cause: (any Error)? { get }
}

extension UbiqError {
    public var description: String {
        var text = "\(message) [\(code)]"
        if let cause { text += ": \(cause)" }
        return text
    }
}
