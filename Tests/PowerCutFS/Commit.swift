/// One journal commit, the unit that becomes durable atomically: the whole metadata image
/// at the moment of an fsync, and the data of the file that fsync was for (every dirty
/// file's on a clean unmount).
struct Commit: Sendable {
    var image: [UInt8]
    var updates: [DataUpdate]

    var byteCount: Int { image.count + updates.reduce(0) { $0 + $1.byteCount } }

    func encode(into writer: inout ByteWriter) {
        writer.blob(image)
        writer.u64(UInt64(updates.count))
        for update in updates {
            update.encode(into: &writer)
        }
    }

    static func decode(_ reader: inout ByteReader) throws(ByteReader.Truncated) -> Commit {
        let image = try reader.blob()
        var updates: [DataUpdate] = []
        for _ in 0..<(try reader.u64()) {
            updates.append(try DataUpdate.decode(&reader))
        }
        return Commit(image: image, updates: updates)
    }
}
