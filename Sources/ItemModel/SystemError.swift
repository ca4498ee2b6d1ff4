import Glibc

/// An errno from a system call, with the call's name: the cause in a store or cache error.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public var errno: Int32
    public var call: String

    public init(errno: Int32, call: String) {
        self.errno = errno
        self.call = call
    }

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}
