internal import Glibc

/// The durable state on the real disk, so that `kill -9` of the simulator is the power cut:
/// what is not here is lost. Layout of BACKING:
///
/// - `meta`: the checkpointed metadata image (`DurableImage`), replaced atomically;
/// - `data/<ino>`: each regular file's checkpointed content;
/// - `journal`: commits since the checkpoint, appended and fdatasync'd one record per guest
///   fsync (`magic, length, Commit, end magic`). A record cut short by a kill is ignored:
///   that fsync had not returned. Folded into the checkpoint at start and past 64 MiB;
/// - `lock`: flock'd while a simulator serves this folder.
///
/// One record per fsync costs one write and one fdatasync, so SQLite's frequent syncs stay
/// cheap; the checkpoint replays records in order, which is idempotent, so a kill during
/// compaction loses nothing.
final class Backing {
    static let recordMagic: UInt32 = 0x5455_4350 // "PCUT"
    static let recordEnd: UInt32 = 0x444E_4550 // "PEND"
    static let compactionThreshold = 64 << 20
    static let knownNames: Set<String> = ["meta", "meta.tmp", "journal", "data", "lock"]

    let path: String
    private let journalPath: String
    private let lockFD: Int32
    private let journalFD: Int32
    private var journalSize = 0
    /// Commits appended since start, and their bytes (for --verbose).
    private(set) var commits = 0
    private(set) var committedBytes = 0

    /// Opens BACKING (made empty if missing), takes its lock and folds the journal into the
    /// checkpoint. A file that is not a folder, a folder of someone else's files, a damaged
    /// image or a second simulator on the same folder fail here with a sentence.
    init(path: String) throws(BackingError) {
        self.path = path
        journalPath = path + "/journal"
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .system("cannot create the backing folder", path)
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw .system("cannot stat the backing folder", path) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw BackingError("the backing \(path) is not a folder") }
        guard access(path, W_OK) == 0 else { throw .system("cannot write in the backing folder", path) }
        let foreign = try DiskIO.list(path).filter { !Self.knownNames.contains($0) }.sorted()
        guard foreign.isEmpty else {
            throw BackingError("the backing folder \(path) holds files that are not powercutfs's (\(foreign.prefix(3).joined(separator: ", "))); give an empty or new folder")
        }
        lockFD = open(path + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw .system("cannot open", path + "/lock") }
        guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
            close(lockFD)
            throw BackingError("another powercutfs is serving the backing folder \(path)")
        }
        if mkdir(path + "/data", 0o700) != 0 && errno != EEXIST {
            throw .system("cannot create", path + "/data")
        }
        journalFD = open(journalPath, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard journalFD >= 0 else { throw .system("cannot open", journalPath) }
        try checkpoint()
    }

    /// The durable state: the image (nil for a new backing) and each regular file's content
    /// (a file without a data file was never synced: empty).
    func load() throws(BackingError) -> (image: DurableImage?, contents: [UInt64: [UInt8]]) {
        guard let bytes = try DiskIO.read(path + "/meta") else { return (nil, [:]) }
        guard let image = DurableImage.decode(bytes) else {
            throw BackingError("\(path)/meta is damaged or not a powercutfs image")
        }
        var contents: [UInt64: [UInt8]] = [:]
        for ino in image.regularFiles {
            contents[ino] = try DiskIO.read(dataPath(ino)) ?? []
        }
        return (image, contents)
    }

    /// Makes `commit` durable: one journal record, fdatasync'd. Returns once it is on disk.
    func append(_ commit: Commit) throws(BackingError) {
        var writer = ByteWriter(capacity: commit.byteCount + 128)
        writer.u32(Self.recordMagic)
        let lengthOffset = writer.bytes.count
        writer.u64(0)
        commit.encode(into: &writer)
        writer.patchU64(UInt64(writer.bytes.count - lengthOffset - 8), at: lengthOffset)
        writer.u32(Self.recordEnd)
        try DiskIO.write(journalFD, writer.bytes, path: journalPath)
        while fdatasync(journalFD) != 0 {
            guard errno == EINTR else { throw .system("cannot fdatasync", journalPath) }
        }
        journalSize += writer.bytes.count
        commits += 1
        committedBytes += writer.bytes.count
        if journalSize > Self.compactionThreshold {
            try checkpoint()
        }
    }

    private func dataPath(_ ino: UInt64) -> String {
        path + "/data/\(ino)"
    }

    /// Folds the journal into `meta` and `data/`: every whole record's data updates applied in
    /// order, the last record's image written, data files of inodes no longer reachable
    /// removed, then the journal emptied. Replaying records is idempotent, so a kill at any
    /// step leaves a journal that gives the same result next time.
    private func checkpoint() throws(BackingError) {
        let journal = try DiskIO.read(journalPath) ?? []
        var opened: [UInt64: Int32] = [:]
        defer { opened.values.forEach { close($0) } }
        var lastImage: [UInt8]?
        var offset = 0
        while journal.count - offset >= 12 {
            var header = ByteReader(journal, from: offset)
            let length: UInt64
            do {
                guard try header.u32() == Self.recordMagic else { throw ByteReader.Truncated() }
                length = try header.u64()
            } catch {
                throw BackingError("\(journalPath) is damaged at byte \(offset)")
            }
            let payloadStart = offset + 12
            guard UInt64(journal.count - payloadStart) >= length + 4 else { break } // cut short by a kill
            let payloadEnd = payloadStart + Int(length)
            var trailer = ByteReader(journal, from: payloadEnd)
            var reader = ByteReader(journal, from: payloadStart, to: payloadEnd)
            let commit: Commit
            do {
                guard try trailer.u32() == Self.recordEnd else { throw ByteReader.Truncated() }
                commit = try Commit.decode(&reader)
            } catch {
                throw BackingError("\(journalPath) is damaged in the record at byte \(offset)")
            }
            for update in commit.updates {
                try apply(update, opened: &opened)
            }
            lastImage = commit.image
            offset = payloadEnd + 4
        }
        for (ino, fd) in opened {
            try DiskIO.sync(fd, path: dataPath(ino))
        }
        if !opened.isEmpty { try DiskIO.syncFolder(path + "/data") }
        if let lastImage {
            guard DurableImage.decode(lastImage) != nil else { throw BackingError("\(journalPath) holds a damaged image") }
            try DiskIO.replace(path + "/meta", with: lastImage, folder: path)
        }
        try removeUnreachableData()
        guard ftruncate(journalFD, 0) == 0 else { throw .system("cannot empty", journalPath) }
        try DiskIO.sync(journalFD, path: journalPath)
        journalSize = 0
    }

    private func apply(_ update: DataUpdate, opened: inout [UInt64: Int32]) throws(BackingError) {
        let file = dataPath(update.ino)
        let fd: Int32
        if let known = opened[update.ino] {
            fd = known
        } else {
            fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .system("cannot open", file) }
            opened[update.ino] = fd
        }
        if let floor = update.floor, ftruncate(fd, off_t(floor)) != 0 { throw .system("cannot truncate", file) }
        guard ftruncate(fd, off_t(update.size)) == 0 else { throw .system("cannot truncate", file) }
        for range in update.ranges {
            try DiskIO.write(fd, range.bytes, at: range.offset, path: file)
        }
    }

    /// Data files of inodes the checkpointed image does not reach (deleted, or unlinked while
    /// open): gone, as on a real disk after a cut.
    private func removeUnreachableData() throws(BackingError) {
        let keep: Set<UInt64>
        if let bytes = try DiskIO.read(path + "/meta") {
            guard let image = DurableImage.decode(bytes) else {
                throw BackingError("\(path)/meta is damaged or not a powercutfs image")
            }
            keep = image.regularFiles
        } else {
            keep = []
        }
        var removed = false
        for name in try DiskIO.list(path + "/data") {
            guard let ino = UInt64(name) else { continue }
            if !keep.contains(ino) {
                guard unlink(dataPath(ino)) == 0 || errno == ENOENT else { throw .system("cannot remove", dataPath(ino)) }
                removed = true
            }
        }
        if removed { try DiskIO.syncFolder(path + "/data") }
    }
}
