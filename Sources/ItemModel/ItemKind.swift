/// What an item is. FIFOs, sockets and device nodes are items without content (a name,
/// a mode and, for devices, a device number): programs such as tar, rsync and git
/// expect to create them, and other devices get them like any item. They are only
/// names there: the kernel serves a FIFO or socket on each machine, and the mount is
/// `nodev`, so a device node never opens a device. A hard link (format 3) is an item of
/// its own, `link`: one more name of an item that is not a folder (`ItemSnapshot.of`).
public enum ItemKind: String, Sendable, Codable, Hashable {
    case file
    case directory
    case symlink
    case fifo
    case socket
    case characterDevice
    case blockDevice
    /// Another name of an item (a hard link): no attributes of its own, never given to
    /// the kernel; the item it names answers for it.
    case link

    /// FIFOs, sockets and device nodes: metadata only, never content.
    public var isSpecial: Bool {
        switch self {
        case .fifo, .socket, .characterDevice, .blockDevice: true
        case .file, .directory, .symlink, .link: false
        }
    }

    public var isDevice: Bool { self == .characterDevice || self == .blockDevice }
}
