/// One live inode of the simulated page cache: its journaled metadata, a regular file's
/// content, and the references that keep it alive after its last name is gone (the kernel's
/// lookups, open handles), as an unlinked but open file lives on until the cut or the close.
struct Node {
    var meta: NodeMetadata
    /// Regular files only.
    var content: FileContent?
    /// Names pointing here (1 for a folder while it is in its parent; the root always 1).
    var links: Int
    /// The kernel's lookup references (lookup, create, mknod, mkdir, symlink, link, readdirplus).
    var lookups: UInt64 = 0
    /// Open file handles.
    var opens = 0

    var isUnused: Bool { links == 0 && lookups == 0 && opens == 0 }
}
