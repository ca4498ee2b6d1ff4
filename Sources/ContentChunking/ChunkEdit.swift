/// One change from old content to new: the old bytes `replaced` gave way to `length` new
/// bytes. An insertion replaces an empty range, a deletion has length 0, an overwrite in
/// place has `length == replaced.count`.
public struct ChunkEdit: Sendable, Hashable {
    /// The range of the old content, in old offsets.
    public var replaced: Range<Int>
    /// How many bytes stand in its place in the new content.
    public var length: Int

    public init(replaced: Range<Int>, length: Int) {
        self.replaced = replaced
        self.length = length
    }

    /// How much the edit moves what follows it.
    public var shift: Int { length - replaced.count }
}
