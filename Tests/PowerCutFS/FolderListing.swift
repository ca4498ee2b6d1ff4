/// A folder's names as an open handle lists them: taken at opendir and again on a rewind
/// (offset 0), so offsets stay stable while the folder changes under a reader.
struct FolderListing {
    struct Item {
        var name: [UInt8]
        var ino: UInt64
        /// The type bits, for the dirent.
        var mode: UInt32
    }

    var ino: UInt64
    var items: [Item]
}
