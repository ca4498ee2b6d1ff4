/// What applying one journal record changed locally, beyond the database itself.
struct ApplyOutcome: Sendable {
    var invalidations: [KernelInvalidation] = []
    /// Cache files to drop once the transaction is committed.
    var droppedContent: [Int64] = []
    var conflicts: [String] = []
    var refused: [String] = []
}
