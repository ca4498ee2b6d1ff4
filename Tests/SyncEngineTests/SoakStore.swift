import CloudFileSystem
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import GRDB
import Glibc
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import Synchronization
import Testing

// MARK: - A store per device

/// Passes calls to the shared store, counting them, or fails them all while the device is
/// offline (as a network store would: `unreachable`, before anything happened).
final class SoakStore: ContainerStore {
    struct Counters: Sendable, CustomStringConvertible {
        var reads = 0
        var blockReads = 0
        var writes = 0
        var other = 0
        var total: Int { reads + blockReads + writes + other }
        var description: String { "reads=\(reads) blockReads=\(blockReads) writes=\(writes) other=\(other)" }
    }

    struct State {
        var offline = false
        var counters = Counters()
    }

    let base: any ContainerStore
    let state = Mutex(State())

    init(_ base: any ContainerStore) { self.base = base }

    var displayName: String { "soak(\(base.displayName))" }

    var offline: Bool {
        get { state.withLock { $0.offline } }
        set { state.withLock { $0.offline = newValue } }
    }

    func takeCounters() -> Counters {
        state.withLock { state in
            defer { state.counters = Counters() }
            return state.counters
        }
    }

    enum Kind { case read, write, other }

    func enter(_ key: String, _ kind: Kind) throws(StoreError) {
        let offline = state.withLock { state -> Bool in
            switch kind {
            case .read where key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix): state.counters.blockReads += 1
            case .read: state.counters.reads += 1
            case .write: state.counters.writes += 1
            case .other: state.counters.other += 1
            }
            return state.offline
        }
        if offline { throw StoreError(code: .unreachable, message: "the device is offline (soak test)") }
    }

    func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        try enter(key, .read)
        return try await base.get(key, range: range)
    }

    func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        try enter(key, .write)
        try await base.put(key, bytes)
    }

    func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        try enter(key, .write)
        return try await base.putIfAbsent(key, bytes)
    }

    func exists(_ key: String) async throws(StoreError) -> Bool {
        try enter(key, .other)
        return try await base.exists(key)
    }

    func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try enter(prefix, .other)
        return try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    func delete(_ key: String) async throws(StoreError) {
        try enter(key, .write)
        try await base.delete(key)
    }
}
