/// renameat2(2) flags passed through by the kernel.
public struct FuseRenameFlags: OptionSet, Sendable, Hashable {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// RENAME_NOREPLACE: fail with EEXIST if the target exists.
    public static let noReplace = FuseRenameFlags(rawValue: 1)
    /// RENAME_EXCHANGE: swap source and target atomically.
    public static let exchange = FuseRenameFlags(rawValue: 2)
    /// RENAME_WHITEOUT: leave a whiteout at the source (overlayfs).
    public static let whiteout = FuseRenameFlags(rawValue: 4)
}
