/// The committed namespace and metadata: every inode reachable from the root at the last
/// journal commit, and the next inode number (never reused, so a data file is never taken
/// for another inode's).
struct DurableImage {
    static let magic: UInt32 = 0x4D43_5050 // "PPCM"
    static let rootIno: UInt64 = 1

    var nextIno: UInt64
    var nodes: [UInt64: NodeMetadata]

    /// The regular files, whose content lives in `BACKING/data/<ino>`.
    var regularFiles: Set<UInt64> {
        Set(nodes.compactMap { $0.value.isRegular ? $0.key : nil })
    }

    func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 128 * nodes.count + 16)
        writer.u32(Self.magic)
        writer.u64(nextIno)
        writer.u64(UInt64(nodes.count))
        for (ino, node) in nodes {
            writer.u64(ino)
            node.encode(into: &writer)
        }
        return writer.bytes
    }

    /// Nil if `bytes` is not a whole image (a damaged or foreign file).
    static func decode(_ bytes: [UInt8]) -> DurableImage? {
        var reader = ByteReader(bytes)
        do {
            guard try reader.u32() == magic else { return nil }
            let nextIno = try reader.u64()
            var nodes: [UInt64: NodeMetadata] = [:]
            for _ in 0..<(try reader.u64()) {
                let ino = try reader.u64()
                nodes[ino] = try NodeMetadata.decode(&reader)
            }
            guard reader.isAtEnd, nodes[rootIno]?.isDirectory == true else { return nil }
            return DurableImage(nextIno: nextIno, nodes: nodes)
        } catch {
            return nil
        }
    }
}
