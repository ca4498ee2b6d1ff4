import Synchronization

/// Set by the first of many concurrent tasks that fails, so the loop feeding them stops
/// reading and starting more work (the failure itself reaches it through the task group).
final class FailureFlag: Sendable {
    private let failed = Atomic<Bool>(false)

    var isSet: Bool { failed.load(ordering: .relaxed) }

    func set() { failed.store(true, ordering: .relaxed) }
}
