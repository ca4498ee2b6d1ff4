import ContainerStore
import ContentCache
import Foundation
import ItemModel

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
            return try await OffloadedWork.run { () throws(SyncError) in try Self.write(Array(inline), of: block, into: fd, at: offset, what: what) }
        }
        let (key, range) = ContainerLayout.location(of: block)
        try await gate.run(bytes: block.length, urgent: urgent) { () throws(SyncError) in
            let bytes = try await calls.store("cannot download \(what)") { store throws(StoreError) in try await store.get(key, range: range) }
            try await OffloadedWork.run { () throws(SyncError) in try Self.write(bytes, of: block, into: fd, at: offset, what: what) }
        }
    }

    /// Writes the block's bytes at `offset` if they are what the record names.
    private static func write(_ bytes: [UInt8], of block: BlockReference, into fd: Int32, at offset: Int64, what: String) throws(SyncError) {
        guard Int64(bytes.count) == block.length, ContentHasher.sha256Hex(bytes) == block.hash else {
            throw SyncError(code: .corrupt, message: "block \(block.hash) of \(what) does not match its hash; not served")
        }
        do throws(SystemError) {
            try Syscall.writeAll(fd: fd, bytes, at: offset)
        } catch {
            throw SyncError.cacheWrite("cannot write \(what) to the cache", error)
        }
    }
}
