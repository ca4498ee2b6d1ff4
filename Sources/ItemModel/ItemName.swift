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

    private static func decorated(_ name: ByteString, with suffix: String) -> ByteString {
        let bytes = name.bytes
        var stem = bytes
        var ext: [UInt8] = []
        if let dot = bytes.lastIndex(of: 46), dot > 0, bytes.count - dot <= 16 {
            stem = Array(bytes[..<dot])
            ext = Array(bytes[dot...])
        }
        let tail = Array(suffix.utf8) + ext
        let room = max(1, maxLength - tail.count)
        if stem.count > room { stem = Array(stem.prefix(room)) }
        return ByteString(stem + tail)
    }
}
