import Foundation

/// One line of the watch API (`ubiqfs watch`, docs/WATCH.md): something happened to an
/// item, here or on another device. Paths are inside the mount ("/docs/a.txt").
public struct ChangeEvent: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case created, modified, moved, deleted, conflict, downloaded, evicted, uploaded
        /// Another device's change waits until a file open for writing here is closed, or
        /// until it is merged with the edit made here.
        case held
        /// Another device's version and the edit made here were merged into the file.
        case merged
    }

    /// Which side made the change: a program on this device, or a commit from another.
    public enum Origin: String, Sendable, Codable {
        case local, remote
    }

    public var event: Kind
    public var path: String
    /// For `moved`: where the item was before.
    public var from: String?
    public var origin: Origin
    /// For `conflict`: what happened (which copy was made, which item was kept).
    public var detail: String?
    /// Seconds since 1970.
    public var time: Double

    public init(_ event: Kind, path: String, from: String? = nil, origin: Origin, detail: String? = nil, time: Date = Date()) {
        self.event = event
        self.path = path
        self.from = from
        self.origin = origin
        self.detail = detail
        self.time = (time.timeIntervalSince1970 * 1000).rounded() / 1000
    }

    /// Whether the event concerns `folder` or something below it (for a move: either end).
    public func concerns(_ folder: String) -> Bool {
        if folder == "/" { return true }
        func inside(_ path: String) -> Bool { path == folder || path.hasPrefix(folder + "/") }
        return inside(path) || from.map(inside) == true
    }
}
