import Synchronization

/// How many name and listing requests the kernel sent since the mount, by kind: what
/// `ubiqfs status --json` shows as `kernelRequests`, and how a test sees that a file
/// manager's view of a folder costs no lookup per entry.
public final class KernelRequestCounts: Sendable {
    private let lookups = Atomic<UInt64>(0)
    private let getattrs = Atomic<UInt64>(0)
    private let readdirs = Atomic<UInt64>(0)
    private let readdirpluses = Atomic<UInt64>(0)

    public init() {}

    func noteLookup() { lookups.add(1, ordering: .relaxed) }
    func noteGetattr() { getattrs.add(1, ordering: .relaxed) }
    func noteReaddir(plus: Bool) {
        if plus { readdirpluses.add(1, ordering: .relaxed) } else { readdirs.add(1, ordering: .relaxed) }
    }

    /// Every kind by name, zeros included.
    public var snapshot: [String: UInt64] {
        ["lookup": lookups.load(ordering: .relaxed), "getattr": getattrs.load(ordering: .relaxed),
         "readdir": readdirs.load(ordering: .relaxed), "readdirplus": readdirpluses.load(ordering: .relaxed)]
    }
}
