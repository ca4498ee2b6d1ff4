@testable import CloudFileSystem
import Foundation
import Inodes
import ItemModel
import SyncEngine
import Testing

/// The kernel's lookups and the open handles decide when an unlinked item's content and
/// row may go: only when neither holds it any more, whichever ends last.
@Suite struct HandleTableTests {
    func openNull(_ table: HandleTable, _ ino: Inode, writable: Bool = false) -> UInt64 {
        let fd = open("/dev/null", writable ? O_WRONLY : O_RDONLY)
        return table.open(OpenFile(ino: ino, fd: fd, writable: writable, append: false)).handle
    }

    @Test func anUnlinkedItemIsPurgedWhenTheLastLookupIsForgotten() {
        let table = HandleTable()
        table.addLookup(7)
        table.addLookup(7)
        table.markUnlinked(7)
        #expect(table.isReferenced(7))
        #expect(!table.forget(7, 1))
        #expect(table.isReferenced(7))
        #expect(table.forget(7, 1))
        #expect(!table.isReferenced(7))
        // Forgetting more than was looked up (the kernel's count is the truth) is not an error.
        #expect(!table.forget(7, 5))
    }

    @Test func anUnlinkedOpenItemIsPurgedAtTheLaterOfCloseAndForget() throws {
        let table = HandleTable()
        table.addLookup(8)
        let handle = openNull(table, 8, writable: true)
        table.markUnlinked(8)
        #expect(!table.forget(8, 1))
        #expect(table.isReferenced(8))
        let closed = try #require(table.close(handle))
        #expect(closed.lastWriter)
        #expect(closed.purge)
        #expect(!table.isReferenced(8))

        table.addLookup(9)
        let other = openNull(table, 9)
        table.markUnlinked(9)
        #expect(table.close(other)?.purge == false)
        #expect(table.isReferenced(9))
        #expect(table.forget(9, 1))
    }

    /// Lookups alone keep no per-inode record: a write generation survives only while the
    /// item is open or has a change not yet committed.
    @Test func writeGenerationsLastWhileAChangeIsPending() throws {
        let table = HandleTable()
        table.addLookup(10)
        let handle = openNull(table, 10, writable: true)
        #expect(table.noteWrite(10, .unknown))
        #expect(!table.noteWrite(10, .unknown))
        let generation = table.writeGeneration(10)
        #expect(generation == 2)
        _ = table.close(handle)
        #expect(table.writeGeneration(10) == generation)
        #expect(table.commitContent(10, generation: generation, blocks: []))
        #expect(table.writeGeneration(10) == 0)
        #expect(table.isReferenced(10))
    }

    /// A file is "being written" (not published) only for writes made while its current
    /// writers have it open: a program that opens an already written file for writing (a
    /// database, a logger) has written nothing yet, and holds nothing back.
    @Test func onlyTheCurrentWritersWritesAreUnpublished() throws {
        let table = HandleTable()
        let first = openNull(table, 11, writable: true)
        _ = table.noteWrite(11, .unknown)
        #expect(table.isBeingWritten(11))
        table.noteFsync(11)
        #expect(!table.isBeingWritten(11))
        _ = table.noteWrite(11, .unknown)
        #expect(table.isBeingWritten(11))
        _ = table.close(first)
        #expect(!table.isBeingWritten(11))
        // Written with no handle (a truncate by path), then opened for writing.
        _ = table.noteWrite(11, .unknown)
        let second = openNull(table, 11, writable: true)
        #expect(table.hasWriters(11))
        #expect(!table.isBeingWritten(11))
        _ = table.noteWrite(11, .unknown)
        #expect(table.isBeingWritten(11))
        _ = table.close(second)
        // An open that truncates (or creates) has written: `> file` of a slow command is
        // not published empty.
        _ = table.noteWrite(11, .unknown)
        let truncating = table.open(OpenFile(ino: 11, fd: open("/dev/null", O_WRONLY), writable: true, append: false), wroteOnOpen: true).handle
        #expect(table.isBeingWritten(11))
        _ = table.close(truncating)
    }

    /// Writes are followed from a commit of more than the two leading blocks: ranges and
    /// truncates add up; a change of unknown extent, content the engine replaced (a merge)
    /// or discarded, and a later commit that could not count as clean each end it.
    @Test func writesAreFollowedFromACommitUntilSomethingUnknownHappens() throws {
        let table = HandleTable()
        let blocks = (1...3).map { BlockReference(hash: String(repeating: "\($0)", count: 64), length: 1 << 20) }
        for end in ["unknown", "replaced", "discarded", "unclean"] {
            #expect(table.commitContent(12, generation: table.writeGeneration(12), blocks: blocks))
            #expect(table.writtenRanges(12) == WrittenRanges(base: WrittenRanges.base(of: blocks), length: 3 << 20))
            _ = table.noteWrite(12, .written(100..<200))
            _ = table.noteWrite(12, .written(150..<300))
            _ = table.noteWrite(12, .truncated(2 << 20))
            let followed = try #require(table.writtenRanges(12))
            #expect(followed.written == [100..<300] && followed.shortest == 2 << 20)
            switch end {
            case "unknown": _ = table.noteWrite(12, .unknown)
            case "replaced": table.contentReplaced(12)
            case "discarded": table.contentDiscarded(12)
            default: #expect(!table.commitContent(12, generation: table.writeGeneration(12) - 1, blocks: blocks))
            }
            #expect(table.writtenRanges(12) == nil, "\(end)")
        }
        // Writes scattered past `rangeLimit` ranges end it too.
        #expect(table.commitContent(12, generation: table.writeGeneration(12), blocks: blocks))
        for index in 0...Int64(WrittenRanges.rangeLimit) { _ = table.noteWrite(12, .written(index * 10..<index * 10 + 1)) }
        #expect(table.writtenRanges(12) == nil, "scattered")
        #expect(table.commitContent(12, generation: table.writeGeneration(12), blocks: Array(blocks.prefix(2))))
        #expect(table.writtenRanges(12) == nil, "two blocks are read whole")
    }
}
