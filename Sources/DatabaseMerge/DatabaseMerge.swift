/// The three-way merge of an SQLite database file both devices changed since the version
/// they last shared (issue 40): by table and primary key, ours' row changes applied to
/// theirs. Anything it cannot merge row by row with certainty (a schema change, one row
/// changed on both sides, a result SQLite finds unsound) is an error, and the caller keeps
/// the conflict copy instead.
public enum DatabaseMerge {
    static let magic = Array("SQLite format 3".utf8) + [0]

    /// True if bytes start with the SQLite 3 header "SQLite format 3\0".
    public static func isDatabase(_ prefix: some Collection<UInt8>) -> Bool {
        prefix.starts(with: magic)
    }

    /// Merges ours' changes since base into theirs and writes the result to `output`, a path
    /// that must not exist (it is created; on any error it is removed again). Each input must
    /// be a complete database (a WAL checkpointed into it); none is written, nor is any file
    /// made beside it. Rows ours inserted, updated or deleted are applied to theirs where
    /// theirs left them as in base; the same change on both sides is no conflict. Errors:
    /// `.notDatabase`, `.schemaChanged`, `.unsupported` (virtual tables, NULL keys, unknown
    /// collations), `.conflict` (a row both sides changed, a key both inserted, a delete
    /// against a change, a constraint ours' row breaks in theirs), `.integrity` (an
    /// `integrity_check` failure or a foreign key violation neither side had), `.sqlite`.
    /// Deterministic: the same three files give the same output bytes.
    public static func merge(base: String, ours: String, theirs: String, into output: String) throws(DatabaseMergeError) -> DatabaseMergeReport {
        let inputs = Sides(base: base, ours: ours, theirs: theirs)
        try checkHeaders(inputs)
        return try merge(into: output) { workspace throws(DatabaseMergeError) in try workspace.copy(inputs) }
    }

    /// The same for three databases held in memory (the sync engine's): each is written
    /// once, into the merge's private folder, where the form above copies files there.
    public static func merge(base: [UInt8], ours: [UInt8], theirs: [UInt8], into output: String) throws(DatabaseMergeError) -> DatabaseMergeReport {
        try merge(into: output) { workspace throws(DatabaseMergeError) in
            let written = try workspace.write(Sides(base: base, ours: ours, theirs: theirs))
            try checkHeaders(written)
            return written
        }
    }

    private static func checkHeaders(_ inputs: Sides<String>) throws(DatabaseMergeError) {
        try SchemaGate.checkEncodings(try Sides { side throws(DatabaseMergeError) in try DatabaseHeader(path: inputs[side], side: side) })
    }

    /// The merge of the inputs `place` puts in the workspace; the output starts as theirs.
    private static func merge(
        into output: String, placing place: (Workspace) throws(DatabaseMergeError) -> Sides<String>
    ) throws(DatabaseMergeError) -> DatabaseMergeReport {
        let workspace = try Workspace(beside: output)
        defer { workspace.remove() }
        let copies = try place(workspace)
        let file = try OutputFile.create(output, copying: copies.theirs)
        do {
            return try MergeSession.run(file, inputs: copies)
        } catch {
            file.remove()
            throw error
        }
    }
}
