import ContainerStore
import ItemModel
import Synchronization

/// An in-memory store whose journal commits run test code just before the record is
/// stored, and once just after it (before the committing device hears back), and whose
/// deletes (a collector's sweep) run test code before each: races between a push and
/// what happens meanwhile, made certain instead of likely.
public final class HookedCommits: ContainerStore {
    public let base: InMemoryStore
    private let before: @Sendable (InMemoryStore) async -> Void
    private let beforeDelete: @Sendable (String) async -> Void
    private let after = Mutex<(@Sendable () -> Void)?>(nil)

    public init(
        _ base: InMemoryStore, beforeEachCommit: @escaping @Sendable (InMemoryStore) async -> Void = { _ in },
        beforeEachDelete: @escaping @Sendable (String) async -> Void = { _ in }
    ) {
        self.base = base
        self.before = beforeEachCommit
        self.beforeDelete = beforeEachDelete
    }

    public var displayName: String { "hooked commits" }

    /// Runs `body` right after the next journal record is stored.
    public func afterNextCommit(_ body: @escaping @Sendable () -> Void) { after.withLock { $0 = body } }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        let isCommit = key.hasPrefix(ContainerLayout.journalPrefix)
        if isCommit { await before(base) }
        let stored = try await base.putIfAbsent(key, bytes)
        if stored && isCommit { after.withLock { $0.take() }?() }
        return stored
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] { try await base.get(key, range: range) }
    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) { try await base.put(key, bytes) }
    public func exists(_ key: String) async throws(StoreError) -> Bool { try await base.exists(key) }
    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }
    public func delete(_ key: String) async throws(StoreError) {
        await beforeDelete(key)
        try await base.delete(key)
    }
}
