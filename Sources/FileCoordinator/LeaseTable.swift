#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Inodes

/// The coordinator's whole state: every key that has a holder or a waiter, and nothing
/// else (idle keys are dropped, so memory follows activity, not the number of items).
/// It lives only inside `FileCoordinator`'s Mutex; every method runs with it held and
/// none of them blocks, allocates on the uncontended path, or wakes anybody: wake-ups
/// are collected and fired by the caller after unlocking.
struct LeaseTable {
    struct Holder {
        var token: UInt64
        var owner: String
        var access: LeaseAccess
        var since: Double

        var info: LeaseHolderInfo { LeaseHolderInfo(owner: owner, access: access.name, since: since) }
    }

    struct Waiter {
        var token: UInt64
        var owner: String
        var access: LeaseAccess
        var since: Double
        var wakeup: LeaseWakeup

        var info: LeaseHolderInfo { LeaseHolderInfo(owner: owner, access: access.name, since: since) }
    }

    /// Holders of one key. The first is stored inline so that the common single holder
    /// needs no array storage.
    struct Holders {
        private(set) var first: Holder?
        private(set) var rest: [Holder] = []

        var isEmpty: Bool { first == nil }
        /// An exclusive holder is always alone, so looking at the first suffices.
        var isExclusive: Bool { first?.access == .exclusive }

        func admits(_ access: LeaseAccess) -> Bool {
            switch access {
            case .shared: !isExclusive
            case .exclusive: isEmpty
            }
        }

        mutating func append(_ holder: Holder) {
            if first == nil { first = holder } else { rest.append(holder) }
        }

        /// Keeps grant order, so the snapshot lists the oldest holder first.
        mutating func remove(token: UInt64) {
            if first?.token == token {
                first = rest.isEmpty ? nil : rest.removeFirst()
            } else if let index = rest.firstIndex(where: { $0.token == token }) {
                rest.remove(at: index)
            } else {
                assertionFailure("lease token \(token) released twice or never granted")
            }
        }

        var all: [Holder] { first.map { [$0] + rest } ?? [] }
    }

    struct Entry {
        var holders = Holders()
        /// FIFO: a request is granted only when nobody queued before it, so writers
        /// are not starved by a stream of readers.
        var waiters: [Waiter] = []

        var isIdle: Bool { holders.isEmpty && waiters.isEmpty }

        func admits(_ access: LeaseAccess) -> Bool { waiters.isEmpty && holders.admits(access) }

        /// Grants the head of the queue while it is compatible: one exclusive waiter, or
        /// every consecutive shared waiter at the head together.
        mutating func grantWaiters(into wakeups: inout [LeaseWakeup]) {
            var now: Double?
            while let head = waiters.first, holders.admits(head.access) {
                waiters.removeFirst()
                let since = now ?? LeaseTable.wallClock()
                now = since
                holders.append(Holder(token: head.token, owner: head.owner, access: head.access, since: since))
                wakeups.append(head.wakeup)
                if head.access == .exclusive { break }
            }
        }
    }

    private(set) var entries: [Inode: Entry] = [:]
    private var lastToken: UInt64 = 0

    /// A fresh identity for one acquisition; it names the acquisition's holders and its waiter.
    mutating func newToken() -> UInt64 {
        lastToken &+= 1
        return lastToken
    }

    /// Grants `requests[start...]` in order for as long as each is free and nobody
    /// queues for it; returns the index of the first one that must wait (or `count`).
    mutating func grant(
        _ requests: [LeaseRequest], from start: Int, upTo end: Int? = nil,
        token: UInt64, owner: String, since: Double
    ) -> Int {
        let end = end ?? requests.count
        var index = start
        while index < end {
            let request = requests[index]
            let holder = Holder(token: token, owner: owner, access: request.access, since: since)
            if let slot = entries.index(forKey: request.key) {
                guard entries.values[slot].admits(request.access) else { return index }
                entries.values[slot].holders.append(holder)
            } else {
                var entry = Entry()
                entry.holders.append(holder)
                entries[request.key] = entry
            }
            index += 1
        }
        return index
    }

    /// Queues `waiter` for `key` (which must exist: the caller just failed to get it).
    mutating func enqueue(_ waiter: Waiter, for key: Inode) {
        entries[key, default: Entry()].waiters.append(waiter)
    }

    /// Drops `token`'s hold on each key and grants whoever can go next.
    mutating func release(
        _ requests: ArraySlice<LeaseRequest>, token: UInt64, wakeups: inout [LeaseWakeup]
    ) {
        for request in requests {
            guard let slot = entries.index(forKey: request.key) else {
                assertionFailure("released lease \(request.key) that has no entry")
                continue
            }
            entries.values[slot].holders.remove(token: token)
            settle(slot, wakeups: &wakeups)
        }
    }

    /// Takes a still-queued waiter out (timeout or cancellation); nil if it was granted
    /// in the meantime. Its departure may let the waiters behind it through.
    mutating func withdraw(token: UInt64, key: Inode, wakeups: inout [LeaseWakeup]) -> Waiter? {
        guard let slot = entries.index(forKey: key),
              let position = entries.values[slot].waiters.firstIndex(where: { $0.token == token })
        else { return nil }
        let waiter = entries.values[slot].waiters.remove(at: position)
        settle(slot, wakeups: &wakeups)
        return waiter
    }

    func holders(of key: Inode) -> [LeaseHolderInfo] {
        entries[key]?.holders.all.map(\.info) ?? []
    }

    func snapshot() -> [LeaseTableEntry] {
        entries.sorted { $0.key < $1.key }.map { key, entry in
            LeaseTableEntry(key: key, holders: entry.holders.all.map(\.info), waiters: entry.waiters.map(\.info))
        }
    }

    private mutating func settle(_ slot: Dictionary<Inode, Entry>.Index, wakeups: inout [LeaseWakeup]) {
        entries.values[slot].grantWaiters(into: &wakeups)
        if entries.values[slot].isIdle { entries.remove(at: slot) }
    }

    /// Wall-clock seconds since 1970, for `since` in snapshots (only ever displayed).
    static func wallClock() -> Double { Date().timeIntervalSince1970 }
}
