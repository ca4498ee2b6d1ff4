import Foundation

/// Checks what comes from the store before it touches local state: other devices'
/// records are input, not trusted. Invalid operations are refused one by one (and
/// logged by the caller) so one bad item cannot block the rest of the container.
public enum RecordValidator {
    /// Largest size accepted for an item (16 TiB), beyond any real file here.
    public static let maxSize: Int64 = 1 << 44
    public static let maxTargetLength = 4095
    /// Times a reader accepts: about 146 years either side of 1970 (`Int64.min / 2 ... Int64.max / 2`).
    public static let mtimes: ClosedRange<Int64> = (Int64.min / 2)...(Int64.max / 2)

    /// `formats`: what this device reads (`ContainerInfo.readableFormats`).
    public static func validate(_ record: JournalRecord, formats: ClosedRange<Int> = ContainerInfo.readableFormats(newest: ContainerInfo.currentFormat)) throws(RecordError) {
        guard formats.contains(record.format) else {
            throw RecordError(code: .unsupportedFormat, message: "journal record format \(record.format) is not supported (this ubiqfs reads format \(formats.upperBound)); upgrade ubiqfs")
        }
    }

    /// The item as it may be applied: permissions sanitised (no setuid/setgid),
    /// or an error saying why it is refused.
    public static func sanitized(_ item: ItemSnapshot) throws(RecordError) -> ItemSnapshot {
        var item = item
        func refuse(_ why: String) -> RecordError {
            RecordError(code: .invalid, message: "item \(item.id.rawValue.prefix(40)) refused: \(why)")
        }
        guard item.id.isWellFormed, item.id != .root else { throw refuse("malformed id") }
        guard item.parent.isWellFormed, item.parent != item.id else { throw refuse("malformed parent") }
        guard ItemName.isValid(item.name) else { throw refuse("name not allowed on Linux") }
        guard item.size >= 0, item.size <= maxSize else { throw refuse("size \(item.size) out of range") }
        guard mtimes.contains(item.mtime) else { throw refuse("mtime out of range") }
        item.mode &= 0o1777
        switch item.kind {
        case .file:
            // A record's splices are expanded before this (`BlockSplice`); none elsewhere.
            guard item.splice == nil else { throw refuse("a splice where a list of blocks belongs") }
            let blocks = item.blocks ?? []
            guard blocks.allSatisfy(\.isWellFormed) else { throw refuse("malformed block reference") }
            guard let total = total(blocks) else { throw refuse("block lengths overflow") }
            guard total == item.size else { throw refuse("block lengths do not add up to the size") }
            item.blocks = blocks
            item.target = nil
            item.thumbnails = kept(item.thumbnails)
        case .directory:
            item.blocks = nil
            item.target = nil
            item.size = 0
        case .symlink:
            guard let target = item.target, !target.bytes.isEmpty, target.bytes.count <= maxTargetLength, !target.bytes.contains(0) else {
                throw refuse("symlink target missing or invalid")
            }
            item.blocks = nil
            item.size = Int64(target.bytes.count)
        case .fifo, .socket, .characterDevice, .blockDevice:
            item.blocks = nil
            item.target = nil
            item.size = 0
        case .link:
            guard let of = item.of, of.isWellFormed, of != .root, of != item.id else { throw refuse("link to a malformed id") }
            // A name only: what it names has the attributes.
            return .link(id: item.id, parent: item.parent, name: item.name, of: of)
        }
        item.of = nil
        item.splice = nil
        if item.kind != .file { item.thumbnails = nil }
        if !item.kind.isDevice { item.rdev = nil }
        if let xattrs = item.xattrs { item.xattrs = kept(xattrs) }
        return item
    }

    /// The thumbnails a reader keeps: acceptable ones, the first of each size; the others
    /// are dropped silently (the item is not refused).
    static func kept(_ thumbnails: [Thumbnail]?) -> [Thumbnail]? {
        guard let thumbnails else { return nil }
        var sizes: Set<Int> = []
        let kept = thumbnails.filter { $0.isAcceptable && sizes.insert($0.size).inserted }
        return kept.isEmpty ? nil : kept
    }

    /// The root's attributes as they may be applied: the same rules as a folder's.
    public static func sanitized(_ root: RootAttributes) throws(RecordError) -> RootAttributes {
        guard mtimes.contains(root.mtime) else {
            throw RecordError(code: .invalid, message: "root attributes refused: mtime out of range")
        }
        return RootAttributes(mode: root.mode & 0o1777, mtime: root.mtime, xattrs: root.xattrs.map(kept))
    }

    /// What a local setxattr could have stored; past the total, the names that sort last
    /// go, so every device keeps the same set.
    static func kept(_ xattrs: [String: Data]) -> [String: Data] {
        var kept: [String: Data] = [:]
        var total = 0
        for (name, value) in xattrs.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            // Stored in NFC, as local names are: names differing only in normalisation are one.
            let key = ItemSnapshot.xattrName(name)
            guard key.hasPrefix("user.") && !key.hasPrefix("user.ubiqfs.") && key.utf8.count <= 255 && value.count <= ItemSnapshot.maxXattrValue else { continue }
            guard total + key.utf8.count + value.count <= ItemSnapshot.maxXattrTotal else { break }
            total += key.utf8.count + value.count
            kept[key] = value
        }
        return kept
    }
}
