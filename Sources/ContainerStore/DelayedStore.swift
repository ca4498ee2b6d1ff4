import ItemModel

/// A store whose block downloads take at least `delay` each: a slow network, on demand
/// (`ubiqfs mount --store-delay`), so streaming and progress can be seen and tested.
public struct DelayedStore: ContainerStore {
    public let base: any ContainerStore
    public let delay: Duration

    public init(_ base: any ContainerStore, delay: Duration) {
        self.base = base
        self.delay = delay
    }

    public var displayName: String { base.displayName }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        if key.hasPrefix(ContainerLayout.blockPrefix) {
            do { try await Task.sleep(for: delay) } catch {
                throw StoreError(code: .unreachable, message: "cancelled while waiting for the store", cause: error)
            }
        }
        return try await base.get(key, range: range)
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) { try await base.put(key, bytes) }
    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool { try await base.putIfAbsent(key, bytes) }
    public func exists(_ key: String) async throws(StoreError) -> Bool { try await base.exists(key) }
    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }
    public func delete(_ key: String) async throws(StoreError) { try await base.delete(key) }
    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        base.watch(prefix: prefix, onChange: onChange)
    }
}
