import Foundation
import Glibc
import ItemModel

/// A private temporary folder (mode 0700) for one thumbnailer run, removed with all it holds.
struct WorkFolder {
    let path: String

    init() throws(ThumbnailError) {
        var template = Array((FileManager.default.temporaryDirectory.path + "/ubiqfs-thumbnailer-XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw ThumbnailError(code: .io, message: "cannot create a temporary folder", cause: SystemError(errno: errno, call: "mkdtemp"))
        }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes it; what cannot be removed stays (in the system's temporary folder).
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
