import Foundation
import Testing
@testable import Thumbnails

/// Reading .thumbnailer files and globs2, and expanding Exec lines, on made-up data folders.
@Suite struct ThumbnailerEntryTests {
    @Test func execIsSplitAsGLibSplitsIt() {
        #expect(ShellWords.split("/usr/bin/t -s %s %u %o") == ["/usr/bin/t", "-s", "%s", "%u", "%o"])
        #expect(ShellWords.split(#"sh -c 'a "b" $c' "d \"e\" \x" f\ g # comment"#) == ["sh", "-c", #"a "b" $c"#, #"d "e" \x"#, "f g"])
        #expect(ShellWords.split("a 'unterminated") == nil)
        #expect(ShellWords.split(#"a "unterminated"#) == nil)
        #expect(ShellWords.split("") == [])
    }

    @Test func placeholdersAreExpanded() throws {
        let contents = """
            # a comment
            [Desktop Entry]
            Exec=wrong
            [Thumbnailer Entry]
            TryExec=/bin/sh
            Exec = /bin/t -s %s %u %o %i 100%% %x '%s in quotes'
            MimeType=image/x-a;image/x-b\\;c;;
            Exec[de]=/bin/german
            """
        let entry = try #require(ThumbnailerEntry(path: "/x.thumbnailer", contents: contents))
        #expect(entry.mimeTypes == ["image/x-a", "image/x-b;c"])
        let arguments = entry.arguments(input: "/tmp/in put.jpg", output: "/tmp/out.png", size: 256)
        #expect(arguments == ["/bin/t", "-s", "256", "file:///tmp/in%20put.jpg", "/tmp/out.png", "/tmp/in put.jpg", "100%", "x", "256 in quotes"])
    }

    @Test func unusableEntriesAreSkipped() {
        #expect(ThumbnailerEntry(path: "a", contents: "[Thumbnailer Entry]\nMimeType=image/png;\n") == nil)
        #expect(ThumbnailerEntry(path: "a", contents: "[Thumbnailer Entry]\nExec=/bin/t %i %o\n") == nil)
        #expect(ThumbnailerEntry(path: "a", contents: "[Other]\nExec=/bin/t %i %o\nMimeType=image/png;\n") == nil)
        #expect(ThumbnailerEntry(path: "a", contents: "[Thumbnailer Entry]\nTryExec=/nonexistent/t\nExec=/bin/t %i %o\nMimeType=image/png;\n") == nil)
        #expect(ThumbnailerEntry(path: "a", contents: "[Thumbnailer Entry]\nTryExec=sh\nExec=/bin/t %i %o\nMimeType=image/png;\n") != nil)
    }

    @Test func globsChooseLiteralThenWeightThenLength() {
        let (globs, noGlobs) = MimeGlobs.parse("""
            # comment
            50:text/x-makefile:makefile
            50:application/gzip:*.gz
            50:application/x-compressed-tar:*.tar.gz
            50:text/x-c++src:*.C:cs
            50:text/x-csrc:*.c
            40:text/x-weak:*.w
            60:text/x-strong:*.w
            50:application/x-trash:*~
            50:application/x-troff-man:*.[1-9]
            50:image/x-gone:__NOGLOBS__
            """)
        #expect(noGlobs == ["image/x-gone"])
        let mime = MimeGlobs(globs: globs)
        let cases: [(String, String?)] = [
            ("Makefile", "text/x-makefile"), ("a.tar.gz", "application/x-compressed-tar"), ("a.gz", "application/gzip"), ("a.C", "text/x-c++src"),
            ("a.c", "text/x-csrc"), ("A.TAR.GZ", "application/x-compressed-tar"), ("x.w", "text/x-strong"), ("notes~", "application/x-trash"),
            ("ls.1", "application/x-troff-man"), ("ls.x", nil), ("folder/a.gz", "application/gzip"), ("", nil),
        ]
        for (name, expected) in cases {
            #expect(mime.mimeType(name: Array(name.utf8)) == expected, "\(name)")
        }
        #expect(mime.mimeType(name: [0xFF, 0xFE] + Array(".gz".utf8)) == "application/gzip")
    }

    /// The first data folder wins: its thumbnailer for a type, and its `__NOGLOBS__`.
    @Test func earlierDataFoldersWin() throws {
        let scratch = try Scratch("folders")
        try scratch.write("user/mime/globs2", Array("50:image/x-gone:__NOGLOBS__\n50:image/x-mine:*.mine\n".utf8))
        try scratch.write("user/thumbnailers/a.thumbnailer", Array("[Thumbnailer Entry]\nExec=/user/t %i %o\nMimeType=image/x-mine;image/png;\n".utf8))
        try scratch.write("system/mime/globs2", Array("50:image/x-gone:*.gone\n50:image/png:*.png\n".utf8))
        try scratch.write("system/thumbnailers/b.thumbnailer", Array("[Thumbnailer Entry]\nExec=/system/t %i %o\nMimeType=image/png;image/x-gone;\n".utf8))
        let thumbnailers = Thumbnailers(dataDirectories: [scratch.path + "/user", scratch.path + "/missing", scratch.path + "/system"])
        #expect(thumbnailers.mimeType(name: Array("a.mine".utf8)) == "image/x-mine")
        #expect(thumbnailers.mimeType(name: Array("a.png".utf8)) == "image/png")
        #expect(thumbnailers.mimeType(name: Array("a.gone".utf8)) == nil)
        #expect(thumbnailers.mimeType(name: Array("a.txt".utf8)) == nil)
        #expect(thumbnailers.byMimeType["image/png"]?.command.first == "/user/t")
    }

    @Test func fileExtensionsAreTakenFromTheName() {
        #expect(Thumbnailers.fileExtension(of: Array("IMG.JPG".utf8)) == "JPG")
        #expect(Thumbnailers.fileExtension(of: Array("a.tar.gz".utf8)) == "gz")
        #expect(Thumbnailers.fileExtension(of: Array(".hidden".utf8)) == nil)
        #expect(Thumbnailers.fileExtension(of: Array("none".utf8)) == nil)
        #expect(Thumbnailers.fileExtension(of: Array("dot.".utf8)) == nil)
        #expect(Thumbnailers.fileExtension(of: Array("bad.".utf8) + [0xFF]) == nil)
    }
}
