import Glibc

/// One `.thumbnailer` file: a desktop-entry group `[Thumbnailer Entry]` with the command
/// (`Exec`), the program that must exist (`TryExec`) and the MIME types it handles.
struct ThumbnailerEntry: Sendable, Equatable {
    var path: String
    /// `Exec` split into words, placeholders not yet expanded.
    var command: [String]
    var mimeTypes: [String]

    /// Nil for a file that is not a usable thumbnailer: no such group, no Exec or MimeType,
    /// or a TryExec program that is not installed.
    init?(path: String, contents: String) {
        let keys = Self.group("Thumbnailer Entry", of: contents)
        guard let exec = keys["Exec"].map(Self.unescaped), let command = ShellWords.split(exec), !command.isEmpty,
              let mimeTypes = keys["MimeType"].map(Self.list), !mimeTypes.isEmpty
        else { return nil }
        if let program = keys["TryExec"].map(Self.unescaped), !Self.isInstalled(program) { return nil }
        self.path = path
        self.command = command
        self.mimeTypes = mimeTypes
    }

    /// The command for one run: `%i` the input path, `%u` its URI, `%o` the output path,
    /// `%s` the size, `%%` a percent sign (gnome-desktop's `expand_thumbnailing_elem`).
    func arguments(input: String, output: String, size: Int) -> [String] {
        command.map { word in
            var expanded = ""
            var characters = word.makeIterator()
            while let character = characters.next() {
                guard character == "%" else { expanded.append(character); continue }
                switch characters.next() {
                case "i": expanded += input
                case "u": expanded += ThumbnailURI.fileURI(path: Array(input.utf8))
                case "o": expanded += output
                case "s": expanded += String(size)
                case "%": expanded += "%"
                case let other?: expanded.append(other)
                case nil: break
                }
            }
            return expanded
        }
    }

    /// The keys of one group (the unlocalised ones; later lines win, as in GKeyFile).
    static func group(_ name: String, of contents: String) -> [String: String] {
        var keys: [String: String] = [:]
        var inGroup = false
        for rawLine in contents.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inGroup = line.hasPrefix("[\(name)]")
                continue
            }
            guard inGroup, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSpaces, value = line[line.index(after: equals)...].trimmingSpaces
            if !key.contains("[") { keys[String(key)] = String(value) }
        }
        return keys
    }

    /// A desktop-entry string with `\s \n \t \r \\` undone.
    static func unescaped(_ value: String) -> String {
        var text = ""
        var characters = value.makeIterator()
        while let character = characters.next() {
            guard character == "\\", let next = characters.next() else { text.append(character); continue }
            switch next {
            case "s": text += " "
            case "n": text += "\n"
            case "t": text += "\t"
            case "r": text += "\r"
            default: text.append(next)
            }
        }
        return text
    }

    /// A `;`-separated list (`\;` is a semicolon in an item); empty items are dropped.
    static func list(_ value: String) -> [String] {
        var items: [String] = []
        var item = ""
        var escaped = false
        for character in value {
            if escaped {
                item += character == ";" ? ";" : "\\" + String(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ";" {
                items.append(unescaped(item))
                item = ""
            } else {
                item.append(character)
            }
        }
        items.append(unescaped(item))
        return items.filter { !$0.isEmpty }
    }

    /// An absolute path that is executable, or a name found so in PATH.
    static func isInstalled(_ program: String) -> Bool {
        if program.contains("/") { return access(program, X_OK) == 0 }
        return ProgramSearch.find(program) != nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = drop { $0 == " " || $0 == "\t" }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return text
    }
}
