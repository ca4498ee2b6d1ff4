/// The one error the simulated tree throws: an errno for the kernel. Typed throws keep every
/// failure of an operation something a FUSE request can be answered with.
struct Errno: Error, Equatable, CustomStringConvertible {
    var code: Int32

    init(_ code: Int32) {
        self.code = code
    }

    var description: String { "errno \(code)" }
}
