import GRDB

extension Database {
    /// Runs GRDB calls for one step of the merge, saying which step if SQLite fails: GRDB throws
    /// untyped `DatabaseError`s, the merge `DatabaseMergeError`s, and the step's name is what
    /// makes the message useful. A collation that the database's own app defines (Anki's
    /// `unicase`) is unknown to us: nothing that compares or indexes those columns can run,
    /// so that database is `.unsupported`, not broken.
    func step<T>(_ what: @autoclosure () -> String, _ body: () throws -> T) throws(DatabaseMergeError) -> T {
        do {
            return try body()
        } catch let error as DatabaseMergeError {
            throw error
        } catch let error as DatabaseError where error.message?.hasPrefix("no such collation sequence") == true {
            throw DatabaseMergeError(code: .unsupported, message: "\(what()): a collation of the database's own app", cause: error)
        } catch {
            throw DatabaseMergeError(code: .sqlite, message: what(), cause: error)
        }
    }
}
