internal import Glibc

/// user.* extended attributes, journaled like any metadata. Other namespaces are refused on
/// set and absent on get (the kernel asks security.capability on every write: answered at once).
extension Tree {
    private static let userPrefix = Array("user.".utf8)

    /// `flags`: XATTR_CREATE (1), XATTR_REPLACE (2).
    mutating func setxattr(_ ino: UInt64, _ name: [UInt8], _ value: [UInt8], flags: Int32) throws(Errno) {
        let meta = try node(ino).meta
        guard name.starts(with: Self.userPrefix) else { throw Errno(EOPNOTSUPP) }
        let exists = meta.xattrs[name] != nil
        if flags & 1 != 0 && exists { throw Errno(EEXIST) }
        if flags & 2 != 0 && !exists { throw Errno(ENODATA) }
        nodes[ino]!.meta.xattrs[name] = value
        nodes[ino]!.meta.ctime = .now
    }

    func getxattr(_ ino: UInt64, _ name: [UInt8]) throws(Errno) -> [UInt8] {
        guard let value = try node(ino).meta.xattrs[name] else { throw Errno(ENODATA) }
        return value
    }

    /// The names, each NUL-terminated, back to back.
    func listxattr(_ ino: UInt64) throws(Errno) -> [UInt8] {
        try node(ino).meta.xattrs.keys.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 + [0] }
    }

    mutating func removexattr(_ ino: UInt64, _ name: [UInt8]) throws(Errno) {
        guard try node(ino).meta.xattrs[name] != nil else { throw Errno(ENODATA) }
        nodes[ino]!.meta.xattrs[name] = nil
        nodes[ino]!.meta.ctime = .now
    }
}
