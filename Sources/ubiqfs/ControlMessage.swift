import CloudFileSystem
import FileCoordinator
import Foundation
import Inodes
import SyncEngine

/// One request on the control socket (a JSON line) and its reply (a JSON document).
/// The protocol is documented in docs/ARCHITECTURE.md so other programs can use it.
struct ControlRequest: Codable {
    var command: String
    var wait: Bool?
    /// A path inside the mount ("/docs"), for `watch`, `states`, `versions` and `restore`.
    var path: String?
    /// The same path's bytes in base64, when given: what names that are not UTF-8 need.
    var pathBytes: String?
    /// For `restore`: the journal sequence number of the version to bring back; for
    /// `trash-restore`, of the delete (nil: the newest at the path).
    var version: UInt64?
    /// For `restore`: k > 0 restores version `version.k`, an edit a merge took in.
    var input: Int?
    /// For `faults`: the new faults ("off" for none); nil only asks.
    var faults: String?
    /// For `remount`: read-only or read-write now.
    var readOnly: Bool?
    /// For `retention`: the new retention of versions and of the trash, in days (nil keeps it).
    var versionsDays: Double?
    var trashDays: Double?
    /// For `gc`: the grace period in seconds (nil: the container's, an hour).
    var graceSeconds: Double?
    /// For `passphrase`: add, change or remove; a passphrase that opens the container now,
    /// and the new one (the socket is its owner's alone, in the state dir).
    var action: String?
    var passphrase: String?
    var newPassphrase: String?
    /// For `states`: only these items of the folder (nil: all of them).
    var names: [String]?
    /// For `merge`: kinds turned on or off (`MergeKinds.names`); nil only asks.
    var merge: [String: Bool]?

    init(
        command: String, wait: Bool? = nil, path: String? = nil, version: UInt64? = nil, faults: String? = nil, readOnly: Bool? = nil,
        versionsDays: Double? = nil, trashDays: Double? = nil, graceSeconds: Double? = nil,
        action: String? = nil, passphrase: String? = nil, newPassphrase: String? = nil, pathBytes: [UInt8]? = nil
    ) {
        self.pathBytes = pathBytes.map { Data($0).base64EncodedString() }
        self.action = action
        self.passphrase = passphrase
        self.newPassphrase = newPassphrase
        self.graceSeconds = graceSeconds
        self.versionsDays = versionsDays
        self.trashDays = trashDays
        self.command = command
        self.wait = wait
        self.path = path
        self.version = version
        self.faults = faults
        self.readOnly = readOnly
    }
}

struct ControlResponse: Codable {
    var ok: Bool
    var error: String?
    var status: SyncStatus?
    var cacheBytes: Int64?
    var cacheBudget: Int64?
    var mountpoint: String?
    var stateDir: String?
    var pid: Int32?
    var locks: [LockEntry]?
    var versions: [VersionEntry]?
    /// The faults injected into store calls ("" for none).
    var storeFaults: String?
    /// Requests from the kernel since the mount, by kind (`KernelRequestCounts`).
    var kernelRequests: [String: UInt64]?
    var trash: [TrashListing]?
    var retention: RetentionListing?
    /// The kinds of file that merge, for `merge`.
    var merge: [String: Bool]?
    var collection: CollectionReport?
    /// Where a restored item is now.
    var path: String?
    /// For `states`: the folder's items, for file managers' emblems.
    var states: [ItemStateSummary]?
}

/// One entry of the shared trash, for `ubiqfs trash`.
struct TrashListing: Codable {
    var path: String
    var kind: String
    /// When the delete was committed, seconds since 1970, and by which device, in which record.
    var deleted: Double
    var device: String
    var seq: UInt64
    /// Bytes of the files in it, and how many items (the deleted one included).
    var size: Int64
    var items: Int
}

/// The container's retention, for `ubiqfs retention`.
struct RetentionListing: Codable {
    var versionsDays: Double
    var trashDays: Double
}

/// One earlier (or the current) version of a file, for `ubiqfs versions`.
struct VersionEntry: Codable {
    /// The journal sequence number that committed it; `restore --version` takes it.
    var version: UInt64
    var device: String
    /// Seconds since 1970.
    var time: Double
    var size: Int64
    var current: Bool
    /// k > 0: the k-th edit that the merge committed as `version` took in (`version.k`).
    var input: Int?
    /// On a merged version: the version it merged with, and how (`text`...).
    var mergedWith: UInt64?
    var mergeKind: String?
}

/// A coordinator table row with the item's path, for `ubiqfs locks`.
struct LockEntry: Codable {
    var inode: Inode
    var path: String
    var holders: [LeaseHolderInfo]
    var waiters: [LeaseHolderInfo]
}
