internal import CFuse3
internal import Synchronization

/// Interrupt handlers by id. libfuse may call its interrupt callback after the request was
/// answered and its Swift object freed, so the C side carries only an integer id.
enum FuseInterruptTable {
    private struct Entry {
        var handler: @Sendable () -> Void
        /// Set while fuse_req_interrupt_func runs: it calls back at once, holding the request's
        /// lock, if the request was already interrupted; running the handler there could free the
        /// request under libfuse's feet, so the call is deferred until registration returns.
        var registering = true
        var firedWhileRegistering = false
    }

    private static let entries = Mutex<[UInt64: Entry]>([:])
    private static let lastID = Atomic<UInt64>(0)

    /// Registers `handler` and arms libfuse for `raw`; runs the handler now if already interrupted.
    static func register(_ raw: OpaquePointer, _ handler: @escaping @Sendable () -> Void) -> UInt64 {
        let id = lastID.add(1, ordering: .relaxed).newValue
        entries.withLock { $0[id] = Entry(handler: handler) }
        fuse_req_interrupt_func(raw, interruptCallback, UnsafeMutableRawPointer(bitPattern: UInt(id)))
        return id
    }

    /// Ends the registration window of `register`; returns the handler if it must run now.
    static func finishRegistering(_ id: UInt64) -> (@Sendable () -> Void)? {
        entries.withLock { entries in
            guard let entry = entries[id] else { return nil }
            if entry.firedWhileRegistering {
                entries[id] = nil
                return entry.handler
            }
            entries[id]?.registering = false
            return nil
        }
    }

    static func remove(_ id: UInt64) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    fileprivate static func fire(_ id: UInt64) {
        let handler: (@Sendable () -> Void)? = entries.withLock { entries in
            guard let entry = entries[id] else { return nil }
            if entry.registering {
                entries[id]?.firedWhileRegistering = true
                return nil
            }
            entries[id] = nil
            return entry.handler
        }
        handler?()
    }
}

/// libfuse's interrupt callback: capture-free, finds the handler by id.
private let interruptCallback: fuse_interrupt_func_t = { _, data in
    FuseInterruptTable.fire(UInt64(UInt(bitPattern: data)))
}
