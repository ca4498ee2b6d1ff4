import ContainerStore
import GRDB
import MetadataStore

/// How every sync step calls the store and the state database (the engine, the uploader,
/// the downloads and their block fetcher): store calls bounded by the store timeout, each
/// answer noted in `StoreReachability`, every error wrapped with what was being done.
struct SyncCalls: Sendable {
    let store: any ContainerStore
    let metadata: MetadataStore
    let timeout: Duration
    let reachability: StoreReachability
    /// How content is named and packed blobs sealed in this container (made once: every
    /// block fetch and upload uses it).
    let codec: ContentCodec

    init(store: any ContainerStore, metadata: MetadataStore, timeout: Duration, reachability: StoreReachability) {
        (self.store, self.metadata, self.timeout, self.reachability) = (store, metadata, timeout, reachability)
        codec = ContentCodec(store: store)
    }

    /// A store call, bounded by `timeout`.
    func store<T: Sendable>(
        _ message: String, _ body: @escaping @Sendable (any ContainerStore) async throws(StoreError) -> T
    ) async throws(SyncError) -> T {
        let store = self.store
        do {
            let result = try await StoreDeadline.run(timeout) { () throws(StoreError) in try await body(store) }
            reachability.noteAnswer()
            return result
        } catch {
            if error.code != .unreachable { reachability.noteAnswer() }
            throw SyncError.wrap(error, message)
        }
    }

    /// A write transaction (reads go through `read`: concurrent, no writer lock).
    func write<T: Sendable>(_ message: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(SyncError) -> T {
        do {
            return try await metadata.write(body)
        } catch {
            throw SyncError(code: .metadata, message: message, cause: error)
        }
    }

    /// Every transaction so far on disk (`MetadataStore.syncToDisk`).
    func syncToDisk(_ message: String) async throws(SyncError) {
        do {
            try await metadata.syncToDisk()
        } catch {
            throw SyncError(code: .metadata, message: message, cause: error)
        }
    }

    func read<T: Sendable>(_ message: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(SyncError) -> T {
        do {
            return try await metadata.read(body)
        } catch {
            throw SyncError(code: .metadata, message: message, cause: error)
        }
    }
}
