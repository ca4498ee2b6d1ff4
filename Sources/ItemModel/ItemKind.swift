/// What an item is. Hard links, devices and fifos are deliberately not items:
/// they cannot be shared meaningfully between machines.
public enum ItemKind: String, Sendable, Codable, Hashable {
    case file
    case directory
    case symlink
}
