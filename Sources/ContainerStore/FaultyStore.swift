import ItemModel
import Synchronization

/// A store that passes calls to another one with injected latency, bandwidth limits,
/// errors and hangs (`ubiqfs mount --store-faults`): how ubiqfs behaves on a bad network
/// can be seen and tested on any store. Faults can be changed while it runs.
public final class FaultyStore: ContainerStore {
    public let base: any ContainerStore
    private struct State {
        var faults: StoreFaults
        var random: SplitMix64
    }

    private let state: Mutex<State>

    /// The base store's throttling replies, and those injected here (`throttle=P`).
    public let congestion: StoreCongestion?

    public init(_ base: any ContainerStore, faults: StoreFaults) {
        self.base = base
        congestion = base.congestion ?? StoreCongestion()
        state = Mutex(State(faults: faults, random: SplitMix64(seed: faults.seed)))
    }

    public var faults: StoreFaults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// The store's own name: faults come and go, the store a state dir verified stays.
    public var displayName: String { base.displayName }

    /// Waits and fails as the faults say; then the call moves `bytes` at the allowed rate.
    private func inject(_ key: String, bytes: Int = 0) async throws(StoreError) {
        let (faults, roll) = state.withLock { state in (state.faults, state.random.unit()) }
        if faults.blocksOnly && !Self.isContent(key) { return }
        do {
            // A hang lasts until the caller gives up or the faults are changed (`ubiqfs faults`).
            while faults.hang && self.faults.hang {
                try Task.checkCancellation()
                try await Task.sleep(for: .milliseconds(100))
            }
            if faults.latency > .zero { try await Task.sleep(for: faults.latency) }
        } catch {
            throw StoreError(code: .unreachable, message: "cancelled while waiting for the store", cause: error)
        }
        if roll < faults.errorRate {
            throw StoreError(code: .unreachable, message: "injected fault for \(key)")
        }
        if faults.throttleRate > 0, state.withLock({ $0.random.unit() }) < faults.throttleRate {
            // As S3 does with `SlowDown`: the store retries after a pause, and counts it.
            congestion?.noteThrottled()
            do { try await Task.sleep(for: .milliseconds(100)) } catch {
                throw StoreError(code: .unreachable, message: "cancelled while waiting for the store", cause: error)
            }
        }
        try await throttle(key, bytes: bytes)
    }

    /// The time `bytes` take at the bandwidth limit.
    private func throttle(_ key: String, bytes: Int) async throws(StoreError) {
        let faults = self.faults
        guard let rate = faults.bytesPerSecond, bytes > 0, !faults.blocksOnly || Self.isContent(key) else { return }
        do { try await Task.sleep(for: .milliseconds(Double(bytes) * 1000 / Double(rate))) } catch {
            throw StoreError(code: .unreachable, message: "cancelled while waiting for the store", cause: error)
        }
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        try await inject(key)
        let bytes = try await base.get(key, range: range)
        try await throttle(key, bytes: bytes.count)
        return bytes
    }

    /// Each piece is passed on at the allowed rate.
    public func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
        try await inject(key)
        try await base.stream(key, range: range) { piece throws(StoreError) in
            try await throttle(key, bytes: piece.count)
            try await receive(piece)
        }
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        try await inject(key, bytes: bytes.count)
        try await base.put(key, bytes)
        try loseReply(key)
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        try await inject(key, bytes: bytes.count)
        let stored = try await base.putIfAbsent(key, bytes)
        try loseReply(key)
        return stored
    }

    /// The write happened; the caller is told it may not have.
    private func loseReply(_ key: String) throws(StoreError) {
        let (faults, roll) = state.withLock { state in (state.faults, state.random.unit()) }
        if faults.blocksOnly && !Self.isContent(key) { return }
        if roll < faults.lostReplyRate {
            throw StoreError(code: .unreachable, message: "injected lost reply for \(key)")
        }
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool {
        try await inject(key)
        return try await base.exists(key)
    }

    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await inject(prefix)
        return try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try await inject(prefix)
        return try await base.listObjects(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    public func delete(_ key: String) async throws(StoreError) {
        try await inject(key)
        try await base.delete(key)
        try loseReply(key)
    }

    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        base.watch(prefix: prefix, onChange: onChange)
    }

    public func verify() async throws(StoreError) {
        try await inject(".ubiqfs-probe/")
        try await base.verify()
    }

    /// Content: blocks and packs (what `blocks` faults slow or stop).
    static func isContent(_ key: String) -> Bool {
        key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix)
    }
}
