/// One object as a listing shows it: its key and its size in bytes (-1 where the store
/// does not say), so a collector can tell what it frees without reading anything.
public struct StoredObject: Hashable, Sendable {
    public var key: String
    public var size: Int64

    public init(key: String, size: Int64) {
        self.key = key
        self.size = size
    }
}
