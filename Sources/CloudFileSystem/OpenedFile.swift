/// What opening a file gives the kernel: the handle, whether the kernel may keep the
/// file's cached pages, and whether it is opened around them (`OpenFile.directIO`).
public struct OpenedFile: Sendable {
    public var handle: UInt64
    public var keepCache: Bool
    public var directIO: Bool
}
