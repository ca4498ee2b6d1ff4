/// What an item is. FIFOs, sockets and device nodes are items without content (a name,
/// a mode and, for devices, a device number): programs such as tar, rsync and git
/// expect to create them, and other devices get them like any item. They are only
/// names there: the kernel serves a FIFO or socket on each machine, and the mount is
/// `nodev`, so a device node never opens a device. Hard links are not items.
public enum ItemKind: String, Sendable, Codable, Hashable {
    case file
    case directory
    case symlink
    case fifo
    case socket
    case characterDevice
    case blockDevice

    /// FIFOs, sockets and device nodes: metadata only, never content.
    public var isSpecial: Bool {
        switch self {
        case .fifo, .socket, .characterDevice, .blockDevice: true
        case .file, .directory, .symlink: false
        }
    }

    public var isDevice: Bool { self == .characterDevice || self == .blockDevice }
}
