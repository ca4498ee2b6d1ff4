/// Rules for a name in a folder, the same as Linux's: 1 to 255 bytes, no '/' and no NUL,
/// never "." or "..". Checked for local creates and for every name read from the store.
public enum ItemName {
    public static let maxLength = 255

    public static func isValid(_ name: ByteString) -> Bool {
        let bytes = name.bytes
        if bytes.isEmpty || bytes.count > maxLength { return false }
        if bytes == [46] || bytes == [46, 46] { return false }
        return !bytes.contains(47) && !bytes.contains(0)
    }

    /// `name (conflict from DEVICE YYYY-MM-DD HHMMSS).ext`: the extension stays last so the
    /// copy still opens with the same program; kept within 255 bytes by shortening the stem.
    public static func conflictCopy(of name: ByteString, device: String, date: String) -> ByteString {
        decorated(name, with: " (conflict from \(device) \(date))")
    }

    /// `name (2).ext`, `name (3).ext`...: for two creates of one name.
    public static func numbered(_ name: ByteString, _ number: Int) -> ByteString {
        decorated(name, with: " (\(number))")
    }

    static let conflictMarker = Array(" (conflict from ".utf8)

    /// Whether `candidate` is a conflict copy of `name` made by `conflictCopy` (possibly
    /// numbered after it, when two conflicts fell in one second): for `user.ubiqfs.conflicts`.
    public static func isConflictCopy(_ candidate: ByteString, of name: ByteString) -> Bool {
        let (stem, ext) = split(name)
        var bytes = candidate.bytes
        guard bytes.count > ext.count, bytes.suffix(ext.count).elementsEqual(ext) else { return false }
        bytes.removeLast(ext.count)
        // An optional " (n)" from a second conflict copy with the same stamp.
        if bytes.last == 41, let open = bytes.lastIndex(of: 40), open >= 1, bytes[open - 1] == 32,
           open + 1 < bytes.count - 1, bytes[(open + 1)..<(bytes.count - 1)].allSatisfy({ (48...57).contains($0) }),
           let marker = lastRange(of: conflictMarker, in: bytes), marker < open - 1 {
            bytes.removeSubrange((open - 1)...)
        }
        guard bytes.last == 41, let marker = lastRange(of: conflictMarker, in: bytes), marker > 0 else { return false }
        let prefix = bytes[..<marker]
        // The stem is shortened when the copy's name would pass 255 bytes.
        return prefix.elementsEqual(stem) || (candidate.bytes.count >= maxLength - 4 && stem.starts(with: prefix))
    }

    /// The names `candidate` may be a conflict copy of: the part before its conflict marker
    /// with each extension it may have kept. Callers confirm with `isConflictCopy`; a copy
    /// whose stem was shortened (255 bytes) is not found this way.
    public static func conflictOriginals(of candidate: ByteString) -> [ByteString] {
        let bytes = candidate.bytes
        guard let marker = lastRange(of: conflictMarker, in: bytes), marker > 0 else { return [] }
        let prefix = Array(bytes[..<marker])
        var names = [ByteString(prefix)]
        let tailStart = max(marker + conflictMarker.count, bytes.count - 16)
        for index in tailStart..<bytes.count where bytes[index] == 46 {
            names.append(ByteString(prefix + bytes[index...]))
        }
        return names
    }

    private static func lastRange(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = bytes.count - needle.count
        while index >= 0 {
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index -= 1
        }
        return nil
    }

    /// The stem and the extension (".txt", at most 16 bytes, never a leading dot alone).
    private static func split(_ name: ByteString) -> (stem: [UInt8], ext: [UInt8]) {
        let bytes = name.bytes
        if let dot = bytes.lastIndex(of: 46), dot > 0, bytes.count - dot <= 16 {
            return (Array(bytes[..<dot]), Array(bytes[dot...]))
        }
        return (bytes, [])
    }

    private static func decorated(_ name: ByteString, with suffix: String) -> ByteString {
        var (stem, ext) = split(name)
        let tail = Array(suffix.utf8) + ext
        let room = max(1, maxLength - tail.count)
        if stem.count > room { stem = Array(stem.prefix(room)) }
        return ByteString(stem + tail)
    }
}
