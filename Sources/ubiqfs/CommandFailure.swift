import ArgumentParser

/// A one-line error for people, printed as `ubiqfs: <message>` with exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
