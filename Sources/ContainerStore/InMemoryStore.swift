import ItemModel
import Synchronization

/// A store in memory, for unit tests of the sync engine. `isReachable` simulates an
/// outage: every call then fails with `.unreachable`, as a network store would.
public final class InMemoryStore: ContainerStore {
    private struct State {
        var objects: [String: [UInt8]] = [:]
        var reachable = true
    }

    private let state = Mutex(State())
    public let displayName = "memory"

    public init() {}

    public var isReachable: Bool {
        get { state.withLock { $0.reachable } }
        set { state.withLock { $0.reachable = newValue } }
    }

    public var keys: [String] { state.withLock { $0.objects.keys.sorted() } }

    private func access<T>(_ body: (inout State) throws(StoreError) -> T) throws(StoreError) -> T {
        try state.withLock { (state) throws(StoreError) -> T in
            guard state.reachable else { throw StoreError(code: .unreachable, message: "memory store is offline") }
            return try body(&state)
        }
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        try access { (state) throws(StoreError) -> [UInt8] in
            guard let bytes = state.objects[key] else { throw StoreError(code: .notFound, message: "no object \(key)") }
            guard let range else { return bytes }
            let lower = Int(min(range.lowerBound, Int64(bytes.count)))
            let upper = Int(min(range.upperBound, Int64(bytes.count)))
            return Array(bytes[lower..<upper])
        }
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        try access { $0.objects[key] = bytes }
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        try access { state in
            if state.objects[key] != nil { return false }
            state.objects[key] = bytes
            return true
        }
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool {
        try access { $0.objects[key] != nil }
    }

    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await listObjects(prefix: prefix, startAfter: startAfter, limit: limit).map(\.key)
    }

    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try access { state in
            let keys = state.objects.keys.filter { key in key.hasPrefix(prefix) && (startAfter.map { key > $0 } ?? true) }
            return keys.sorted().prefix(limit).map { StoredObject(key: $0, size: Int64(state.objects[$0]?.count ?? 0)) }
        }
    }

    public func delete(_ key: String) async throws(StoreError) {
        try access { _ = $0.objects.removeValue(forKey: key) }
    }
}
