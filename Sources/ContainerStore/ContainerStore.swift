import ItemModel

/// What ubiqfs needs from a "cloud": five primitives that a local folder, S3 and most
/// object stores provide. Keys are relative to the container (see `ContainerLayout`).
/// Stores know nothing of files, items or FUSE.
public protocol ContainerStore: Sendable {
    /// For status output and logs; never contains secrets.
    var displayName: String { get }

    /// The object's bytes, or the given byte range of them. Throws `.notFound` if absent.
    func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8]

    /// `get` of a range, its bytes handed to `receive` in order as they arrive (pieces of
    /// any size, the range's bytes in all, fewer if the object ends sooner), so a caller
    /// uses the start of a long read before the end is here. For objects that never change
    /// (packs and blobs): a store may resume a broken transfer where it stopped.
    func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError)

    /// Creates or replaces an object atomically: readers see the old or the new bytes, never a mix.
    func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError)

    /// Creates the object only if no object has the key; false if one existed (another
    /// writer won). This is what makes journal commits a total order.
    func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool

    func exists(_ key: String) async throws(StoreError) -> Bool

    /// Keys that start with `prefix` and sort after `startAfter`, in ascending byte order, at most `limit`.
    func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String]

    /// `list` with each object's size.
    func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject]

    /// Removes an object; removing an absent object is not an error.
    func delete(_ key: String) async throws(StoreError)

    /// Calls `onChange` (from any thread) soon after a key under `prefix` may have been
    /// created, so other devices' commits are applied at once; nil if this store cannot
    /// tell (the caller polls). A hint only: the caller still reads the store to see what.
    func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)?

    /// Checks, before a mount uses the store, that it keeps the promises above (a network
    /// store may ignore conditional writes); throws a clear error if not.
    func verify() async throws(StoreError)

    /// Where the store counts its throttling replies; nil if it never gets any.
    var congestion: StoreCongestion? { get }
}

extension ContainerStore {
    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        nil
    }

    public func verify() async throws(StoreError) {}

    /// In one piece: for stores whose `get` answers at once (a local folder, memory).
    public func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
        try await receive(try await get(key, range: range))
    }

    public var congestion: StoreCongestion? { nil }

    /// Sizes unknown (-1): for stores that only wrap another (tests).
    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try await list(prefix: prefix, startAfter: startAfter, limit: limit).map { StoredObject(key: $0, size: -1) }
    }

    /// Every object under `prefix`, following pages.
    public func listAllObjects(prefix: String) async throws(StoreError) -> [StoredObject] {
        try await Self.allPages(after: nil, key: \.key) { cursor throws(StoreError) in
            try await listObjects(prefix: prefix, startAfter: cursor, limit: 1000)
        }
    }

    /// Pages of 1,000 until a short one.
    private static func allPages<T>(
        after start: String?, key: (T) -> String, _ page: (String?) async throws(StoreError) -> [T]
    ) async throws(StoreError) -> [T] {
        var all: [T] = []
        var cursor = start
        while true {
            let next = try await page(cursor)
            all += next
            guard next.count == 1000, let last = next.last else { return all }
            cursor = key(last)
        }
    }

    public func get(_ key: String) async throws(StoreError) -> [UInt8] {
        try await get(key, range: nil)
    }

    /// Every key under `prefix` after `startAfter`, following pages.
    public func listAll(prefix: String, startAfter: String? = nil) async throws(StoreError) -> [String] {
        try await Self.allPages(after: startAfter, key: { $0 }) { cursor throws(StoreError) in
            try await list(prefix: prefix, startAfter: cursor, limit: 1000)
        }
    }
}
