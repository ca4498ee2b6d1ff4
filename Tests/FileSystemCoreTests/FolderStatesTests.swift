@testable import CloudFileSystem
import ItemModel
import Testing

/// A folder's conflict marks, as a file manager's emblems show them (`states`): both the
/// original and its copies, found without comparing every pair of names.
@Suite struct FolderStatesTests {
    @Test func originalsAndCopiesAreMarked() {
        let report = ByteString("report.txt")
        let copy = ItemName.conflictCopy(of: report, device: "laptop", date: "2026-11-22 101500")
        let second = ItemName.numbered(copy, 2)
        let bashrc = ByteString(".bashrc")
        let dotCopy = ItemName.conflictCopy(of: bashrc, device: "d", date: "2026-11-22 101500")
        let orphan = ItemName.conflictCopy(of: ByteString("gone.md"), device: "d", date: "2026-11-22 101500")
        let names = [report, copy, ByteString("other.txt"), second, bashrc, dotCopy, orphan, ByteString("report.md")]
        let (originals, copies) = FileSystemCore.conflictPairs(names)
        #expect(originals == [0, 4])
        #expect(copies == [1, 3, 5])
    }

    @Test func aCopyWhoseStemWasShortenedIsFoundToo() {
        let long = ByteString(String(repeating: "é", count: 120) + ".md")
        let copy = ItemName.conflictCopy(of: long, device: "device", date: "2026-11-22 101500")
        let (originals, copies) = FileSystemCore.conflictPairs([ByteString("a"), copy, long])
        #expect(originals == [2])
        #expect(copies == [1])
    }

    @Test func tenThousandNamesWithoutCopiesHaveNoMarks() {
        let names = (0..<10_000).map { ByteString("file \($0).txt") }
        let (originals, copies) = FileSystemCore.conflictPairs(names)
        #expect(originals.isEmpty && copies.isEmpty)
    }
}
