import Glibc
import ItemModel

extension Thumbnailers {
    /// Makes PNGs of `source` (a local file path without a meaningful extension; `name` is the
    /// item's real name for the type) for each requested size: decode once at the largest
    /// requested size with the matching thumbnailer's Exec, then derive the smaller sizes from
    /// that PNG with `scale` (a 4000×3000 JPEG took 0.23 s to decode at 512, its 512 PNG 0.08 s
    /// to scale to 256). Sizes whose PNG exceeds Thumbnail.maxBytes are left out. Results are
    /// stripped of text chunks and checked: a PNG whose longest edge exceeds its size is
    /// refused. `timeout` bounds the whole call. gdk-pixbuf-thumbnailer scales an image
    /// smaller than the size up to it, as it does for the desktop.
    public func make(source: String, name: [UInt8], sizes: [Int], timeout: Duration) async throws(ThumbnailError) -> [Int: [UInt8]] {
        guard let mimeType = mimeType(name: name), let entry = byMimeType[mimeType] else {
            throw ThumbnailError(code: .unsupported, message: "no thumbnailer handles \(String(decoding: name, as: UTF8.self))")
        }
        let wanted = try Self.checked(sizes)
        guard let largest = wanted.first else { return [:] }
        let deadline = ContinuousClock.now + timeout
        var png = try await run(entry, source: source, fileExtension: Self.fileExtension(of: name), size: largest, deadline: deadline)
        var result: [Int: [UInt8]] = [:]
        for size in wanted {
            if try PNGText.longestEdge(png) > size {
                png = try await scale(png, to: size, timeout: deadline - .now)
            }
            if png.count <= Thumbnail.maxBytes { result[size] = png }
        }
        return result
    }

    /// Scales a PNG down so its longest edge is `size` (gdk-pixbuf-thumbnailer takes a PNG as
    /// input), with the thumbnailer of image/png. A PNG already that small comes back as it
    /// is, stripped of its text chunks.
    public func scale(_ png: [UInt8], to size: Int, timeout: Duration) async throws(ThumbnailError) -> [UInt8] {
        _ = try Self.checked([size])
        let input = try PNGText.stripped(png)
        guard try PNGText.longestEdge(input) > size else { return input }
        guard let entry = byMimeType["image/png"] else { throw ThumbnailError(code: .unsupported, message: "no thumbnailer handles image/png") }
        let folder = try WorkFolder()
        defer { folder.remove() }
        let source = folder.path + "/input.png"
        try CacheFiles.writeAtomically(input, to: source)
        return try await run(entry, source: source, fileExtension: "png", size: size, deadline: .now + timeout)
    }

    /// One run of a thumbnailer at one size: its PNG, stripped and checked.
    func run(_ entry: ThumbnailerEntry, source: String, fileExtension: String?, size: Int, deadline: ContinuousClock.Instant) async throws(ThumbnailError) -> [UInt8] {
        guard deadline > .now else {
            throw ThumbnailError(code: .timedOut, message: "no time left to make a thumbnail of \(source) at size \(size)")
        }
        let folder = try WorkFolder()
        defer { folder.remove() }
        let work = folder.path + "/work"
        try CacheFiles.makeFolder(work)
        let sandboxed = await sandbox.isUsed(timeout: deadline - .now)
        let (input, output) = sandbox.paths(workFolder: work, fileExtension: fileExtension, sandboxed: sandboxed)
        var arguments = entry.arguments(input: input, output: output, size: size)
        if sandboxed {
            arguments = sandbox.prefix(workFolder: work, source: source, fileExtension: fileExtension) + arguments
        } else if symlink(source, input) != 0 {
            throw ThumbnailError(code: .io, message: "cannot link \(input) to \(source)", cause: SystemError(errno: errno, call: "symlink"))
        }
        logger.trace("thumbnailer", metadata: ["command": "\(arguments.joined(separator: " "))"])
        let exit = try await ChildProcess.run(arguments, errorFile: folder.path + "/errors", timeout: deadline - .now)
        let made = work + "/" + ThumbnailerSandbox.outputName
        guard exit.status == 0, let png = CacheFiles.read(made), !png.isEmpty else {
            throw ThumbnailError(code: .thumbnailerFailed, message: "\(entry.path) made no thumbnail of \(source) (exit status \(exit.status)): \(exit.errors)")
        }
        let stripped = try PNGText.stripped(png)
        let edge = try PNGText.longestEdge(stripped)
        guard edge <= size else { throw ThumbnailError(code: .tooLarge, message: "\(entry.path) made a thumbnail \(edge) pixels long for size \(size)") }
        return stripped
    }

    /// The sizes asked for, largest first; each must be a freedesktop size.
    static func checked(_ sizes: [Int]) throws(ThumbnailError) -> [Int] {
        for size in sizes where !Thumbnail.sizes.contains(size) {
            throw ThumbnailError(code: .invalid, message: "\(size) is not a freedesktop thumbnail size (\(Thumbnail.sizes.sorted()))")
        }
        return Set(sizes).sorted(by: >)
    }

    /// What follows the last dot of the name (not a leading one), if it can be a file name's
    /// end; the thumbnailer may need it to tell the type.
    static func fileExtension(of name: [UInt8]) -> String? {
        let base = name.split(separator: UInt8(ascii: "/")).last ?? []
        guard let dot = base.lastIndex(of: UInt8(ascii: ".")), dot != base.startIndex else { return nil }
        let tail = base[(dot + 1)...]
        guard !tail.isEmpty, let text = String(validating: tail, as: UTF8.self) else { return nil }
        return text
    }
}
