import Synchronization

/// The leases held by one acquisition. Releasing is explicit (leases guard kernel
/// operations and sync steps with clear ends, and a release must not wait for ARC);
/// `release()` is idempotent and may be called from any thread. Dropping an
/// unreleased set is a bug: it asserts in debug builds and releases in release builds,
/// so a forgotten lease cannot wedge the filesystem.
public final class LeaseSet: Sendable {
    /// What is held: sorted by key, one request per key (duplicates merged, exclusive wins).
    public let requests: [LeaseRequest]
    public let owner: String
    private let coordinator: FileCoordinator
    private let token: UInt64
    private let released = Atomic<Bool>(false)

    init(coordinator: FileCoordinator, requests: [LeaseRequest], owner: String, token: UInt64) {
        self.coordinator = coordinator
        self.requests = requests
        self.owner = owner
        self.token = token
    }

    /// Whether `release()` has run.
    public var isReleased: Bool { released.load(ordering: .acquiring) }

    /// Gives every lease back and wakes whoever is next; later calls do nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        coordinator.release(requests[...], token: token)
    }

    deinit {
        if !released.load(ordering: .acquiring) {
            assertionFailure("LeaseSet of \(owner) on \(requests.map(\.key)) dropped without release()")
            coordinator.release(requests[...], token: token)
        }
    }
}
