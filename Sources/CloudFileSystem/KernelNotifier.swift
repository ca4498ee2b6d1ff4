import Foundation
import Dispatch
import Synchronization
import SyncEngine

/// The one place kernel cache invalidations are sent from: a dedicated thread drains a
/// queue, so they are never sent inside a FUSE callback or with a lease or lock held
/// (an invalidation can wait on the kernel, which can wait on a callback).
public final class KernelNotifier: InvalidationSink {
    public typealias Sender = @Sendable (KernelInvalidation) -> Void

    private struct State {
        var queue: [KernelInvalidation] = []
        var sender: Sender?
        var stopped = false
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let handles: HandleTable

    public init(handles: HandleTable) {
        self.handles = handles
        let thread = Thread { [weak self] in self?.drain() }
        thread.name = "ubiqfs-notifier"
        thread.start()
    }

    /// Connects the notifier to the mounted session; invalidations before that are dropped
    /// (the kernel has nothing cached yet).
    public func connect(_ sender: @escaping Sender) {
        state.withLock { $0.sender = sender }
    }

    public func stop() {
        state.withLock {
            $0.stopped = true
            $0.sender = nil
        }
        wakeup.signal()
    }

    public func invalidate(_ invalidations: [KernelInvalidation]) {
        guard !invalidations.isEmpty else { return }
        for case .inode(let ino, true) in invalidations {
            handles.markContentReplaced(ino)
        }
        state.withLock { $0.queue.append(contentsOf: invalidations) }
        wakeup.signal()
    }

    private func drain() {
        while true {
            wakeup.wait()
            let (batch, sender, stopped) = state.withLock { state in
                let batch = state.queue
                state.queue = []
                return (batch, state.sender, state.stopped)
            }
            if stopped { return }
            guard let sender else { continue }
            var seen: Set<KernelInvalidation> = []
            for invalidation in batch where seen.insert(invalidation).inserted {
                sender(invalidation)
                // The kernel drops a folder's cached listing on an inval_entry only when the
                // name was in its dentry cache; a name it never looked up needs the folder's
                // data dropped. Sent from here, so it never marks a folder's handles.
                if case .entry(let parent, _) = invalidation, seen.insert(.inode(parent, data: true)).inserted {
                    sender(.inode(parent, data: true))
                }
            }
        }
    }
}
