/// One value for each of the three versions: their paths, headers, or a number of each.
struct Sides<Value> {
    var base: Value
    var ours: Value
    var theirs: Value

    init(base: Value, ours: Value, theirs: Value) {
        self.base = base
        self.ours = ours
        self.theirs = theirs
    }

    /// Each side's value made by `make`, in the order base, ours, theirs.
    init(_ make: (Side) throws(DatabaseMergeError) -> Value) throws(DatabaseMergeError) {
        self.init(base: try make(.base), ours: try make(.ours), theirs: try make(.theirs))
    }

    subscript(side: Side) -> Value {
        switch side {
        case .base: base
        case .ours: ours
        case .theirs: theirs
        }
    }
}
