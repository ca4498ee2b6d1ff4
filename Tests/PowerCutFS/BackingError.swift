internal import Glibc

/// Why the backing folder cannot be used or written: a sentence for the person running the
/// simulator, with the path and the system's reason.
struct BackingError: Error, CustomStringConvertible {
    var message: String

    init(_ message: String) {
        self.message = message
    }

    /// `what` failed on `path`, with errno's text.
    static func system(_ what: String, _ path: String, _ code: Int32 = errno) -> BackingError {
        BackingError("\(what) \(path): \(String(cString: strerror(code)))")
    }

    var description: String { message }
}
