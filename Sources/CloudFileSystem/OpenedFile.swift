/// What opening a file gives the kernel: the handle, whether the kernel may keep the
/// file's cached pages, and whether the file has a setuid or setgid bit (a write by the
/// kernel's cached path clears those, so the adapter keeps such a file on that path).
public struct OpenedFile: Sendable {
    public var handle: UInt64
    public var keepCache: Bool
    public var setID: Bool
}
