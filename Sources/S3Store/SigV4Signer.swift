import Crypto
import Foundation

/// AWS Signature Version 4 for S3 requests (the "Authorization" header form): what every
/// S3-compatible service checks. The payload is signed by its SHA-256, so a corrupted body
/// is refused by the service.
public struct SigV4Signer: Sendable {
    public let credentials: S3Credentials
    public let region: String
    public let service = "s3"

    public init(credentials: S3Credentials, region: String) {
        self.credentials = credentials
        self.region = region
    }

    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public static func payloadHash(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).hexString
    }

    /// The headers to add to the request: x-amz-date, x-amz-content-sha256, the session
    /// token if any, and Authorization. `headers` are the other headers to sign (lower-case
    /// names); `path` is already URI-encoded; `query` is unencoded.
    public func sign(
        method: String, host: String, path: String, query: [(String, String)], headers: [(String, String)],
        payloadHash: String, date: Date
    ) -> [(String, String)] {
        let amzDate = Self.amzDate(date)
        let day = String(amzDate.prefix(8))
        var signed = headers.map { ($0.0.lowercased(), $0.1.trimmingCharacters(in: .whitespaces)) }
        signed.append(("host", host))
        signed.append(("x-amz-content-sha256", payloadHash))
        signed.append(("x-amz-date", amzDate))
        if let token = credentials.sessionToken { signed.append(("x-amz-security-token", token)) }
        signed.sort { $0.0 < $1.0 }
        let signedNames = signed.map(\.0).joined(separator: ";")
        let encodedQuery: [(name: String, value: String)] = query.map { (Self.encode($0.0, slash: true), Self.encode($0.1, slash: true)) }
        let sortedQuery = encodedQuery.sorted { (a, b) -> Bool in a.name == b.name ? a.value < b.value : a.name < b.name }
        let canonicalQuery = sortedQuery.map { $0.name + "=" + $0.value }.joined(separator: "&")
        let canonicalRequest = [
            method, path, canonicalQuery,
            signed.map { "\($0.0):\($0.1)\n" }.joined(), signedNames, payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, SHA256.hash(data: Array(canonicalRequest.utf8)).hexString].joined(separator: "\n")
        var key = SymmetricKey(data: Array("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        let signature = Array(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key)).hexString
        var result = signed.filter { $0.0 != "host" && !headers.map { $0.0.lowercased() }.contains($0.0) }
        result.append((
            "authorization",
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope),SignedHeaders=\(signedNames),Signature=\(signature)"
        ))
        return result
    }

    static func amzDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))\(pad(parts.tm_mon + 1, 2))\(pad(parts.tm_mday, 2))T\(pad(parts.tm_hour, 2))\(pad(parts.tm_min, 2))\(pad(parts.tm_sec, 2))Z"
    }

    /// RFC 3986 encoding as SigV4 wants it: unreserved characters stay, everything else is
    /// %XX of its UTF-8 bytes; '/' stays in paths (`slash: false`) and is encoded in queries.
    public static func encode(_ text: String, slash: Bool) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                result.append(Character(UnicodeScalar(byte)))
            case UInt8(ascii: "/") where !slash:
                result.append("/")
            default:
                let hex = Array("0123456789ABCDEF")
                result += "%\(hex[Int(byte >> 4)])\(hex[Int(byte & 15)])"
            }
        }
        return result
    }
}

extension Sequence where Element == UInt8 {
    var hexString: String {
        let digits = Array("0123456789abcdef")
        var text = ""
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return text
    }
}

extension SHA256.Digest {
    var hexString: String { Array(self).hexString }
}
