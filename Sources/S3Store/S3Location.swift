import ContainerStore

/// `s3://BUCKET/PREFIX`: where containers live in a bucket. Each container is the folder
/// `PREFIX/CONTAINER/` of the bucket.
public struct S3Location: Sendable, Equatable {
    public var bucket: String
    /// Without leading or trailing slashes; may be empty.
    public var prefix: String

    public static func isS3(_ text: String) -> Bool { text.hasPrefix("s3://") }

    public init(bucket: String, prefix: String = "") {
        self.bucket = bucket
        self.prefix = prefix
    }

    public init(parsing text: String) throws(StoreError) {
        guard Self.isS3(text) else { throw StoreError(code: .configuration, message: "\(text) is not an s3://BUCKET/PREFIX address") }
        let rest = text.dropFirst("s3://".count)
        let bucket = rest.prefix { $0 != "/" }
        // Bucket names: 3 to 63 of a-z 0-9 . - (the DNS rules every S3 service accepts).
        guard (3...63).contains(bucket.count),
              bucket.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == ".") })
        else {
            throw StoreError(code: .configuration, message: "'\(bucket)' is not a valid bucket name (3 to 63 of a-z, 0-9, '.' and '-')")
        }
        self.bucket = String(bucket)
        let prefix = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
        guard !prefix.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
            throw StoreError(code: .configuration, message: "the prefix of \(text) may not contain '.' or '..'")
        }
        self.prefix = prefix
    }

    public var description: String { "s3://\(bucket)" + (prefix.isEmpty ? "" : "/\(prefix)") }
}
