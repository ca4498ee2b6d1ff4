import Glibc
import Inodes
import ItemModel
import MetadataStore
import ThumbnailService

/// Opens by programs that only look (`Lookers`): a thumbnailer never downloads a file
/// that is not here (its picture comes from the container, if another device made one);
/// other lookers read what they read, up to `Lookers.readLimit` of a file not here.
extension FileSystemCore {
    func openLooking(_ ino: Inode, flags: Int32, as kind: Lookers.Kind) async throws(FileSystemError) -> OpenedFile {
        let row = try row(ino)
        if kind == .thumbnailer, row.itemKind == .file, !row.deleted, row.contentState != .local, row.size > 0 {
            // The viewer looks for the picture again after its thumbnailer ends.
            let installed = await thumbnails?.installNow(row.itemID) ?? false
            throw FileSystemError(.notLocal, "\(row.itemName) is not on this device; \(installed ? "its thumbnail is installed" : "no thumbnail of it yet")")
        }
        if let opened = try openLocal(ino, flags: flags, looking: kind) { return opened }
        // A download the open cannot do without (a file whose fill is being replaced).
        throw FileSystemError(.notLocal, "\(row.itemName) is not on this device")
    }
}
