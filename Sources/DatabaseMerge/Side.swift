/// The three versions of a merge. Each is attached to the output's connection under its
/// raw value, so SQL names them as `base.t`, `ours.t`, `theirs.t` beside `main.t`, the
/// merge being made.
enum Side: String, CaseIterable, Sendable {
    case base, ours, theirs
}
