import Inodes
import ItemModel
import Synchronization

/// Who hears when content a thumbnail could show is here, and when another device's
/// record changed items (their pictures may need installing, moving or removing): the
/// thumbnail service, which the engine knows only through this. Called with no lock of
/// ours held: a handler must not block.
public final class ThumbnailEvents: Sendable {
    public enum Event: Sendable {
        /// Committed content is local: this device uploaded it, or a download finished.
        case contentHere([Inode])
        /// Applied records upserted or deleted these items.
        case changed([ItemID])
    }

    private let handler = Mutex<(@Sendable (Event) -> Void)?>(nil)

    public init() {}

    /// Replaces the handler; nil stops reporting.
    public func set(_ receive: (@Sendable (Event) -> Void)?) {
        handler.withLock { $0 = receive }
    }

    func report(_ event: Event) {
        handler.withLock { $0 }?(event)
    }
}
