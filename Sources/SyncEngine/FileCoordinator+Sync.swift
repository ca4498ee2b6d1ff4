import FileCoordinator
import Inodes

extension FileCoordinator {
    /// A shared lease on one item for a sync step (`step`: "download", "upload"); a wait cut
    /// short (an unmount) is the step's cancellation.
    func sharedLease(_ ino: Inode, for step: String) async throws(SyncError) -> LeaseSet {
        do {
            return try await acquire([LeaseRequest(ino, .shared)], owner: "sync: \(step)")
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled while waiting to \(step) inode \(ino)", cause: error)
        }
    }
}
