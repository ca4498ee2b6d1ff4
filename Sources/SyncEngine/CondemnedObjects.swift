import ContainerStore
import Foundation
import ItemModel
import Synchronization

/// What collectors have condemned (`gc/<run>.condemned`), as a writer of a format-2
/// container must know it before each commit (docs/CONTAINER-FORMAT.md, rule W): listed
/// again whenever the last listing started more than a quarter of the grace period ago,
/// so a commit always follows a listing by less than half of it. A list is read once
/// (lists never change but for `swept`, which a writer need not see). The generation
/// counts the listings that brought new keys: a push checked against one generation may
/// commit only while it is still the current one.
final class CondemnedObjects: Sendable {
    private struct State {
        var lists: [String: Set<String>] = [:]
        var listedAt: ContinuousClock.Instant?
        var keys: Set<String> = []
        var generation = 0
    }

    private let state = Mutex(State())
    let grace: Duration

    init(grace: Duration) {
        self.grace = grace
    }

    /// The condemned keys as of the last listing (empty before the first): for choosing
    /// a fresh key up front; the commit checks against `current`.
    func contains(_ key: String) -> Bool {
        state.withLock { $0.keys.contains(key) }
    }

    /// A list this device's collector just wrote.
    func learn(_ name: String, _ keys: [String]) {
        state.withLock { state in
            state.lists[name] = Set(keys)
            if !state.keys.isSuperset(of: keys) { state.generation += 1 }
            state.keys.formUnion(keys)
        }
    }

    /// The last listing started less than a quarter of the grace ago: a commit may go now.
    var isFresh: Bool {
        state.withLock { $0.listedAt.map { ContinuousClock.now - $0 < grace / 4 } ?? false }
    }

    /// The condemned keys, listed again if the last listing is too old.
    func current(_ calls: SyncCalls) async throws(SyncError) -> Set<String> {
        try await listing(calls).keys
    }

    /// The condemned keys and their generation, listed again if the last listing is too old.
    func listing(_ calls: SyncCalls) async throws(SyncError) -> (keys: Set<String>, generation: Int) {
        let refresh = grace / 4
        if let listed = state.withLock({ state in state.listedAt.map { (state.keys, state.generation, $0) } }), ContinuousClock.now - listed.2 < refresh {
            return (listed.0, listed.1)
        }
        let started = ContinuousClock.now
        let names = try await calls.store("cannot list the collector's lists") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.gcPrefix)
        }.filter { $0.hasSuffix(".condemned") }
        let known = state.withLock { Set($0.lists.keys) }
        var lists = state.withLock { $0.lists.filter { names.contains($0.key) } }
        for name in names where !known.contains(name) {
            let bytes = try await calls.store("cannot read \(name)") { store throws(StoreError) in try await store.get(name) }
            guard let list = try? RecordCodec.decode(CondemnedList.self, from: bytes) else {
                throw SyncError(code: .corrupt, message: "\(name) is not a list of condemned objects; nothing is committed until it is readable or gone")
            }
            lists[name] = Set(list.keys)
        }
        let keys = lists.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        return state.withLock { state in
            let generation = state.generation + (state.keys.isSuperset(of: keys) ? 0 : 1)
            state = State(lists: lists, listedAt: started, keys: keys, generation: generation)
            return (keys, generation)
        }
    }

    /// Right before a commit's put (W1): the listing is fresh (listed again if it is not)
    /// and has brought no key since `generation`, the one the record was checked against.
    func stillClear(since generation: Int, _ calls: SyncCalls) async throws(SyncError) -> Bool {
        let now = try await listing(calls).generation
        return now == generation && isFresh
    }
}
