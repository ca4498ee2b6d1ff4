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
/// written and told as soon as its bytes are in, not when the run's last byte is.
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
        store.release()
        try await fetch.value
        #expect(told.withLock { $0.keys.sorted() } == [0, 1, 2])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(blobs.joined()))
    }
}
