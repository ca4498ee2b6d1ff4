/// A foreign key as `PRAGMA foreign_key_check` and `foreign_key_list` name it: the child
/// table and the key's id among that table's foreign keys.
struct ForeignKey: Hashable, Comparable {
    let table: String
    let id: Int

    static func < (a: ForeignKey, b: ForeignKey) -> Bool {
        (a.table, a.id) < (b.table, b.id)
    }
}
