import ContainerStore

/// A store that passes each call to `base`: a test's wrapper says only what it changes.
/// It gives no watch, so a device on it pulls only when a test syncs it.
protocol ForwardingStore: ContainerStore {
    var base: any ContainerStore { get }
}

extension ForwardingStore {
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
