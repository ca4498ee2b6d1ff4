import CloudFileSystem
import ContainerStore
import ItemModel
import Synchronization
import SyncEngine

/// What `/healthz` answers: healthy while the FUSE loop runs, the kernel's requests get
/// answers, and the store answers a `HEAD` of the container's description within
/// `probeTimeout` (asked at most every `probeEvery`, however often a checker polls).
final class MountHealth: Sendable {
    static let probeTimeout: Duration = .seconds(5)
    static let probeEvery: Duration = .seconds(2)

    private struct Probe {
        var at: ContinuousClock.Instant?
        var failure: String?
    }

    private let store: any ContainerStore
    private let timings: FuseRequestTimings
    private let serving = Atomic<Bool>(false)
    private let probe = Mutex(Probe())

    init(store: any ContainerStore, timings: FuseRequestTimings) {
        self.store = store
        self.timings = timings
    }

    func setServing(_ value: Bool) {
        serving.store(value, ordering: .relaxed)
    }

    var isServing: Bool { serving.load(ordering: .relaxed) }

    /// Why the mount is unhealthy, or nil.
    func problem() async -> String? {
        guard isServing else { return "the mount does not serve requests (not mounted yet, or unmounting)" }
        if let stuck = timings.stuck { return stuck }
        return await storeProblem()
    }

    /// Why the store did not answer the last probe (made now if the last is old), or nil.
    func storeProblem() async -> String? {
        let now = ContinuousClock.now
        if let cached = probe.withLock({ probe -> String?? in
            guard let at = probe.at, now - at < Self.probeEvery else { return nil }
            return .some(probe.failure)
        }) {
            return cached
        }
        let failure: String?
        do {
            let store = self.store
            _ = try await StoreDeadline.run(Self.probeTimeout) { () throws(StoreError) in try await store.exists(ContainerLayout.infoKey) }
            failure = nil
        } catch {
            failure = "the store \(store.displayName) does not answer: \(error.message)"
        }
        // A slower probe that started earlier must not replace a newer answer.
        probe.withLock { probe in
            if probe.at.map({ $0 < now }) ?? true { probe = Probe(at: now, failure: failure) }
        }
        return failure
    }
}
