import ItemModel

/// What one file's upload has named so far: its blocks in order, where each content it met
/// is stored (the committed version's blocks and its own), and the objects it names that
/// it did not write (rule W3 asks the store about those before the record).
struct UploadManifest {
    private(set) var blocks: [BlockReference] = []
    private(set) var placed: [String: BlockReference]
    private(set) var reused: Set<String> = []
    /// Bytes of the file named so far.
    private(set) var offset: Int64 = 0

    init(known: [String: BlockReference]) {
        placed = known
    }

    /// Names `block` next; `reusedObject` is the object holding it when another push wrote it.
    mutating func append(_ block: BlockReference, reusedObject: String? = nil) {
        blocks.append(block)
        placed[block.hash] = block
        offset += block.length
        if let reusedObject { reused.insert(reusedObject) }
    }
}
