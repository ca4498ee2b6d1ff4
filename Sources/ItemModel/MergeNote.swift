/// Format 4: the content this record commits for file `id` merges the committed version
/// `with` and edits made on the writing device (`inputs`) that were never committed on
/// their own, both made from their shared version `base`. Every device keeps each input
/// as a version of the file (`<seq>.<k>`, k from 1), so nothing either side wrote is lost.
public struct MergeNote: Hashable, Sendable, Codable {
    /// Inputs one merge may name: more is a forged record.
    public static let maxInputs = 16

    public var id: ItemID
    public var base: UInt64
    public var with: UInt64
    /// How the contents were merged: `text` (line by line), `sqlite` (by table and key),
    /// `json` (key by key); informational, a reader accepts any short lowercase word.
    public var kind: String
    public var inputs: [MergeInput]

    public init(id: ItemID, base: UInt64, with: UInt64, kind: String, inputs: [MergeInput]) {
        (self.id, self.base, self.with, self.kind, self.inputs) = (id, base, with, kind, inputs)
    }
}

/// One edit a merge took in: a content of the file as the writing device had it.
public struct MergeInput: Hashable, Sendable, Codable {
    /// The name of the device that made it.
    public var device: String
    /// When it was last written there, in nanoseconds since 1970.
    public var time: Int64
    public var size: Int64
    public var mtime: Int64
    public var blocks: [BlockReference]

    public init(device: String, time: Int64, size: Int64, mtime: Int64, blocks: [BlockReference]) {
        (self.device, self.time, self.size, self.mtime, self.blocks) = (device, time, size, mtime, blocks)
    }
}
