import Foundation
import Testing

/// Direct I/O next to the page cache, as databases and xfstests generic/451 use it.
@Suite(.serialized) struct DirectIOMountTests {
    /// Cycles of one asynchronous `O_DIRECT` write of the whole file (`io_submit`, as
    /// `aio-dio-cycle-write` does) while two processes keep reading it through the page
    /// cache; after each cycle a fresh open must read what was written, not pages a reader
    /// cached while the write was under way (the kernel does not drop them after an
    /// asynchronous direct write), and a descriptor opened before must see it soon after.
    /// Both an `O_RDWR` and a write-only writer.
    @Test func aFreshOpenReadsWhatAsynchronousDirectWritesWrote() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            cat > cycle.py <<'PY'
            \(Self.cycleScript)
            PY
            python3 cycle.py \(mnt)/table.db rdwr 150
            python3 cycle.py \(mnt)/table.db wronly 150
            """)
    }

    static let cycleScript = #"""
        import ctypes, mmap, os, sys, time

        path, mode, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3])
        size = 655360
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        IO_SETUP, IO_DESTROY, IO_GETEVENTS, IO_SUBMIT = 206, 207, 208, 209

        class IOCB(ctypes.Structure):
            _fields_ = [("data", ctypes.c_uint64), ("key", ctypes.c_uint32), ("rw_flags", ctypes.c_int32),
                        ("opcode", ctypes.c_uint16), ("reqprio", ctypes.c_int16), ("fildes", ctypes.c_uint32),
                        ("buf", ctypes.c_uint64), ("nbytes", ctypes.c_uint64), ("offset", ctypes.c_int64),
                        ("reserved2", ctypes.c_uint64), ("flags", ctypes.c_uint32), ("resfd", ctypes.c_uint32)]

        class Event(ctypes.Structure):
            _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64), ("res", ctypes.c_int64), ("res2", ctypes.c_int64)]

        def check(result, what):
            if result < 0:
                raise OSError(ctypes.get_errno(), what)

        def wait_for(fd, pattern):
            # A descriptor already open sees the writes once the invalidation is sent.
            for _ in range(100):
                if os.pread(fd, size, 0) == pattern * size:
                    return True
                time.sleep(0.02)
            return False

        buffer = mmap.mmap(-1, size)
        address = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
        context = ctypes.c_ulong(0)
        check(libc.syscall(IO_SETUP, 1, ctypes.byref(context)), "io_setup")
        with open(path, "wb") as f:
            f.write(b"A" * size)
        readers = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                fd = os.open(path, os.O_RDONLY)
                while True:
                    os.pread(fd, size, 0)
            readers.append(pid)
        flags = (os.O_RDWR if mode == "rdwr" else os.O_WRONLY) | os.O_DIRECT
        held = os.open(path, os.O_RDONLY)
        try:
            for cycle in range(cycles):
                pattern = bytes([66 + cycle % 2])
                buffer.seek(0)
                buffer.write(pattern * size)
                fd = os.open(path, flags)
                iocb = IOCB(opcode=1, fildes=fd, buf=address, nbytes=size, offset=0)
                check(libc.syscall(IO_SUBMIT, context, 1, (ctypes.POINTER(IOCB) * 1)(ctypes.pointer(iocb))), "io_submit")
                event = Event()
                check(libc.syscall(IO_GETEVENTS, context, 1, 1, ctypes.byref(event), None), "io_getevents")
                os.close(fd)
                if event.res != size:
                    sys.exit(f"cycle {cycle}: the write returned {event.res}")
                # First a descriptor opened before (a fresh open would drop the pages for it).
                if not wait_for(held, pattern):
                    sys.exit(f"{mode} cycle {cycle}: a descriptor open before the write still reads old data after 2 s")
                fd = os.open(path, os.O_RDONLY)
                got = os.pread(fd, size, 0)
                os.close(fd)
                if got != pattern * size:
                    stale = sum(1 for page in range(0, size, 4096) if got[page:page + 1] != pattern)
                    sys.exit(f"{mode} cycle {cycle}: a fresh open reads old data in {stale} of {size // 4096} pages")

        finally:
            for pid in readers:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
        """#
}
