import ItemModel
@testable import SyncEngine
import Testing

/// Which files are cut fine (CONTAINER-FORMAT.md, "Fine chunks"): the decision alone, on
/// sizes no test writes (the files that do are `SpliceRecordTests`').
@Suite struct FileCuttingsTests {
    static let cuttings = try! FileCuttings(info: ContainerInfo(id: "x", created: 0), cipher: nil)
    static let database = FileCuttings.sqliteHeader + [1, 2, 3]
    static let fineList = [BlockReference(hash: String(repeating: "a", count: 64), length: 40_000), BlockReference(hash: String(repeating: "b", count: 64), length: 30_000)]
    static let coarseList = [BlockReference(hash: String(repeating: "a", count: 64), length: 256 << 10), BlockReference(hash: String(repeating: "b", count: 64), length: 768 << 10)]

    func isFine(size: Int64, head: [UInt8] = [], committed: [BlockReference] = [], inPlace: Bool = false, format: Int = 5) -> Bool {
        Self.cuttings.cutting(size: size, head: head, committed: committed, editedInPlace: inPlace, format: format) == Self.cuttings.fine
    }

    @Test func whatIsCutFine() throws {
        #expect(Self.cuttings.fine != nil)
        #expect(isFine(size: 8 << 20, head: Self.database), "a database")
        #expect(isFine(size: 8 << 20, inPlace: true), "a file written inside")
        #expect(isFine(size: 8 << 20, committed: Self.fineList), "a file cut fine stays so")
        #expect(!isFine(size: 8 << 20), "the control: another file")
        #expect(!isFine(size: 8 << 20, committed: Self.coarseList), "a list cut coarse")
        #expect(!isFine(size: 8 << 20, head: Self.database, format: 4), "format 4 knows no splice")
        #expect(!isFine(size: (1 << 30) + 1, head: Self.database), "past 1 GiB")
        #expect(isFine(size: (3 << 29), committed: Self.fineList), "a fine file growing past 1 GiB stays fine")
        #expect(!isFine(size: (2 << 30) + 1, committed: Self.fineList), "past 2 GiB")
        #expect(Self.cuttings.isFine(Self.fineList) && !Self.cuttings.isFine(Self.coarseList) && !Self.cuttings.isFine([Self.fineList[0]]))
    }

    /// A container of small blocks has chunks small already: nothing is cut otherwise.
    @Test func smallBlocksHaveNoFineCutting() throws {
        let small = try FileCuttings(info: ContainerInfo(id: "x", blockSize: 256 << 10, created: 0), cipher: nil)
        #expect(small.fine == nil)
        #expect(small.cutting(size: 8 << 20, head: Self.database, committed: [], editedInPlace: true, format: 5) == small.coarse)
    }
}
