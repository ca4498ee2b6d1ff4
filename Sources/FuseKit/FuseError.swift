internal import Glibc

/// A failure to set up or run a session, or to read the file a read's reply carries (the
/// request is then not answered: its caller answers it with an errno).
public struct FuseError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// fuse_session_new rejected the arguments (libfuse prints which on stderr).
        case sessionFailed
        /// fuse_session_mount failed: bad mountpoint, no /dev/fuse, or not permitted.
        case mountFailed
        /// fuse_set_signal_handlers failed.
        case signalHandlersFailed
        /// fuse_session_loop_mt ended with an error (e.g. EPROTO from a failed INIT).
        case loopFailed
        /// The file a read is answered from could not be read (`FuseRequest.reply(file:)`).
        case readFailed
    }

    public var code: Code
    public var message: String
    public var errno: Int32?

    public init(code: Code, message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String {
        guard let errno else { return "\(code): \(message)" }
        return "\(code): \(message): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
