internal import CFuse3
internal import Glibc
internal import Synchronization

/// One kernel request. Reply exactly once, from any thread, at any time (a Task may reply later).
/// A request the kernel has read is always awaited, interrupted or not, so a reply is only lost
/// when the connection is gone (unmounted or aborted).
public final class FuseRequest: @unchecked Sendable {
    private struct State {
        var replied = false
        var interruptID: UInt64?
    }

    /// The fuse_req_t; freed by libfuse when the reply is sent, so only touched under `state`.
    private let raw: OpaquePointer
    /// Keeps fuse_session_destroy from running while this request can still reply.
    private let session: FuseSession
    private let state = Mutex(State())
    public let context: FuseContext
    public let operation: FuseOperationKind
    /// CLOCK_MONOTONIC at arrival, for the observer; 0 without one.
    private let started: UInt64

    init(raw: OpaquePointer, session: FuseSession, operation: FuseOperationKind) {
        self.raw = raw
        self.session = session
        self.operation = operation
        self.context = FuseContext(fuse_req_ctx(raw).pointee)
        if let observer = session.observer {
            started = Self.monotonicNanoseconds()
            observer.started(operation)
        } else {
            started = 0
        }
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    deinit {
        let unanswered = state.withLock { !$0.replied }
        guard unanswered else { return }
        let message = "FuseKit: request dropped without a reply; replying EIO\n"
        _ = message.utf8CString.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
        send(error: EIO) { fuse_reply_err($0, EIO) }
    }

    /// Whether the kernel asked to abandon this request (fuse_req_interrupted); false once replied.
    public var isInterrupted: Bool {
        state.withLock { $0.replied ? false : fuse_req_interrupted(raw) != 0 }
    }

    /// Registers a handler run if the kernel interrupts this request (a signal to the caller,
    /// e.g. Ctrl-C). Register before handing the request to a Task. The handler runs on a libfuse
    /// thread, or at once on this thread if the interrupt already arrived; it should cancel the
    /// work, whose owner then replies (typically EINTR). One handler per request.
    public func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        let id: UInt64? = state.withLock { state in
            guard !state.replied, state.interruptID == nil else { return nil }
            let id = FuseInterruptTable.register(raw, handler)
            state.interruptID = id
            return id
        }
        guard let id else {
            assertionFailure("FuseRequest.onInterrupt after reply or registered twice")
            return
        }
        FuseInterruptTable.finishRegistering(id)?()
    }

    /// Replies with an errno; 0 means success without data (fuse_reply_err).
    public func reply(error: Int32) {
        send(error: error) { fuse_reply_err($0, error) }
    }

    /// Answers lookup, mknod, mkdir, symlink and link; the kernel takes one lookup reference (fuse_reply_entry).
    public func reply(entry: FuseEntry) {
        var param = entry.entryParam
        send { fuse_reply_entry($0, &param) }
    }

    /// Answers a lookup miss so the kernel caches it for `timeout` seconds (entry with ino 0).
    public func replyNegativeEntry(timeout: Double) {
        var param = fuse_entry_param()
        param.ino = 0
        param.entry_timeout = timeout
        send { fuse_reply_entry($0, &param) }
    }

    /// Answers getattr and setattr (fuse_reply_attr).
    public func reply(attributes: FuseAttributes, timeout: Double) {
        var value = attributes.statValue
        send { fuse_reply_attr($0, &value, timeout) }
    }

    /// Answers open and opendir (fuse_reply_open).
    public func reply(open: FuseOpenOptions) {
        var info = open.fileInfo
        send { fuse_reply_open($0, &info) }
    }

    /// Answers create: a new entry (one lookup reference) and its open file (fuse_reply_create).
    public func reply(entry: FuseEntry, open: FuseOpenOptions) {
        var param = entry.entryParam
        var info = open.fileInfo
        send { fuse_reply_create($0, &param, &info) }
    }

    /// Answers read, getxattr and listxattr with bytes; copied before returning (fuse_reply_buf).
    public func reply(data: UnsafeRawBufferPointer) {
        send { fuse_reply_buf($0, data.baseAddress?.assumingMemoryBound(to: CChar.self), data.count) }
    }

    /// Same as `reply(data:)`.
    public func reply(bytes: [UInt8]) {
        bytes.withUnsafeBytes { reply(data: $0) }
    }

    /// Answers read with up to `count` bytes of the open file `descriptor` from `offset`
    /// (fewer only at its end). From two pages up, the file's pages are spliced into a pipe
    /// (`SplicePipe`) and libfuse splices them on into the reply, so the kernel copies each
    /// byte once, into the reply, instead of a read into memory and a write out of it (with
    /// splice writes wanted; else libfuse copies from the pipe). A file that cannot be read
    /// throws, and the request is not answered: the caller answers it with an errno. The
    /// caller keeps the file from changing until this returns.
    public func reply(file descriptor: Int32, offset: Int64, count: Int) throws(FuseError) {
        let pipe = count >= 2 * Int(getpagesize()) ? SplicePipe.take(holding: count, from: offset) : nil
        guard let pipe, let moved = try pipe.fill(from: descriptor, offset: offset, count: count) else {
            return reply(bytes: try Self.read(descriptor, offset: offset, count: count))
        }
        var source = fuse_bufvec()
        source.count = 1
        source.buf.size = moved
        source.buf.flags = FUSE_BUF_IS_FD
        source.buf.fd = pipe.readEnd
        send { raw in
            let result = fuse_reply_data(raw, &source, fuse_buf_copy_flags(rawValue: 0))
            // ENOENT: the request was interrupted and is gone, which is no failure.
            if result < 0 && result != -ENOENT {
                let message = "FuseKit: a read's reply was not sent (errno \(-result))\n"
                _ = message.utf8CString.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
            }
        }
        pipe.recycle()
    }

    /// `count` bytes of `descriptor` from `offset`, fewer only at its end.
    private static func read(_ descriptor: Int32, offset: Int64, count: Int) throws(FuseError) -> [UInt8] {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, done in
            while done < count {
                let n = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n > 0 { done += n } else if n == 0 { break } else if errno != EINTR { failure = errno; break }
            }
        }
        guard failure == 0 else { throw FuseError(code: .readFailed, message: "cannot read \(count) bytes at \(offset) for a reply", errno: failure) }
        return bytes
    }

    /// Answers write with the number of bytes taken (fuse_reply_write).
    public func reply(written: Int) {
        send { fuse_reply_write($0, written) }
    }

    /// Answers readlink with the target's bytes (no NUL; FuseKit adds it) (fuse_reply_readlink).
    public func reply(readlink target: [UInt8]) {
        let terminated = target + [0]
        terminated.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                send { fuse_reply_readlink($0, chars.baseAddress) }
            }
        }
    }

    /// Answers statfs (fuse_reply_statfs).
    public func reply(statfs: FuseStatfs) {
        var value = statfs.statvfsValue
        send { fuse_reply_statfs($0, &value) }
    }

    /// Answers getxattr or listxattr called with size 0: the size the value would need (fuse_reply_xattr).
    public func reply(xattrSize: Int) {
        send { fuse_reply_xattr($0, xattrSize) }
    }

    /// Answers getxattr or listxattr with `value` by their size protocol: a `size` of 0
    /// asks only the size; a buffer too small for the value is ERANGE.
    public func reply(xattr value: [UInt8], size: Int) {
        if size == 0 {
            reply(xattrSize: value.count)
        } else if size < value.count {
            reply(error: ERANGE)
        } else {
            reply(bytes: value)
        }
    }

    /// Ends a request that takes no answer (forget; FuseKit already does this for its forget callbacks).
    public func replyNone() {
        send { fuse_reply_none($0) }
    }

    /// Answers readdir with the entries added to `directory` (fuse_reply_buf).
    public func reply(directory: FuseDirectoryBuffer) {
        directory.withFilledBytes { reply(data: $0) }
    }

    /// The raw request for libfuse helpers that do not send anything (fuse_add_direntry ignores it).
    var rawForFormatting: OpaquePointer { raw }

    /// Sends one reply under the lock, so nothing touches `raw` after libfuse has freed it.
    private func send(error: Int32 = 0, _ reply: (OpaquePointer) -> Void) {
        let (sent, interruptID) = state.withLock { state -> (Bool, UInt64?) in
            guard !state.replied else { return (false, nil) }
            state.replied = true
            reply(raw)
            return (true, state.interruptID)
        }
        guard sent else {
            assertionFailure("FuseRequest replied twice")
            return
        }
        if let interruptID {
            FuseInterruptTable.remove(interruptID)
        }
        if started != 0, let observer = session.observer {
            observer.finished(operation, nanoseconds: Self.monotonicNanoseconds() &- started, error: error)
        }
    }
}
