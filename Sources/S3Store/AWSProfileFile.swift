import Foundation

/// The AWS shared files (~/.aws/credentials and ~/.aws/config): INI sections of
/// `key = value` lines. In the config file a profile's section is `[profile NAME]`
/// (`[default]` for the default); in the credentials file it is `[NAME]`. Nested
/// service sections (`s3 =` followed by indented lines) are skipped.
struct AWSProfileFile {
    private(set) var sections: [String: [String: String]] = [:]

    init(text: String) {
        var current: String?
        var nested = false
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let indented = rawLine.first == " " || rawLine.first == "\t"
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                nested = false
                continue
            }
            guard let section = current, let equals = line.firstIndex(of: "=") else { continue }
            if indented && nested { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            nested = value.isEmpty
            if !nested { sections[section, default: [:]][key] = value }
        }
    }

    init?(path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        self.init(text: text)
    }

    /// A profile of the credentials file.
    func credentialsProfile(_ name: String) -> [String: String]? {
        sections[name]
    }

    /// A profile of the config file.
    func configProfile(_ name: String) -> [String: String]? {
        name == "default" ? (sections["default"] ?? sections["profile default"]) : sections["profile \(name)"]
    }
}
