import Foundation

/// The container root's own mode, mtime and xattrs: a record's and a checkpoint's `root`
/// field, the root's attributes from that record on. The root has no upsert (its id is the
/// same everywhere and it is never made or deleted), so they travel beside the operations;
/// a reader of an older version ignores the field and keeps its own.
public struct RootAttributes: Hashable, Sendable, Codable {
    /// Permission bits, as an item's `mode`.
    public var mode: UInt32
    /// Nanoseconds since the epoch; moves with a create, rename or delete at the top.
    public var mtime: Int64
    /// User xattrs, as an item's; nil when there are none.
    public var xattrs: [String: Data]?

    public init(mode: UInt32, mtime: Int64, xattrs: [String: Data]?) {
        self.mode = mode
        self.mtime = mtime
        self.xattrs = xattrs?.isEmpty == true ? nil : xattrs
    }
}
