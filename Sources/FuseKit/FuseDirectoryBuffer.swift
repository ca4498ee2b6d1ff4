internal import CFuse3
internal import Glibc

/// The reply to one readdir or readdirplus: add entries until one does not fit, then
/// `request.reply(directory:)`. Formats with fuse_add_direntry(_plus) into `capacity` bytes
/// (the `size` the kernel asked for).
public struct FuseDirectoryBuffer: Sendable {
    private let request: FuseRequest
    private let plus: Bool
    private var storage: [UInt8]
    private var used = 0

    /// `plus` must match the readdir call: readdirplus entries have a different layout.
    public init(request: FuseRequest, capacity: Int, plus: Bool) {
        self.request = request
        self.plus = plus
        self.storage = [UInt8](repeating: 0, count: max(0, capacity))
    }

    /// The most entries that can fit in `capacity` bytes (each at least a 24-byte dirent and
    /// an 8-byte name slot, plus a 128-byte entry_out for readdirplus): fetching more only to
    /// drop them made a listing cost quadratic work.
    public static func maxEntries(capacity: Int, plus: Bool) -> Int {
        max(1, capacity / (plus ? 160 : 32))
    }

    /// Whether nothing was added (an empty reply tells the kernel the listing ended).
    public var isEmpty: Bool { used == 0 }

    /// Adds a name without attributes; in a readdirplus reply the kernel then takes no lookup
    /// reference (use this for "." and ".."). Returns false, adding nothing, if it does not fit.
    public mutating func add(_ entry: FuseDirectoryEntry) -> Bool {
        var attributes = stat()
        attributes.st_ino = __ino_t(entry.ino.rawValue)
        attributes.st_mode = entry.mode
        guard plus else {
            return append(entry) { raw, buffer, size, name, offset in
                fuse_add_direntry(raw, buffer, size, name, &attributes, offset)
            }
        }
        var param = fuse_entry_param()
        param.attr = attributes
        return append(entry) { raw, buffer, size, name, offset in
            fuse_add_direntry_plus(raw, buffer, size, name, &param, offset)
        }
    }

    /// Adds a name with its entry for readdirplus; if it fits and `plus.attributes.ino` is not 0,
    /// the kernel takes one lookup reference, exactly as for a lookup reply. Returns false,
    /// adding nothing, if it does not fit. In a plain readdir reply the entry part is ignored.
    public mutating func add(_ entry: FuseDirectoryEntry, plus entryInfo: FuseEntry) -> Bool {
        guard plus else { return add(entry) }
        var param = entryInfo.entryParam
        return append(entry) { raw, buffer, size, name, offset in
            fuse_add_direntry_plus(raw, buffer, size, name, &param, offset)
        }
    }

    func withFilledBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0.prefix(used))) }
    }

    /// Runs one libfuse formatter on the free space; it returns the size it needs and writes only if that fits.
    private mutating func append(
        _ entry: FuseDirectoryEntry,
        _ format: (OpaquePointer, UnsafeMutablePointer<CChar>?, Int, UnsafePointer<CChar>, off_t) -> Int
    ) -> Bool {
        let raw = request.rawForFormatting
        let offset = off_t(clamping: entry.nextOffset)
        let start = used
        let needed = (entry.name + [0]).withUnsafeBufferPointer { name in
            name.withMemoryRebound(to: CChar.self) { name in
                storage.withUnsafeMutableBytes { bytes in
                    let free = bytes.count - start
                    let buffer = free > 0 ? (bytes.baseAddress! + start).assumingMemoryBound(to: CChar.self) : nil
                    return format(raw, buffer, free, name.baseAddress!, offset)
                }
            }
        }
        guard needed <= storage.count - start else { return false }
        used = start + needed
        return true
    }
}
