/// The URI a desktop names a local file by. The freedesktop cache keys a thumbnail by the
/// MD5 of this exact string, so it must match GLib byte for byte: GIO and gnome-desktop
/// both build it with `g_filename_to_uri`, which works on bytes (names need not be UTF-8).
public enum ThumbnailURI {
    /// file:// URI of an absolute path, escaped byte-wise exactly as GLib's g_filename_to_uri does.
    public static func fileURI(path: [UInt8]) -> String {
        var uri = Array("file://".utf8)
        uri.reserveCapacity(uri.count + path.count * 3)
        for byte in path {
            if isKept(byte) {
                uri.append(byte)
            } else {
                uri.append(UInt8(ascii: "%"))
                uri.append(hexDigits[Int(byte >> 4)])
                uri.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: uri, as: UTF8.self)
    }

    /// Uppercase, as GLib writes them.
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// The bytes `g_escape_uri_string(path, UNSAFE_PATH)` leaves as they are (glib/gconvert.c,
    /// `acceptable[]` under mask 0x08): letters, digits and `!$&'()*+,-./:=@_~`.
    static func isKept(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            keptPunctuation.contains(byte)
        }
    }

    private static let keptPunctuation = Set("!$&'()*+,-./:=@_~".utf8)
}
