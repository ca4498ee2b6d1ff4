/// Which kernel request a `FuseRequest` answers: what `FuseRequestObserver` times.
public enum FuseOperationKind: String, CaseIterable, Sendable {
    case lookup
    case getattr
    case setattr
    case readlink
    case mknod
    case mkdir
    case unlink
    case rmdir
    case symlink
    case rename
    case link
    case open
    case create
    case read
    case write
    case flush
    case release
    case fsync
    case opendir
    case readdir
    case readdirplus
    case releasedir
    case fsyncdir
    case statfs
    case setxattr
    case getxattr
    case listxattr
    case removexattr
    case fallocate
}
