import Glibc
import ItemModel
import Synchronization

/// Programs that only look at files: thumbnailers, indexers and type sniffers, known by
/// the process behind a request (the kernel gives the calling thread's id; its process's
/// executable or name says what it is). Their reads fetch only what they read: no
/// readahead, no folder readahead, no access time for the cache budget, at most
/// `readLimit` of a file that is not here, and a thumbnailer none of it (`FileSystemCore`).
public struct Lookers: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case thumbnailer, indexer, sniffer
    }

    /// By executable name (the kernel's process name keeps its first 15 bytes).
    public let programs: [String: Kind]
    /// How much of a file that is not here a sniffer or an indexer reads: its leading
    /// block (`ContainerInfo`), where a file's type and its tags are (EXIF, ID3).
    public var readLimit: Int64 = ContainerInfo.leadingBlockSize

    public init(programs: [String: Kind]) {
        self.programs = programs
    }

    /// GNOME's, KDE's and Xfce's thumbnailers, indexers and `file`.
    public static let defaults = Lookers(programs: [
        "gdk-pixbuf-thumbnailer": .thumbnailer, "evince-thumbnailer": .thumbnailer, "ffmpegthumbnailer": .thumbnailer,
        "totem-video-thumbnailer": .thumbnailer, "gnome-thumbnail-font": .thumbnailer, "heif-thumbnailer": .thumbnailer,
        "gsf-office-thumbnailer": .thumbnailer, "tumblerd": .thumbnailer, "librsvg-thumbnailer": .thumbnailer,
        "tracker-extract-3": .indexer, "tracker-miner-fs-3": .indexer, "localsearch-3": .indexer,
        "localsearch-extractor-3": .indexer, "baloo_file": .indexer, "baloo_file_extractor": .indexer,
        "file": .sniffer,
    ])

    /// The defaults with `KIND:NAME` entries added (comma-separated); `KIND:-NAME` removes a name.
    public static func parse(_ text: String) throws(LookersError) -> Lookers {
        var programs = defaults.programs
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, let kind = Kind(rawValue: parts[0]), !parts[1].isEmpty else {
                throw LookersError(entry: entry)
            }
            if parts[1].hasPrefix("-") { programs[String(parts[1].dropFirst())] = nil } else { programs[parts[1]] = kind }
        }
        // A list of its own answers (not the defaults' kept answers).
        return Lookers(programs: programs)
    }

    /// What the process of thread `tid` is, if it only looks; nil for every other program,
    /// and for a thread the daemon cannot see (0: outside its pid namespace). A program's
    /// opens come in runs: the answer is kept for a second, so a run reads /proc once.
    public func kind(of tid: Int32) -> Kind? {
        guard tid > 0, !programs.isEmpty else { return nil }
        let now = ContinuousClock.now
        if let known = recent.answer(for: tid, at: now) { return known }
        let kind = lookUp(tid)
        recent.note(kind, for: tid, at: now)
        return kind
    }

    private let recent = RecentAnswers()

    private func lookUp(_ tid: Int32) -> Kind? {
        guard let process = Self.processID(of: tid) else { return nil }
        if let exe = Self.readLink("/proc/\(process)/exe"), let kind = programs[String(exe.split(separator: "/").last ?? "")] {
            return kind
        }
        guard let comm = Self.readSmall("/proc/\(process)/comm")?.trimmingCharacters(in: .newlines), !comm.isEmpty else { return nil }
        return programs[comm] ?? programs.first { $0.key.utf8.count > 15 && $0.key.utf8.prefix(15).elementsEqual(comm.utf8) }?.value
    }

    /// The process a thread belongs to (a thumbnailer reads on a worker thread).
    private static func processID(of tid: Int32) -> Int32? {
        guard let status = readSmall("/proc/\(tid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Tgid:") {
            return Int32(line.dropFirst(5).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    private static func readSmall(_ path: String) -> String? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(path, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The last second's answers by thread: a thread id is not reused within a second (the
/// kernel hands ids out in turn up to `pid_max` before it wraps).
private final class RecentAnswers: Sendable {
    private struct Answer {
        var kind: Lookers.Kind?
        var at: ContinuousClock.Instant
    }

    private let answers = Mutex<[Int32: Answer]>([:])
    private static let lifetime = Duration.seconds(1)

    /// `.some(nil)`: known to be no looker.
    func answer(for tid: Int32, at now: ContinuousClock.Instant) -> Lookers.Kind?? {
        answers.withLock { answers in
            guard let answer = answers[tid], now - answer.at < Self.lifetime else { return nil }
            return .some(answer.kind)
        }
    }

    func note(_ kind: Lookers.Kind?, for tid: Int32, at now: ContinuousClock.Instant) {
        answers.withLock { answers in
            if answers.count >= 4096 { answers = answers.filter { now - $0.value.at < Self.lifetime } }
            answers[tid] = Answer(kind: kind, at: now)
        }
    }
}

/// A `--lookers` entry that is not `KIND:NAME`.
public struct LookersError: Error, CustomStringConvertible {
    public var entry: String
    public var description: String {
        "lookers: \"\(entry)\" is not KIND:NAME (KIND: \(Lookers.Kind.allCases.map(\.rawValue).joined(separator: ", ")))"
    }
}
