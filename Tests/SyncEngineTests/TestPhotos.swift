import Foundation
import SeaweedFSFixture

/// Photos made with ImageMagick for the thumbnail tests: a flat colour each, so a
/// thumbnail's colour says which content it shows.
enum TestPhotos {
    struct ToolFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// A JPEG of one colour ("#RRGGBB"), with some noise so it is not tiny.
    static func jpeg(colour: String, width: Int = 1600, height: Int = 1000) async throws -> [UInt8] {
        let root = try TemporaryDirectories.make("ubiqfs-photo")
        let path = root + "/photo.jpg"
        _ = try await run("/usr/bin/convert", ["-size", "\(width)x\(height)", "xc:\(colour)", "-attenuate", "0.2", "+noise", "Uniform", "-quality", "92", path])
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The mean colour of an image's pixels, as (red, green, blue) in 0...255.
    static func meanColour(_ image: [UInt8]) async throws -> (Int, Int, Int) {
        let root = try TemporaryDirectories.make("ubiqfs-photo")
        let path = root + "/image"
        try Data(image).write(to: URL(fileURLWithPath: path))
        let text = try await run("/usr/bin/convert", [path, "-resize", "1x1!", "-depth", "8", "-format", "%[fx:int(255*r)] %[fx:int(255*g)] %[fx:int(255*b)]", "info:"])
        let values = text.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard values.count == 3 else { throw ToolFailure(description: "convert said \(text)") }
        return (values[0], values[1], values[2])
    }

    /// Width and height of an image, from ImageMagick.
    static func dimensions(_ image: [UInt8]) async throws -> (Int, Int) {
        let root = try TemporaryDirectories.make("ubiqfs-photo")
        let path = root + "/image"
        try Data(image).write(to: URL(fileURLWithPath: path))
        let text = try await run("/usr/bin/identify", ["-format", "%w %h", path])
        let values = text.split(separator: " ").compactMap { Int($0) }
        guard values.count == 2 else { throw ToolFailure(description: "identify said \(text)") }
        return (values[0], values[1])
    }

    static func run(_ tool: String, _ arguments: [String]) async throws -> String {
        try await offThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self)
            guard process.terminationStatus == 0 else { throw ToolFailure(description: "\(tool) \(arguments) failed: \(text)") }
            return text
        }
    }
}
