import Foundation
import Synchronization

/// Fans change events out to watchers (the watch API's sockets, tests). Emitters check
/// `isWatched` first, so nobody pays for paths while nobody listens. Subscribers are
/// called on the emitting thread with no lock of ours held and must not block.
public final class ChangeFeed: Sendable {
    private let subscribers = Mutex<[UUID: @Sendable (ChangeEvent) -> Void]>([:])
    private let watched = Atomic<Int>(0)

    public init() {}

    public var isWatched: Bool { watched.load(ordering: .relaxed) > 0 }

    public func subscribe(_ receive: @escaping @Sendable (ChangeEvent) -> Void) -> UUID {
        let id = UUID()
        subscribers.withLock {
            $0[id] = receive
            watched.store($0.count, ordering: .relaxed)
        }
        return id
    }

    public func unsubscribe(_ id: UUID) {
        subscribers.withLock {
            $0.removeValue(forKey: id)
            watched.store($0.count, ordering: .relaxed)
        }
    }

    public func emit(_ events: [ChangeEvent]) {
        guard !events.isEmpty, isWatched else { return }
        let receivers = subscribers.withLock { Array($0.values) }
        for receive in receivers {
            for event in events { receive(event) }
        }
    }

    public func emit(_ event: ChangeEvent) {
        emit([event])
    }
}
