import FuseKit
internal import Glibc

/// An inode's journaled part: everything but a regular file's bytes and size. Any fsync
/// commits every node's metadata at once; `BACKING/meta` holds the last committed set.
struct NodeMetadata {
    /// The full st_mode, type bits included.
    var mode: UInt32
    var uid: UInt32
    var gid: UInt32
    var rdev: UInt64
    var atime: FuseTimespec
    var mtime: FuseTimespec
    var ctime: FuseTimespec
    /// A symlink's target.
    var target: [UInt8] = []
    /// user.* extended attributes.
    var xattrs: [[UInt8]: [UInt8]] = [:]
    /// A folder's entries.
    var children: [[UInt8]: UInt64] = [:]

    init(mode: UInt32, uid: UInt32, gid: UInt32, rdev: UInt64 = 0, time: FuseTimespec) {
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.rdev = rdev
        self.atime = time
        self.mtime = time
        self.ctime = time
    }

    var type: UInt32 { mode & UInt32(S_IFMT) }
    var isDirectory: Bool { type == UInt32(S_IFDIR) }
    var isRegular: Bool { type == UInt32(S_IFREG) }
    var isSymlink: Bool { type == UInt32(S_IFLNK) }

    func encode(into writer: inout ByteWriter) {
        writer.u32(mode)
        writer.u32(uid)
        writer.u32(gid)
        writer.u64(rdev)
        for time in [atime, mtime, ctime] {
            writer.i64(time.seconds)
            writer.i64(time.nanoseconds)
        }
        writer.blob(target)
        writer.u64(UInt64(xattrs.count))
        for (name, value) in xattrs {
            writer.blob(name)
            writer.blob(value)
        }
        writer.u64(UInt64(children.count))
        for (name, ino) in children {
            writer.blob(name)
            writer.u64(ino)
        }
    }

    static func decode(_ reader: inout ByteReader) throws(ByteReader.Truncated) -> NodeMetadata {
        let mode = try reader.u32()
        let uid = try reader.u32()
        let gid = try reader.u32()
        let rdev = try reader.u64()
        var times: [FuseTimespec] = []
        for _ in 0..<3 {
            let seconds = try reader.i64()
            times.append(FuseTimespec(seconds: seconds, nanoseconds: try reader.i64()))
        }
        var node = NodeMetadata(mode: mode, uid: uid, gid: gid, rdev: rdev, time: times[0])
        node.mtime = times[1]
        node.ctime = times[2]
        node.target = try reader.blob()
        for _ in 0..<(try reader.u64()) {
            let name = try reader.blob()
            node.xattrs[name] = try reader.blob()
        }
        for _ in 0..<(try reader.u64()) {
            let name = try reader.blob()
            node.children[name] = try reader.u64()
        }
        return node
    }
}
