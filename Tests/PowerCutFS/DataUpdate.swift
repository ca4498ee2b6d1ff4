/// What one data sync of a regular file writes to its durable copy (`BACKING/data/<ino>`):
/// cut it to `floor` if the file shrank below its durable size since the last sync (so a
/// shrink followed by a regrow reads zeros), set its size, then write the changed ranges.
struct DataUpdate: Sendable {
    var ino: UInt64
    var floor: UInt64?
    var size: UInt64
    var ranges: [(offset: UInt64, bytes: [UInt8])]

    var byteCount: Int { ranges.reduce(0) { $0 + $1.bytes.count } }

    func encode(into writer: inout ByteWriter) {
        writer.u64(ino)
        writer.u8(floor == nil ? 0 : 1)
        writer.u64(floor ?? 0)
        writer.u64(size)
        writer.u64(UInt64(ranges.count))
        for range in ranges {
            writer.u64(range.offset)
            writer.blob(range.bytes)
        }
    }

    static func decode(_ reader: inout ByteReader) throws(ByteReader.Truncated) -> DataUpdate {
        let ino = try reader.u64()
        let hasFloor = try reader.u8() != 0
        let floor = try reader.u64()
        let size = try reader.u64()
        let count = try reader.u64()
        var ranges: [(offset: UInt64, bytes: [UInt8])] = []
        for _ in 0..<count {
            let offset = try reader.u64()
            ranges.append((offset, try reader.blob()))
        }
        return DataUpdate(ino: ino, floor: hasFloor ? floor : nil, size: size, ranges: ranges)
    }
}
