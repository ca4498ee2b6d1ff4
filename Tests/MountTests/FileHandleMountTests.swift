import Foundation
import Testing

/// File handles (`name_to_handle_at`, `open_by_handle_at`), which NFS export and backup
/// tools use, survive the kernel forgetting the inode (xfstests generic/426, 467, 477).
@Suite(.serialized) struct FileHandleMountTests {
    /// Handles of a file, a folder and an unlinked file still open; every cache dropped;
    /// each handle opens again (a folder's ".." too), and a deleted file's is stale.
    @Test func handlesOpenAfterTheKernelForgetsAndGoStaleWhenDeleted() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            cat > handles.py <<'PY'
            \(Self.script)
            PY
            test "$(python3 handles.py \(mnt))" = ok
            """)
    }

    /// After `ubiqfs reset` the items are numbered again, so an old handle's inode number
    /// may now be another file's: the handle must go stale, never open that file.
    @Test func handlesFromBeforeAResetAreStale() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let mnt = try await fixture.mount("m")
        let state = fixture.root + "/m.state"
        try await fixture.sh("""
            cat > handle.py <<'PY'
            \(Self.resetScript)
            PY
            echo first > \(mnt)/first
            echo second > \(mnt)/second
            python3 handle.py save \(mnt)/second handle.bin
            # Same database: the handle opens its file.
            got=$(python3 handle.py open \(mnt) handle.bin)
            test "$got" = second || { echo "before the reset the handle opened: $got" >&2; exit 1; }
            rm \(mnt)/first
            \(bin) sync \(mnt) --wait
            \(bin) unmount \(mnt)
            \(bin) reset \(mnt) --state-dir \(state) > /dev/null
            \(bin) mount \(mnt) --store \(fixture.store) --state-dir \(state)
            # New items until one has the number "second" had (maybe "second" itself, pulled
            # again): the handle names an item of this database by number only.
            cat \(mnt)/second > /dev/null
            for i in $(seq 1 10); do
                test "$(sqlite3 \(state)/state.db "SELECT max(ino) FROM item")" -ge "$(cat handle.bin.ino)" && break
                echo new > \(mnt)/new$i
            done
            got=$(python3 handle.py open \(mnt) handle.bin)
            test "$got" = ESTALE || { echo "after the reset the handle opened: $got" >&2; exit 1; }
            """)
        try await fixture.unmount(mnt)
    }

    static let resetScript = #"""
        import ctypes, os, sys

        libc = ctypes.CDLL(None, use_errno=True)

        class FileHandle(ctypes.Structure):
            _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]

        if sys.argv[1] == "save":
            path, out = sys.argv[2], sys.argv[3]
            handle, mount_id = FileHandle(handle_bytes=128), ctypes.c_int()
            if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(handle), ctypes.byref(mount_id), 0) != 0:
                sys.exit(f"name_to_handle_at: {os.strerror(ctypes.get_errno())}")
            open(out, "wb").write(bytes(handle))
            open(out + ".ino", "w").write(str(os.stat(path).st_ino))
        else:
            mount, saved = sys.argv[2], sys.argv[3]
            handle = FileHandle.from_buffer_copy(open(saved, "rb").read())
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3")
            mount_fd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
            fd = libc.open_by_handle_at(mount_fd, ctypes.byref(handle), os.O_RDONLY)
            if fd < 0:
                print(os.strerror(ctypes.get_errno()) if ctypes.get_errno() != 116 else "ESTALE")
            else:
                print(os.read(fd, 100).decode().strip())
        """#

    static let script = #"""
        import ctypes, os, sys

        mount = sys.argv[1]
        libc = ctypes.CDLL(None, use_errno=True)

        class FileHandle(ctypes.Structure):
            _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]

        def handle_of(path):
            handle, mount_id = FileHandle(handle_bytes=128), ctypes.c_int()
            if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(handle), ctypes.byref(mount_id), 0) != 0:
                raise OSError(ctypes.get_errno(), f"name_to_handle_at {path}")
            return handle

        def open_handle(handle, flags):
            fd = libc.open_by_handle_at(mount_fd, ctypes.byref(handle), flags)
            if fd < 0:
                raise OSError(ctypes.get_errno(), "open_by_handle_at: " + os.strerror(ctypes.get_errno()))
            return fd

        def forget_everything():
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3")

        mount_fd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
        os.makedirs(f"{mount}/dir/sub", exist_ok=True)
        with open(f"{mount}/dir/sub/file", "w") as f:
            f.write("by handle")
        file_handle, dir_handle = handle_of(f"{mount}/dir/sub/file"), handle_of(f"{mount}/dir/sub")
        # An unlinked file still open elsewhere keeps its handle (generic/467).
        unlinked = os.open(f"{mount}/dir/gone", os.O_CREAT | os.O_RDWR, 0o644)
        os.write(unlinked, b"still here")
        gone_handle = handle_of(f"{mount}/dir/gone")
        os.unlink(f"{mount}/dir/gone")
        forget_everything()
        fd = open_handle(file_handle, os.O_RDONLY)
        assert os.read(fd, 100) == b"by handle", "content through the handle"
        os.close(fd)
        fd = open_handle(dir_handle, os.O_RDONLY | os.O_DIRECTORY)
        assert os.listdir(fd) == ["file"], os.listdir(fd)
        # ".." from a directory reached by handle (what NFS does to reconnect a path).
        parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        assert sorted(os.listdir(parent)) == ["sub"], sorted(os.listdir(parent))
        os.close(parent)
        os.close(fd)
        fd = open_handle(gone_handle, os.O_RDONLY)
        assert os.pread(fd, 100, 0) == b"still here"
        os.close(fd)
        os.close(unlinked)
        # Once deleted and unused, the handle is stale.
        os.unlink(f"{mount}/dir/sub/file")
        forget_everything()
        try:
            open_handle(file_handle, os.O_RDONLY)
            sys.exit("a handle of a deleted file still opens")
        except OSError as error:
            assert error.errno == 116, f"expected ESTALE, got {error}"
        print("ok")
        """#
}
