import ContainerStore
import ItemModel
import Synchronization

/// A store whose calls never return while `hanging` is set: a peer that stopped
/// answering without closing the connection, which no real local store can be made to do.
final class HangingStore: ContainerStore {
    let base: any ContainerStore
    private let state = Mutex(false)

    init(base: any ContainerStore) {
        self.base = base
    }

    var hanging: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    var displayName: String { "hanging " + base.displayName }

    private func gate() async {
        while hanging { try? await Task.sleep(for: .milliseconds(20)) }
    }

    func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        await gate()
        return try await base.get(key, range: range)
    }

    func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        await gate()
        try await base.put(key, bytes)
    }

    func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        await gate()
        return try await base.putIfAbsent(key, bytes)
    }

    func exists(_ key: String) async throws(StoreError) -> Bool {
        await gate()
        return try await base.exists(key)
    }

    func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        await gate()
        return try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    func delete(_ key: String) async throws(StoreError) {
        await gate()
        try await base.delete(key)
    }
}
