import ContainerStore
import ContentCache
import Foundation
import ItemModel
import MetadataStore

/// Fetches one content block, checks it against its hash and writes it at its offset in a
/// cache file: the one way content enters this device (downloads, streaming reads, pinned
/// prefetch, version restore). Hashing a 4 MiB block takes milliseconds of CPU, so hashing
/// and writing run on `OffloadedWork`'s threads, never on the cooperative pool (which must
/// stay free to answer the kernel).
struct BlockFetcher: Sendable {
    let calls: SyncCalls
    let gate: TransferGate

    /// `what` names the content in errors ("notes.txt (id)", "a version of notes.txt").
    /// `urgent`: a reader waits for this block (it goes before background transfers). The
    /// gate's slot is held until the block is written: it bounds the bytes in memory.
    func fetch(_ block: BlockReference, into fd: Int32, at offset: Int64, of what: String, urgent: Bool = false) async throws(SyncError) {
        if let inline = block.inline {
            // Carried in the record: no transfer, but checked as any block is.
            let codec = calls.codec
            return try await OffloadedWork.run { () throws(SyncError) in try Self.write(Array(inline), of: block, into: fd, at: offset, what: what, codec) }
        }
        do {
            try await fetch(at: block, block, into: fd, at: offset, of: what, urgent: urgent)
        } catch where error.code == .notFound && block.pack != nil {
            // A collector moved the blob out of its pack: a fill or a list of versions read
            // before the move was applied here names the old place; the database, the new.
            let key = ContainerLayout.location(of: block).key
            let moved = try await calls.read("cannot look up \(what)") { db in
                try BlobRelocations.place(of: block.hash, length: block.length, besides: key, db)
            }
            guard let moved else { throw error }
            try await fetch(at: moved, block, into: fd, at: offset, of: what, urgent: urgent)
        }
    }

    private func fetch(
        at place: BlockReference, _ block: BlockReference, into fd: Int32, at offset: Int64, of what: String, urgent: Bool
    ) async throws(SyncError) {
        let (key, range) = ContainerLayout.location(of: place)
        let codec = calls.codec
        try await gate.run(bytes: block.length, urgent: urgent) { () throws(SyncError) in
            let bytes = try await calls.store("cannot download \(what)") { store throws(StoreError) in try await store.get(key, range: range) }
            try await OffloadedWork.run { () throws(SyncError) in try Self.write(bytes, of: block, into: fd, at: offset, what: what, codec) }
        }
    }

    /// A blob of a run of neighbours, and where its bytes go.
    typealias Neighbour = (block: BlockReference, fd: Int32, offset: Int64, what: String)

    /// Fetches neighbouring blobs of one pack with a single ranged `GET` (a large file's
    /// chunks in order, small files packed side by side), each checked and written as soon
    /// as its bytes are in and `arrived` told (its failure, or nil): a reader of the first
    /// goes on while the rest is on the way. The gate counts the largest blob in memory, not
    /// the run: that is what is held at once. A blob that does not match its hash fails
    /// alone; a failed transfer throws, and the blobs not yet told are the caller's.
    func fetchNeighbours(
        _ blobs: [Neighbour], urgent: Bool = false, arrived: @escaping @Sendable (Int, SyncError?) async -> Void
    ) async throws(SyncError) {
        let places = blobs.map { ContainerLayout.location(of: $0.block) }
        guard let key = places.first?.key, let start = places.compactMap({ $0.range?.lowerBound }).min(),
              let end = places.compactMap({ $0.range?.upperBound }).max(), places.allSatisfy({ $0.key == key && $0.range != nil })
        else { throw SyncError(code: .invalid, message: "neighbouring blobs must be ranges of one pack") }
        let ranges = places.map { $0.range! }
        let codec = calls.codec
        let largest = ranges.map { $0.upperBound - $0.lowerBound }.max() ?? 0
        try await gate.run(bytes: largest, moving: end - start, urgent: urgent) { () throws(SyncError) in
            try await calls.store("cannot download \(blobs[0].what)") { store throws(StoreError) in
                var run = RunAssembler(ranges, from: start)
                try await store.stream(key, range: start ..< end) { piece in
                    for (index, bytes) in run.take(piece) {
                        let blob = blobs[index]
                        let failure = await OffloadedWork.run { () -> SyncError? in
                            do throws(SyncError) {
                                try Self.write(bytes, of: blob.block, into: blob.fd, at: blob.offset, what: blob.what, codec)
                                return nil
                            } catch {
                                return error
                            }
                        }
                        await arrived(index, failure)
                    }
                }
                guard run.isComplete else {
                    throw StoreError(code: .corrupt, message: "\(key) ended at byte \(run.position) of a range up to \(end)")
                }
            }
        }
    }

    /// Writes the block's bytes at `offset` if they are what the record names (a packed
    /// blob of an encrypted container opened first).
    private static func write(
        _ fetched: [UInt8], of block: BlockReference, into fd: Int32, at offset: Int64, what: String, _ codec: ContentCodec
    ) throws(SyncError) {
        let bytes = try codec.verified(fetched, of: block, what: what)
        do throws(SystemError) {
            try Syscall.writeAll(fd: fd, bytes, at: offset)
        } catch {
            throw SyncError.cacheWrite("cannot write \(what) to the cache", error)
        }
    }
}
