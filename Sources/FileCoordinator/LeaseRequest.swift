import Inodes

/// One item's inode and the access wanted on it.
public struct LeaseRequest: Sendable, Hashable {
    public var key: Inode
    public var access: LeaseAccess

    public init(_ key: Inode, _ access: LeaseAccess) {
        self.key = key
        self.access = access
    }

    /// Sorts by key and merges duplicates (exclusive wins), because keys are taken in
    /// ascending order and a key may be held only once per acquisition. The common
    /// cases (one key, or keys already strictly ascending) return the input unchanged,
    /// so they allocate nothing.
    static func normalized(_ requests: [LeaseRequest]) -> [LeaseRequest] {
        guard requests.count > 1 else { return requests }
        var ascending = true
        for i in 1..<requests.count where requests[i - 1].key >= requests[i].key {
            ascending = false
            break
        }
        if ascending { return requests }
        let sorted = requests.sorted { $0.key < $1.key }
        var merged: [LeaseRequest] = []
        merged.reserveCapacity(sorted.count)
        for request in sorted {
            if let last = merged.last, last.key == request.key {
                if request.access == .exclusive { merged[merged.count - 1].access = .exclusive }
            } else {
                merged.append(request)
            }
        }
        return merged
    }
}
