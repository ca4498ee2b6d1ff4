/// One entry of a folder listing, with the offset that resumes after it.
public struct DirectoryListingEntry: Sendable {
    public var name: [UInt8]
    public var attributes: ItemAttributes
    public var nextOffset: UInt64
}
