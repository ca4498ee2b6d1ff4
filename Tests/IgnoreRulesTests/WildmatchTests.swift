@testable import IgnoreRules
import Testing

/// Git's glob semantics, case by case (from git's own test table, t3070). The oracle test
/// (`GitOracleTests`) checks the same against `git check-ignore` on generated patterns.
@Suite struct WildmatchTests {
    struct Case: CustomStringConvertible, Sendable {
        let pattern: String, text: String, matches: Bool
        var description: String { "\(pattern) ~ \(text)" }
        init(_ pattern: String, _ text: String, _ matches: Bool) { (self.pattern, self.text, self.matches) = (pattern, text, matches) }
    }

    static let pathnameCases: [Case] = [
        Case("foo", "foo", true), Case("bar", "foo", false), Case("", "", true),
        Case("???", "foo", true), Case("??", "foo", false),
        Case("*", "foo", true), Case("f*", "foo", true), Case("*f", "foo", false), Case("*foo*", "foo", true),
        Case("*ob*a*r*", "foobar", true), Case("*ab", "aaaaaaabababab", true),
        Case("foo\\*", "foo*", true), Case("foo\\*bar", "foobar", false), Case("f\\\\oo", "f\\oo", true),
        Case("*[al]?", "ball", true), Case("[ten]", "ten", false), Case("**[!te]", "ten", true), Case("**[!ten]", "ten", false),
        Case("t[a-g]n", "ten", true), Case("t[!a-g]n", "ten", false), Case("t[!a-g]n", "ton", true), Case("t[^a-g]n", "ton", true),
        Case("a[]]b", "a]b", true), Case("a[]-]b", "a-b", true), Case("a[]-]b", "a]b", true), Case("a[]-]b", "aab", false),
        Case("a[]a-]b", "aab", true), Case("]", "]", true),
        // Folders: single stars stop at `/`, `**` spans them only as a whole component.
        Case("foo*bar", "foo/baz/bar", false), Case("foo**bar", "foo/baz/bar", false), Case("foo**bar", "foobazbar", true),
        Case("foo/**/bar", "foo/baz/bar", true), Case("foo/**/bar", "foo/bar", true), Case("foo/**/**/bar", "foo/baz/bar", true),
        Case("foo/**/bar", "foo/b/a/z/bar", true), Case("**/foo", "foo", true), Case("**/foo", "XXX/foo", true),
        Case("**/foo", "bar/baz/foo", true), Case("*/foo", "bar/baz/foo", false), Case("**/bar*", "foo/bar/baz", false),
        Case("**/bar/*", "deep/foo/bar/baz", true), Case("**/bar/*", "deep/foo/bar/baz/", false), Case("**/bar/**", "deep/foo/bar/baz/", true),
        Case("**/bar/*", "deep/foo/bar", false), Case("**/bar/**", "deep/foo/bar/", true), Case("**/bar**", "foo/bar/baz", false),
        Case("*/bar/**", "deep/foo/bar/baz/x", false), Case("**/bar/*/*", "deep/foo/bar/baz/x", true),
        Case("foo?bar", "foo/bar", false), Case("foo[/]bar", "foo/bar", false), Case("*/*/*", "foo/bba/arr", true),
        Case("**/**/**", "foo/bb/aa/rr", true), Case("*X*i", "abcXdefXghi", true), Case("*/*X*/*/*i", "ab/cXd/efXg/hi", true),
        Case("**/*X*/**/*i", "ab/cXd/efXg/hi", true), Case("a/**", "a", false), Case("a/**", "a/b/c", true),
        // Classes; a malformed class or an open bracket matches nothing.
        Case("[[:alpha:]][[:digit:]][[:upper:]]", "a1B", true), Case("[[:digit:][:upper:][:space:]]", "a", false),
        Case("[[:digit:][:upper:][:space:]]", "A", true), Case("[[:digit:][:upper:][:space:]]", "1", true),
        Case("[[:digit:][:upper:][:spaci:]]", "1", false), Case("[[:space:]]", " ", true),
        Case("[a-c[:digit:]x-z]", "5", true), Case("[a-c[:digit:]x-z]", "b", true), Case("[a-c[:digit:]x-z]", "q", false),
        Case("[", "[", false), Case("[ab", "[ab", false), Case("[!", "[!", false),
    ]

    @Test(arguments: pathnameCases) func matchesAsGitDoes(_ c: Case) {
        #expect(Wildmatch.matches(Array(c.pattern.utf8), Array(c.text.utf8), pathname: true) == c.matches)
    }

    /// A name pattern (no `/` in it) is matched without `pathname`: there, stars span `/`.
    @Test func withoutPathnameStarsSpanSlashes() {
        #expect(Wildmatch.matches(Array("foo*bar".utf8), Array("foo/baz/bar".utf8), pathname: false))
        #expect(Wildmatch.matches(Array("foo?bar".utf8), Array("foo/bar".utf8), pathname: false))
    }

    /// A pattern that cannot match gives up once the text is spent: many stars do not
    /// retry every split of the text.
    @Test func starsDoNotBacktrackForever() {
        let pattern = Array(String(repeating: "*a", count: 30).utf8) + Array("b".utf8)
        let text = Array(String(repeating: "a", count: 200).utf8)
        #expect(!Wildmatch.matches(pattern, text, pathname: true))
    }
}
