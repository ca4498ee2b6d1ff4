internal import CFuse3

/// The answer to a name lookup: the inode, its attributes, and how long the kernel may cache each.
public struct FuseEntry: Sendable {
    public var attributes: FuseAttributes
    /// Must change when an inode number is reused, so NFS handles to the old file go stale.
    public var generation: UInt64
    /// Seconds the kernel may keep the name -> inode mapping without asking again.
    public var entryTimeout: Double
    /// Seconds the kernel may keep the attributes without asking again.
    public var attributeTimeout: Double

    public init(attributes: FuseAttributes, generation: UInt64 = 0, entryTimeout: Double, attributeTimeout: Double) {
        self.attributes = attributes
        self.generation = generation
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
    }

    var entryParam: fuse_entry_param {
        var param = fuse_entry_param()
        param.ino = attributes.ino.rawValue
        param.generation = generation
        param.attr = attributes.statValue
        param.attr_timeout = attributeTimeout
        param.entry_timeout = entryTimeout
        return param
    }
}
