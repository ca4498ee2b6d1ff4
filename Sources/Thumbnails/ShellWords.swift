/// The words of a thumbnailer's `Exec` line, split as `g_shell_parse_argv` splits them
/// (gnome-desktop parses Exec with it): blanks separate words, `'…'` is literal, `"…"`
/// keeps a backslash only before `$ ` " \` and newline, a backslash outside quotes escapes
/// the next character, and `#` at the start of a word begins a comment.
enum ShellWords {
    /// Nil for an unterminated quote or a trailing backslash.
    static func split(_ line: String) -> [String]? {
        var words: [String] = []
        var word: String?
        var characters = Array(line)[...]
        while let character = characters.popFirst() {
            switch character {
            case " ", "\t", "\n":
                if let done = word { words.append(done) }
                word = nil
            case "#" where word == nil:
                while let next = characters.first, next != "\n" { characters.removeFirst() }
            case "\\":
                guard let next = characters.popFirst() else { return nil }
                // A backslash before a newline joins the lines.
                if next != "\n" { word = (word ?? "") + String(next) }
            case "'":
                guard let end = characters.firstIndex(of: "'") else { return nil }
                word = (word ?? "") + String(characters[..<end])
                characters = characters[(end + 1)...]
            case "\"":
                guard let quoted = doubleQuoted(&characters) else { return nil }
                word = (word ?? "") + quoted
            default:
                word = (word ?? "") + String(character)
            }
        }
        if let done = word { words.append(done) }
        return words
    }

    /// The text up to the closing `"` (consumed), its escapes undone.
    private static func doubleQuoted(_ characters: inout ArraySlice<Character>) -> String? {
        var text = ""
        while let character = characters.popFirst() {
            switch character {
            case "\"":
                return text
            case "\\":
                guard let next = characters.popFirst() else { return nil }
                switch next {
                case "$", "`", "\"", "\\": text.append(next)
                case "\n": break
                default: text += "\\" + String(next)
                }
            default:
                text.append(character)
            }
        }
        return nil
    }
}
