import ContainerStore

/// A store that gives no watch: a device on it pulls only when a test syncs it, so a
/// workload's view of the tree cannot change under it between two of its steps (a local
/// folder store's inotify would start pulls at any time).
struct UnwatchedStore: ContainerStore {
    let base: any ContainerStore

    var displayName: String { base.displayName }

    func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] { try await base.get(key, range: range) }
    func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) { try await base.put(key, bytes) }
    func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool { try await base.putIfAbsent(key, bytes) }
    func exists(_ key: String) async throws(StoreError) -> Bool { try await base.exists(key) }
    func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }
    func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try await base.listObjects(prefix: prefix, startAfter: startAfter, limit: limit)
    }
    func delete(_ key: String) async throws(StoreError) { try await base.delete(key) }
}
