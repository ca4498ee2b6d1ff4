import Foundation

/// A named mount in `~/.config/ubiqfs/mounts.conf`, so `ubiqfs mount NAME` and the systemd
/// unit `ubiqfs@NAME.service` need no options. The file has one section per mount:
///
///     [work]
///     mountpoint = ~/Work
///     store = s3://team-bucket/work
///     cache-size = 20G
///
/// Keys are `ubiqfs mount`'s option names; options given on the command line win.
struct MountProfile: Equatable {
    /// The keys a section may hold; anything else is a mistake worth reporting.
    static let keys: Set<String> = [
        "mountpoint", "store", "container", "state-dir", "device", "cache-size", "keep-versions", "allow-other", "noexec", "read-only",
        "log-level", "transfers", "bwlimit", "passphrase-file", "no-notify", "ignore-file", "thumbnails", "thumbnail-cache", "lookers",
        "metrics",
    ]

    let name: String
    let settings: [String: String]
    /// Where it was read from, for messages.
    let source: String

    static var configurationFile: String {
        (ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] ?? Paths.home + "/.config") + "/ubiqfs/mounts.conf"
    }

    /// The profile of that name, or nil when there is none (or no file at all). A file that
    /// exists but cannot be read or parsed is an error, never silently ignored.
    static func named(_ name: String) throws -> MountProfile? {
        try all().first { $0.name == name }
    }

    static func all(file: String = configurationFile) throws -> [MountProfile] {
        guard FileManager.default.fileExists(atPath: file) else { return [] }
        let text: String
        do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
            throw CommandFailure("cannot read \(file): \(error.localizedDescription)")
        }
        return try parse(text, file: file)
    }

    static func parse(_ text: String, file: String) throws -> [MountProfile] {
        var profiles: [MountProfile] = []
        var name: String?
        var settings: [String: String] = [:]
        func finish() {
            if let name { profiles.append(MountProfile(name: name, settings: settings, source: file)) }
        }
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let place = "\(file):\(index + 1)"
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw CommandFailure("\(place): a section is [NAME]") }
                finish()
                let section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                guard isValidName(section) else {
                    throw CommandFailure("\(place): '\(section)' is not a mount name (letters, digits, '.', '_', '-'; not starting with '.' or '-')")
                }
                guard !profiles.contains(where: { $0.name == section }) else { throw CommandFailure("\(place): [\(section)] appears twice") }
                name = section
                settings = [:]
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { throw CommandFailure("\(place): expected KEY = VALUE") }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard name != nil else { throw CommandFailure("\(place): '\(key)' is outside any [NAME] section") }
            guard keys.contains(key) else {
                throw CommandFailure("\(place): unknown key '\(key)' (known: \(keys.sorted().joined(separator: ", ")))")
            }
            guard settings[key] == nil else { throw CommandFailure("\(place): '\(key)' is set twice") }
            settings[key] = value
        }
        finish()
        for profile in profiles {
            guard profile.settings["mountpoint"] != nil else { throw CommandFailure("\(file): [\(profile.name)] has no mountpoint") }
            // A relative path would mean one thing in a shell and another under systemd.
            for key in ["mountpoint", "state-dir", "store", "passphrase-file", "ignore-file", "thumbnail-cache"] {
                guard let value = profile.settings[key], !value.hasPrefix("/"), value != "~", !value.hasPrefix("~/"), !value.hasPrefix("s3://") else { continue }
                throw CommandFailure("\(file): [\(profile.name)] \(key) = \(value): write an absolute path (or one starting with ~)")
            }
        }
        return profiles
    }

    /// Names that are also safe as a systemd instance name and never look like a path.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first != ".", first != "-", name.utf8.count <= 64 else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
    }

    /// A command-line argument names a profile when it could not be meant as a path
    /// (no '/') and a profile of that name exists.
    static func resolving(_ argument: String) throws -> MountProfile? {
        guard !argument.contains("/"), isValidName(argument) else { return nil }
        return try named(argument)
    }

    /// The mountpoint a command should talk to: a profile's, or the argument itself.
    static func mountpoint(for argument: String) throws -> String {
        if let profile = try resolving(argument), let mountpoint = profile.settings["mountpoint"] {
            return Paths.absolute(mountpoint)
        }
        return argument
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = settings[key] else { return nil }
        switch value.lowercased() {
        case "true", "yes", "1", "on": return true
        case "false", "no", "0", "off": return false
        default: throw CommandFailure("\(source): [\(name)] \(key) = \(value): expected true or false")
        }
    }
}
