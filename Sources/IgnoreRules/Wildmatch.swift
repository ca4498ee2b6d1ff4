/// Git's glob matching (`wildmatch`), the one gitignore patterns use: `*`, `?` and
/// brackets never match `/` in a path; `**` crosses folders only as a whole component
/// (`**/a`, `a/**`, `a/**/b`, the last also matching `a/b`); a malformed bracket matches
/// nothing. Bytes, not characters: names are bytes, and so are git's.
enum Wildmatch {
    /// Why a sub-match failed: plainly, or in a way no retry of an outer `*` can mend.
    private enum Outcome { case match, noMatch, abortAll, abortToStarStar }

    /// Whether `text` matches `pattern`; with `pathname`, wildcards stop at `/`.
    static func matches(_ pattern: [UInt8], _ text: [UInt8], pathname: Bool) -> Bool {
        pattern.withUnsafeBufferPointer { p in
            text.withUnsafeBufferPointer { t in
                match(Cursor(bytes: p), from: 0, Cursor(bytes: t), at: 0, pathname: pathname) == .match
            }
        }
    }

    /// Bytes past the end read as 0, as C strings do: the algorithm's ends read naturally.
    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        subscript(_ i: Int) -> UInt8 { i < bytes.count ? bytes[i] : 0 }
        var count: Int { bytes.count }
        func firstSlash(from i: Int) -> Int? { (i..<count).first { bytes[$0] == slash } }
    }

    private static let (slash, star, question, backslash, open, close) = (UInt8(ascii: "/"), UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "\\"), UInt8(ascii: "["), UInt8(ascii: "]"))

    private static func isSpecial(_ c: UInt8) -> Bool { c == star || c == question || c == open || c == backslash }

    /// Matches the pattern from `start` against the text from `at`. A `**` counts as a
    /// whole component when it begins this sub-pattern or follows a `/`.
    private static func match(_ p: Cursor, from start: Int, _ t: Cursor, at textStart: Int, pathname: Bool) -> Outcome {
        var (i, j) = (start, textStart)
        while i < p.count {
            let pc = p[i]
            let tc = t[j]
            if j >= t.count && pc != star { return .abortAll }
            switch pc {
            case backslash:
                i += 1
                if tc != p[i] { return .noMatch }
            case question:
                if pathname && tc == slash { return .noMatch }
            case star:
                return matchStar(p, at: i, from: start, t, at: j, pathname: pathname)
            case open:
                switch matchBracket(p, at: i + 1, tc, pathname: pathname) {
                case .failure(let failure): return failure.outcome
                case .success(let end): i = end
                }
            default:
                if tc != pc { return .noMatch }
            }
            i += 1
            j += 1
        }
        return j < t.count ? .noMatch : .match
    }

    /// A run of stars at `i`: what it may span, then the rest of the pattern at each place.
    private static func matchStar(_ p: Cursor, at first: Int, from start: Int, _ t: Cursor, at textStart: Int, pathname: Bool) -> Outcome {
        var i = first + 1
        var j = textStart
        var crossesSlash = !pathname
        if p[i] == star {
            while p[i] == star { i += 1 }
            if !pathname {
                crossesSlash = true
            } else if (first - start < 1 || p[first - 1] == slash)
                && (i >= p.count || p[i] == slash || (p[i] == backslash && p[i + 1] == slash)) {
                // `a/**/b` also matches `a/b`: the `**/` may stand for no folder at all.
                if p[i] == slash && match(p, from: i + 1, t, at: j, pathname: pathname) == .match { return .match }
                crossesSlash = true
            } else {
                crossesSlash = false
            }
        }
        if i >= p.count {
            if !crossesSlash && t.firstSlash(from: j) != nil { return .abortToStarStar }
            return .match
        }
        if !crossesSlash && p[i] == slash {
            // One star before a slash spans the rest of this component.
            guard let next = t.firstSlash(from: j) else { return .abortAll }
            return match(p, from: i + 1, t, at: next + 1, pathname: pathname)
        }
        while j < t.count {
            if !isSpecial(p[i]) {
                // Skip to the next place the literal after the star could start.
                let literal = p[i]
                while j < t.count && (crossesSlash || t[j] != slash) && t[j] != literal { j += 1 }
                if j >= t.count || t[j] != literal { return crossesSlash ? .abortAll : .abortToStarStar }
            }
            let outcome = match(p, from: i, t, at: j, pathname: pathname)
            if outcome != .noMatch {
                if !crossesSlash || outcome != .abortToStarStar { return outcome }
            } else if !crossesSlash && t[j] == slash {
                return .abortToStarStar
            }
            j += 1
        }
        return .abortAll
    }

    /// A bracket expression whose first member is at `i`, against `c`: the index of its
    /// closing `]`, or why the whole match fails.
    private static func matchBracket(_ p: Cursor, at first: Int, _ c: UInt8, pathname: Bool) -> Result<Int, BracketFailure> {
        var i = first
        var member = p[i]
        var negated = false
        if member == UInt8(ascii: "!") || member == UInt8(ascii: "^") {
            negated = true
            i += 1
            member = p[i]
        }
        var previous: UInt8 = 0
        var matched = false
        repeat {
            if i >= p.count { return .failure(.init(.abortAll)) }
            if member == backslash {
                i += 1
                guard i < p.count else { return .failure(.init(.abortAll)) }
                member = p[i]
                if c == member { matched = true }
            } else if member == UInt8(ascii: "-") && previous != 0 && i + 1 < p.count && p[i + 1] != close {
                i += 1
                var high = p[i]
                if high == backslash {
                    i += 1
                    guard i < p.count else { return .failure(.init(.abortAll)) }
                    high = p[i]
                }
                if c >= previous && c <= high { matched = true }
                member = 0
            } else if member == open && p[i + 1] == UInt8(ascii: ":") {
                switch matchClass(p, at: i, c) {
                case .malformed: return .failure(.init(.abortAll))
                case .notAClass:
                    if c == open { matched = true }
                case .member(let end, let inClass):
                    i = end
                    if inClass { matched = true }
                    member = 0
                }
            } else if c == member {
                matched = true
            }
            previous = member
            i += 1
            member = p[i]
        } while member != close
        if matched == negated || (pathname && c == slash) { return .failure(.init(.noMatch)) }
        return .success(i)
    }

    private struct BracketFailure: Error {
        let outcome: Outcome
        init(_ outcome: Outcome) { self.outcome = outcome }
    }

    private enum ClassMatch { case malformed, notAClass, member(end: Int, inClass: Bool) }

    /// A `[:name:]` class at `i` (its `[`): the index of its closing `]` and whether `c` is in it.
    private static func matchClass(_ p: Cursor, at i: Int, _ c: UInt8) -> ClassMatch {
        let nameStart = i + 2
        var end = nameStart
        while end < p.count && p[end] != close { end += 1 }
        guard end < p.count else { return .malformed }
        guard end - nameStart >= 1, p[end - 1] == UInt8(ascii: ":") else { return .notAClass }
        let name = String(decoding: (nameStart..<(end - 1)).map { p[$0] }, as: UTF8.self)
        guard let test = classes[name] else { return .malformed }
        return .member(end: end, inClass: test(c))
    }

    /// The POSIX classes, ASCII only, as C's ctype in the C locale.
    private static let classes: [String: @Sendable (UInt8) -> Bool] = {
        let digit: @Sendable (UInt8) -> Bool = { $0 >= 48 && $0 <= 57 }
        let upper: @Sendable (UInt8) -> Bool = { $0 >= 65 && $0 <= 90 }
        let lower: @Sendable (UInt8) -> Bool = { $0 >= 97 && $0 <= 122 }
        let alpha: @Sendable (UInt8) -> Bool = { upper($0) || lower($0) }
        let alnum: @Sendable (UInt8) -> Bool = { alpha($0) || digit($0) }
        let graph: @Sendable (UInt8) -> Bool = { $0 >= 33 && $0 <= 126 }
        return [
            "alnum": alnum, "alpha": alpha, "digit": digit, "upper": upper, "lower": lower, "graph": graph,
            "blank": { $0 == 32 || $0 == 9 },
            "cntrl": { $0 < 32 || $0 == 127 },
            "print": { $0 >= 32 && $0 <= 126 },
            "punct": { graph($0) && !alnum($0) },
            "space": { $0 == 32 || ($0 >= 9 && $0 <= 13) },
            "xdigit": { digit($0) || ($0 >= 65 && $0 <= 70) || ($0 >= 97 && $0 <= 102) },
        ]
    }()
}
