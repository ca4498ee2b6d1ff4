/// A regular file's bytes in the simulated page cache, and which of them are not durable
/// yet. Only the file's own fsync (`takeUpdate`) makes them durable: size and content are
/// data, as on ext4 with data=ordered and no background writeback.
struct FileContent {
    private(set) var bytes: [UInt8]
    private var dirty = DirtyRanges()
    /// The smallest size since the last data sync, if it went below the durable size.
    private var floor: Int?
    /// The size of the durable copy.
    private var durableSize: Int

    /// Content loaded from the durable copy: clean.
    init(durable: [UInt8]) {
        bytes = durable
        durableSize = durable.count
    }

    var size: Int { bytes.count }

    var isClean: Bool { dirty.isEmpty && floor == nil && bytes.count == durableSize }

    /// Up to `count` bytes from `offset` (fewer at the end of the file).
    func read(offset: Int, count: Int) -> ArraySlice<UInt8> {
        guard offset < bytes.count, count > 0 else { return [] }
        return bytes[offset..<min(bytes.count, offset + count)]
    }

    /// Writes `data` at `offset`, growing the file (with zeros in any hole) if needed.
    mutating func write(_ data: UnsafeRawBufferPointer, at offset: Int) {
        guard !data.isEmpty else { return }
        let end = offset + data.count
        if end > bytes.count { resize(to: end) }
        bytes.withUnsafeMutableBytes { target in
            UnsafeMutableRawBufferPointer(rebasing: target[offset..<end]).copyMemory(from: data)
        }
        dirty.insert(offset..<end)
    }

    /// truncate, ftruncate, O_TRUNC and fallocate's extension. Growth reads zeros: the durable
    /// copy is extended with zeros too, so grown bytes need no range of their own.
    mutating func resize(to size: Int) {
        if size < bytes.count {
            bytes.removeSubrange(size...)
            dirty.clip(to: size)
            if size < durableSize { floor = min(floor ?? size, size) }
        } else if size > bytes.count {
            bytes.append(contentsOf: repeatElement(0, count: size - bytes.count))
        }
    }

    /// What this file's fsync persists; afterwards the content is clean. Nil when clean.
    mutating func takeUpdate(ino: UInt64) -> DataUpdate? {
        guard !isClean else { return nil }
        let ranges = dirty.ranges.map { (offset: UInt64($0.lowerBound), bytes: Array(bytes[$0])) }
        let update = DataUpdate(ino: ino, floor: floor.map { UInt64($0) }, size: UInt64(bytes.count), ranges: ranges)
        dirty.removeAll()
        floor = nil
        durableSize = bytes.count
        return update
    }
}
