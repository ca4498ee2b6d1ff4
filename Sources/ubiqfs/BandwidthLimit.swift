import Foundation

/// `--bwlimit` as rclone users write it: `RATE` for both directions, or `UP:DOWN`, each a
/// size per second (`512K`, `10M`, `1.5G`) or `off`. nil is no limit.
struct BandwidthLimit: Equatable {
    var upload: Int64?
    var download: Int64?

    init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(parts.count), let up = Self.rate(parts[0]), let down = Self.rate(parts[parts.count - 1]) else {
            return nil
        }
        upload = up > 0 ? up : nil
        download = down > 0 ? down : nil
    }

    /// Bytes per second, 0 for `off`; nil when the text is neither.
    private static func rate(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        return trimmed.lowercased() == "off" ? 0 : ByteSize.parse(trimmed)
    }
}
