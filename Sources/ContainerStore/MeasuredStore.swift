import Metrics

/// Counts what passes to and from a store: bytes and objects each way, each request's
/// time by operation, and failures by operation and kind (the mount's metrics). Sits
/// above the fault injection, so injected faults are counted as the engine meets them.
/// A missing object is an answer, not a failure: `get` and `delete` of one count no error.
public final class MeasuredStore: ContainerStore {
    public let base: any ContainerStore
    public let bytesUp = Counter(), bytesDown = Counter()
    public let objectsUp = Counter(), objectsDown = Counter()
    public let durations = Labelled<Histogram>(["operation"]) { Histogram() }
    public let errors = Labelled<Counter>(["operation", "kind"]) { Counter() }

    private let timings: [Operation: Histogram]

    enum Operation: String, CaseIterable {
        case get, put, putIfAbsent = "put_if_absent", exists, list, delete
    }

    public init(_ base: any ContainerStore) {
        self.base = base
        let durations = self.durations
        timings = Dictionary(uniqueKeysWithValues: Operation.allCases.map { ($0, durations.child($0.rawValue)) })
    }

    public var displayName: String { base.displayName }
    public var congestion: StoreCongestion? { base.congestion }

    private func measured<T>(_ operation: Operation, _ body: () async throws(StoreError) -> T) async throws(StoreError) -> T {
        let started = MonotonicClock.nanoseconds
        defer { timings[operation]?.observe(nanoseconds: MonotonicClock.nanoseconds &- started) }
        do {
            return try await body()
        } catch {
            if error.code != .notFound { errors.child(operation.rawValue, error.code.rawValue).add() }
            throw error
        }
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        let bytes = try await measured(.get) { () throws(StoreError) in try await base.get(key, range: range) }
        bytesDown.add(UInt64(bytes.count))
        objectsDown.add()
        return bytes
    }

    /// Timed until the last piece is taken (a slow taker counts).
    public func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
        try await measured(.get) { () throws(StoreError) in
            try await base.stream(key, range: range) { piece throws(StoreError) in
                bytesDown.add(UInt64(piece.count))
                try await receive(piece)
            }
        }
        objectsDown.add()
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        try await measured(.put) { () throws(StoreError) in try await base.put(key, bytes) }
        bytesUp.add(UInt64(bytes.count))
        objectsUp.add()
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        let put = try await measured(.putIfAbsent) { () throws(StoreError) in try await base.putIfAbsent(key, bytes) }
        if put {
            bytesUp.add(UInt64(bytes.count))
            objectsUp.add()
        }
        return put
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool {
        try await measured(.exists) { () throws(StoreError) in try await base.exists(key) }
    }

    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await measured(.list) { () throws(StoreError) in try await base.list(prefix: prefix, startAfter: startAfter, limit: limit) }
    }

    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try await measured(.list) { () throws(StoreError) in try await base.listObjects(prefix: prefix, startAfter: startAfter, limit: limit) }
    }

    public func delete(_ key: String) async throws(StoreError) {
        try await measured(.delete) { () throws(StoreError) in try await base.delete(key) }
    }

    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        base.watch(prefix: prefix, onChange: onChange)
    }

    public func verify() async throws(StoreError) {
        try await base.verify()
    }
}
