/// `container.json`: written once with put-if-absent when the container is created;
/// every device reads it before anything else and refuses formats it does not know.
public struct ContainerInfo: Hashable, Sendable, Codable {
    public static let currentFormat = 1
    public static let defaultBlockSize: Int64 = 4 * 1024 * 1024

    public var format: Int
    public var id: String
    public var blockSize: Int64
    /// Nanoseconds since the epoch.
    public var created: Int64

    public init(id: String, blockSize: Int64 = Self.defaultBlockSize, created: Int64) {
        self.format = Self.currentFormat
        self.id = id
        self.blockSize = blockSize
        self.created = created
    }
}
