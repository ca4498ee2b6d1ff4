/// The little XML that S3 answers with (ListBucketResult, Error): text of elements by
/// name, with entities decoded. Enough for flat, machine-written documents; a full parser
/// would add a libxml2 dependency for four tags.
enum S3XML {
    /// The text of every `<tag>...</tag>` element, in document order.
    static func values(of tag: String, in document: String) -> [String] {
        var results: [String] = []
        let open = "<\(tag)>"
        let close = "</\(tag)>"
        var rest = document[...]
        while let start = rest.range(of: open) {
            let after = rest[start.upperBound...]
            guard let end = after.range(of: close) else { break }
            results.append(decode(String(after[..<end.lowerBound])))
            rest = after[end.upperBound...]
        }
        return results
    }

    static func value(of tag: String, in document: String) -> String? {
        values(of: tag, in: document).first
    }

    /// The five named entities and numeric references.
    static func decode(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else {
                result += rest[amp...]
                return result
            }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                var scalar: UInt32?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst())
                }
                if let scalar, let character = Unicode.Scalar(scalar) {
                    result.unicodeScalars.append(character)
                } else {
                    result += "&\(entity);"
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }
}
