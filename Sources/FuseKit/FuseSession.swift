import Inodes
internal import CFuse3
internal import Glibc
internal import Synchronization

/// Owns a libfuse low-level session: create, mount, run the multi-threaded loop, send cache
/// notifications, unmount.
///
/// Shutdown order: `run` returns, the filesystem drains its Tasks, `unmount()`, then the last
/// reference goes away (deinit destroys the session and calls `FuseOperations.destroy`).
/// Every `FuseRequest` keeps its session alive, so a late reply never reaches a destroyed one.
/// The session retains `operations` until deinit: hold the session weakly from `operations`
/// (or not at all) to avoid a cycle.
public final class FuseSession: @unchecked Sendable {
    private struct State {
        var mounted = false
        /// The thread inside `run`, to wake with a signal in `requestExit`.
        var runThread: pthread_t?
    }

    /// struct fuse_session *, valid until deinit.
    private let raw: OpaquePointer
    private let dispatcher: Unmanaged<FuseDispatcher>
    private let state = Mutex(State())
    /// Told of every request and reply (`FuseRequestObserver`); set at creation, before
    /// any request can arrive.
    let observer: (any FuseRequestObserver)?

    /// Creates the session. `arguments` are a command line: argv[0] then libfuse and mount
    /// options, e.g. `["ubiqfs", "-o", "default_permissions,fsname=x,subtype=ubiqfs"]`
    /// (fuse_session_new prints unknown options on stderr and fails).
    public init(operations: any FuseOperations, arguments: [String], observer: (any FuseRequestObserver)? = nil) throws(FuseError) {
        self.observer = observer
        let dispatcher = Unmanaged.passRetained(FuseDispatcher(operations: operations))
        var ops = FuseLowLevelOperations.make()
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let session = argv.withUnsafeMutableBufferPointer { argv in
            var args = cfuse_args_init(Int32(argv.count), argv.baseAddress)
            defer { fuse_opt_free_args(&args) }
            return cfuse_session_new(&args, &ops, dispatcher.toOpaque())
        }
        guard let session else {
            dispatcher.release()
            throw FuseError(code: .sessionFailed, message: "fuse_session_new rejected \(arguments)")
        }
        self.raw = session
        self.dispatcher = dispatcher
        dispatcher.takeUnretainedValue().session = self
    }

    deinit {
        unmount()
        fuse_session_destroy(raw)
        dispatcher.release()
    }

    /// Mounts at `mountpoint` (fuse_session_mount, which reports only -1 and prints the reason
    /// on stderr). Nothing is served until `run`.
    public func mount(at mountpoint: String) throws(FuseError) {
        let outcome = state.withLock { state -> FuseError? in
            guard !state.mounted else {
                return FuseError(code: .mountFailed, message: "already mounted", errno: EBUSY)
            }
            guard fuse_session_mount(raw, mountpoint) == 0 else {
                return FuseError(code: .mountFailed, message: "cannot mount at \(mountpoint) (reason on stderr)")
            }
            state.mounted = true
            return nil
        }
        if let outcome {
            throw outcome
        }
    }

    /// Serves requests on up to `maxThreads` libfuse threads (fuse_session_loop_mt, clone_fd off)
    /// until the filesystem is unmounted from outside, `requestExit` is called, or SIGINT, SIGTERM
    /// or SIGHUP arrives. Call from a plain thread (main or a Thread), never from a Task.
    ///
    /// For the duration it resets INT/TERM/HUP to SIG_DFL, installs libfuse's handlers and
    /// unblocks the three signals on this thread; libfuse's worker threads block them, and a
    /// signal only ends the loop promptly when this thread receives it, so other threads of the
    /// process should block them too. Removing the handlers restores SIG_DFL for the three and
    /// SIGPIPE (unless SIGPIPE was ignored before).
    public func run(maxThreads: Int) throws(FuseError) {
        let signals = [SIGINT, SIGTERM, SIGHUP]
        for number in signals {
            signal(number, SIG_DFL)
        }
        guard fuse_set_signal_handlers(raw) == 0 else {
            throw FuseError(code: .signalHandlersFailed, message: "fuse_set_signal_handlers failed")
        }
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in signals {
            sigaddset(&unblock, number)
        }
        var previousMask = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &unblock, &previousMask)
        state.withLock { $0.runThread = pthread_self() }

        let result = cfuse_session_loop_mt(raw, UInt32(clamping: max(1, maxThreads)), 0)

        state.withLock { $0.runThread = nil }
        pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        fuse_remove_signal_handlers(raw)
        if result < 0 {
            throw FuseError(code: .loopFailed, message: "fuse_session_loop_mt failed", errno: -result)
        }
    }

    /// Makes `run` return promptly, from any thread, even if no request arrives; safe to call
    /// more than once, and before `run` (which then returns at once). It marks the session
    /// exited (fuse_session_exit) and sends SIGHUP to the thread inside `run`, whose libfuse
    /// handler interrupts the loop's wait; the loop then cancels its idle workers. Requests
    /// already being served finish normally. The mount stays until `unmount()`; meanwhile new
    /// requests wait in the kernel.
    public func requestExit() {
        fuse_session_exit(raw)
        state.withLock { state in
            if let thread = state.runThread {
                pthread_kill(thread, SIGHUP)
            }
        }
    }

    /// Unmounts (lazily, like fusermount3 -uz) and closes the device (fuse_session_unmount).
    /// Idempotent. While `run` is still serving it only asks the loop to exit instead, since
    /// closing the device under running workers is unsafe; call it again after `run` returns.
    public func unmount() {
        let running = state.withLock { state -> Bool in
            guard state.runThread == nil else { return true }
            if state.mounted {
                fuse_session_unmount(raw)
                state.mounted = false
            }
            return false
        }
        if running {
            requestExit()
        }
    }

    /// Drops cached data of `ino` from `offset` for `length` bytes (0 = to the end), and its
    /// attributes; a negative `offset` drops only the attributes
    /// (fuse_lowlevel_notify_inval_inode). Never call from inside a related callback or while
    /// holding a lock one needs. Returns 0 or -errno (-ENOENT: nothing cached).
    public func invalidateInode(_ ino: Inode, offset: Int64, length: Int64) -> Int32 {
        fuse_lowlevel_notify_inval_inode(raw, ino.rawValue, off_t(offset), off_t(length))
    }

    /// Drops the cached name `name` in `parent` and the parent's attributes
    /// (fuse_lowlevel_notify_inval_entry). Same rules and result as `invalidateInode`.
    public func invalidateEntry(parent: Inode, name: [UInt8]) -> Int32 {
        withCName(name) { fuse_lowlevel_notify_inval_entry(raw, parent.rawValue, $0, name.count) }
    }

    /// Like `invalidateEntry`, and tells inotify watchers that `child` was deleted
    /// (fuse_lowlevel_notify_delete). Same rules and result as `invalidateInode`.
    public func notifyDelete(parent: Inode, child: Inode, name: [UInt8]) -> Int32 {
        withCName(name) { fuse_lowlevel_notify_delete(raw, parent.rawValue, child.rawValue, $0, name.count) }
    }

    /// libfuse sends namelen + 1 bytes, so the name needs its NUL.
    private func withCName(_ name: [UInt8], _ body: (UnsafePointer<CChar>) -> Int32) -> Int32 {
        (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
