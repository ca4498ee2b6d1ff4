/// What a local content change does to a file, for the handle table's `WrittenRanges`.
enum ContentChange: Sendable {
    /// Bytes written over or past the end (an allocation too).
    case written(Range<Int64>)
    /// The file cut or extended to a length.
    case truncated(Int64)
    /// A change of unknown extent: the next upload reads the whole file.
    case unknown
}
