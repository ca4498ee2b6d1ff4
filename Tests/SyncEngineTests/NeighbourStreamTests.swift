import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import SeaweedFSFixture
import Synchronization
@testable import SyncEngine
import Testing

/// A run of neighbouring blobs fetched with one streamed read: each blob is checked,
/// written and told as soon as its bytes are in, not when the run's last byte is; the
/// transfer gate counts the largest blob in memory and the run's bytes moved.
@Suite struct NeighbourStreamTests {
    /// Hands a range on in pieces of `piece` bytes, and holds the last piece until released.
    final class HeldTail: ForwardingStore {
        let base: any ContainerStore
        let piece: Int
        private let released = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let tailReached = Mutex(false)

        init(_ base: any ContainerStore, piece: Int) {
            (self.base, self.piece) = (base, piece)
        }

        func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
            let bytes = try await base.get(key, range: range)
            var start = 0
            while start < bytes.count {
                let end = min(start + piece, bytes.count)
                if end == bytes.count {
                    await withCheckedContinuation { continuation in
                        released.withLock { $0 = continuation }
                        tailReached.withLock { $0 = true }
                    }
                }
                try await receive(Array(bytes[start ..< end]))
                start = end
            }
        }

        var isHoldingTail: Bool { tailReached.withLock { $0 } }

        func release() {
            released.withLock { $0.take() }?.resume()
        }
    }

    /// Holds every read of one object (streamed or whole) until released.
    final class HeldObject: ForwardingStore {
        let base: any ContainerStore
        let held = Mutex<String?>(nil)
        private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])
        private let released = Mutex(false)

        init(_ base: any ContainerStore) { self.base = base }

        private func hold(_ key: String) async {
            guard held.withLock({ $0 == key }) else { return }
            await withCheckedContinuation { continuation in
                let go = released.withLock { released in
                    if !released { waiting.withLock { $0.append(continuation) } }
                    return released
                }
                if go { continuation.resume() }
            }
        }

        func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
            await hold(key)
            return try await base.get(key, range: range)
        }

        func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
            await hold(key)
            try await base.stream(key, range: range, receive: receive)
        }

        func release() {
            released.withLock { $0 = true }
            let continuations = waiting.withLock { waiting in
                defer { waiting.removeAll() }
                return waiting
            }
            for continuation in continuations { continuation.resume() }
        }
    }

    /// The readahead is told of each block as it comes: the blocks of a later pack, in
    /// while an earlier pack's read is held, are told before it.
    @Test func readaheadIsToldOfBlocksInTheOrderTheyCome() async throws {
        let memory = InMemoryStore()
        let a = try await TestDevice(store: memory, name: "a")
        let bytes = ChunkPackingTests.random(24 << 20, seed: 45)
        try await a.write("big.bin", bytes)
        try await a.sync()
        let store = HeldObject(memory)
        let b = try await TestDevice(store: store, name: "b")
        let ino = try #require(b.inode("big.bin"))
        let fill = try #require(try await b.engine.downloads.startFill(ino))
        let packs = fill.blocks.compactMap(\.pack).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
        #expect(packs.count == 3, "the control: \(packs.count) packs")
        let first = try #require(packs.first)
        store.held.withLock { $0 = ContainerLayout.packKey(first) }

        let told = Mutex<[Int]>([])
        let readahead = Task {
            await b.engine.downloads.readAhead(fill, blocks: Array(fill.blocks.indices)) { index, fetched in
                if fetched { told.withLock { $0.append(index) } }
            }
        }
        let later = Set(fill.blocks.indices.filter { fill.blocks[$0].pack == packs[2] })
        for _ in 0..<1000 where !later.isSubset(of: told.withLock({ Set($0) })) { try await Task.sleep(for: .milliseconds(10)) }
        let early = told.withLock { $0 }
        #expect(later.isSubset(of: Set(early)), "the last pack's blocks are told while the first is held")
        #expect(!early.contains { fill.blocks[$0].pack == first })
        store.release()
        await readahead.value
        #expect(told.withLock { $0.sorted() } == Array(fill.blocks.indices))
        #expect(try await b.readBytes("big.bin") == bytes)
        for device in [a, b] { await device.shutdown() }
    }

    @Test func eachBlobOfARunIsToldBeforeTheRunEnds() async throws {
        let memory = InMemoryStore()
        let device = try await TestDevice(store: memory, name: "a")
        let store = HeldTail(memory, piece: 1000)
        let calls = SyncCalls(store: store, metadata: device.metadata, timeout: .seconds(60), reachability: StoreReachability())
        let fetcher = BlockFetcher(calls: calls, gate: TransferGate(.init(transfers: 4, bytesInFlight: 1 << 20), congestion: nil))

        // Three blobs side by side in a pack; the last one ends in the held piece.
        let blobs: [[UInt8]] = [Array(repeating: 1, count: 1500), Array(repeating: 2, count: 2500), Array(repeating: 3, count: 1200)]
        try await memory.put(ContainerLayout.packKey("p"), Array(blobs.joined()))
        var offset: Int64 = 0
        let references = blobs.map { blob in
            defer { offset += Int64(blob.count) }
            return BlockReference(hash: calls.codec.name(of: blob), length: Int64(blob.count), pack: "p", offset: offset)
        }
        let path = try TemporaryDirectories.make("neighbours") + "/cache"
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        defer { close(fd) }
        var at: Int64 = 0
        let neighbours = references.map { reference in
            defer { at += reference.length }
            return (block: reference, fd: fd, offset: at, what: "test")
        }

        let told = Mutex<[Int: SyncError?]>([:])
        let fetch = Task {
            try await fetcher.fetchNeighbours(neighbours) { index, failure in told.withLock { $0[index] = failure } }
        }
        while !store.isHoldingTail { try await Task.sleep(for: .milliseconds(10)) }
        // The last piece (from byte 5,000) is held: the first two blobs (to byte 4,000) are
        // in and told, the third is not.
        let early = told.withLock { $0 }
        #expect(early.keys.sorted() == [0, 1])
        #expect(early.values.allSatisfy { $0 == nil })
        // The gate counts what a stream holds at once (its largest blob), not the run.
        #expect(fetcher.gate.snapshot.runningBytes == 2500)
        store.release()
        try await fetch.value
        #expect(told.withLock { $0.keys.sorted() } == [0, 1, 2])
        #expect(fetcher.gate.snapshot.doneBytes == 5200, "the bytes it moved")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(blobs.joined()))
    }
}
