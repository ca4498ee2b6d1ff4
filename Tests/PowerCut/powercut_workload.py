"""One seeded round of file operations on a folder, each reported to the model once the
system acknowledged it: create, overwrite (O_TRUNC), pwrite, append, truncate, safe save,
rename (new name, over a file, across folders, folders too), unlink, mkdir, rmdir, chmod,
fsync of files and fsyncdir of folders. A chore may run beside it (power_cut_test's ubiqfs
rounds): the workload then keeps going until the chore's cut, and leaves alone the file a
restore is changing."""

import contextlib
import os
import time

MAX_FILES = 40
MAX_DIRS = 12
MAX_DEPTH = 3
PACE = 0.05  # seconds between the operations that go on while a chore runs


def write_fully(fd, data, offset=None):
    """pwrite (or write, for O_APPEND) until every byte is taken."""
    done = 0
    while done < len(data):
        chunk = data[done:]
        done += os.write(fd, chunk) if offset is None else os.pwrite(fd, chunk, offset + done)


class Workload:
    def __init__(self, root, model, rng, progress):
        self.root = root
        self.model = model
        self.rng = rng
        self.progress = progress
        self.excluded = set()  # identities a restore is changing: not written, moved or replaced

    def fsync(self, fd, path):
        """fsync, reported with the step it started after (a restore acknowledged while it
        ran is not promised by it)."""
        began = self.model.seq
        os.fsync(fd)
        self.model.fsynced(path, began)

    def full(self, path):
        return os.path.join(self.root, path) if path else self.root

    def files(self):
        return sorted(p for p, e in self.model.tree.items() if e[0] == "file")

    def folders(self):
        return [""] + sorted(p for p, e in self.model.tree.items() if e[0] == "dir")

    def content(self):
        size = self.rng.choice([0, self.rng.randint(1, 4096), self.rng.randint(1, 32768), self.rng.randint(1, 200_000)])
        return self.rng.randbytes(size)

    def fresh_name(self, folder, prefix, suffix=""):
        for _ in range(50):
            name = f"{prefix}{self.rng.randrange(100)}{suffix}"
            path = f"{folder}/{name}" if folder else name
            if path not in self.model.tree:
                return path
        return None

    # Operations. Each does the system calls, then tells the model what was acknowledged.

    def create(self):
        folder = self.rng.choice(self.folders())
        path = self.fresh_name(folder, "f", self.rng.choice([".txt", ".bin", ""]))
        if path is None or len(self.files()) >= MAX_FILES:
            return
        mode = self.rng.choice([0o644, 0o600, 0o640])
        fd = os.open(self.full(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            self.model.created(path, mode)
            self.write_all(fd, path, self.content(), 0, "write")
            if self.rng.random() < 0.3:
                self.fsync(fd, path)
        finally:
            os.close(fd)

    def write_all(self, fd, path, data, offset, what):
        write_fully(fd, data, offset)
        old = self.model.current[self.model.tree[path][2]]
        new = old[:offset] + b"\0" * max(0, offset - len(old)) + data + old[offset + len(data):]
        if data:
            self.model.wrote(path, new, f"{what} {len(data)} bytes at {offset}")

    @contextlib.contextmanager
    def opened(self, flags):
        """A file picked at random, opened with `flags` and closed after: (path, fd), or
        (None, None) when there is no file yet."""
        path = self.pick_file()
        if path is None:
            yield None, None
            return
        fd = os.open(self.full(path), flags)
        try:
            yield path, fd
        finally:
            os.close(fd)

    def overwrite(self):
        with self.opened(os.O_WRONLY | os.O_TRUNC) as (path, fd):
            if path is None:
                return
            self.model.wrote(path, b"", "open O_TRUNC")
            self.write_all(fd, path, self.content(), 0, "write")
            if self.rng.random() < 0.3:
                self.fsync(fd, path)

    def pwrite(self):
        with self.opened(os.O_WRONLY) as (path, fd):
            if path is None:
                return
            size = len(self.model.current[self.model.tree[path][2]])
            offset = self.rng.randint(0, size + 4096)
            data = self.rng.randbytes(self.rng.choice([1, self.rng.randint(1, 8192), self.rng.randint(1, 65536)]))
            self.write_all(fd, path, data, offset, "pwrite")

    def dsync_write(self):
        """A write-only O_DSYNC pwrite: acknowledged, it is durable as after fdatasync
        (ubiqfs serves write-only opens around the page cache, where the kernel sends no
        fsync after such a write, so the daemon syncs it itself)."""
        with self.opened(os.O_WRONLY | os.O_DSYNC) as (path, fd):
            if path is None:
                return
            size = len(self.model.current[self.model.tree[path][2]])
            offset = self.rng.randint(0, size)
            self.write_all(fd, path, self.rng.randbytes(self.rng.randint(1, 8192)), offset, "O_DSYNC pwrite")
            self.model.fsynced(path)

    def append(self):
        with self.opened(os.O_WRONLY | os.O_APPEND) as (path, fd):
            if path is None:
                return
            data = self.rng.randbytes(self.rng.randint(1, 20000))
            write_fully(fd, data)
            old = self.model.current[self.model.tree[path][2]]
            self.model.wrote(path, old + data, f"append {len(data)} bytes")
            if self.rng.random() < 0.2:
                self.fsync(fd, path)

    def truncate(self):
        path = self.pick_file()
        if path is None:
            return
        old = self.model.current[self.model.tree[path][2]]
        size = self.rng.choice([0, self.rng.randint(0, len(old) + 1), len(old) + self.rng.randint(1, 10000)])
        os.truncate(self.full(path), size)
        self.model.wrote(path, old[:size] + b"\0" * max(0, size - len(old)), f"truncate to {size}")

    def safe_save(self):
        """An editor's save: temp file written and fsynced, renamed over the original, the
        folder fsynced."""
        target = self.pick_file()
        if target is None or self.rng.random() < 0.2:
            target = self.fresh_name(self.rng.choice(self.folders()), "s", ".doc")
            if target is None or len(self.files()) >= MAX_FILES:
                return
        folder = os.path.dirname(target)
        temporary = self.fresh_name(folder, ".save-", ".tmp")
        if temporary is None:
            return
        mode = self.model.tree[target][1] if target in self.model.tree else 0o644
        fd = os.open(self.full(temporary), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            self.model.created(temporary, mode)
            self.write_all(fd, temporary, self.content(), 0, "write")
            self.fsync(fd, temporary)
        finally:
            os.close(fd)
        os.rename(self.full(temporary), self.full(target))
        self.model.renamed(temporary, target)
        self.fsync_folder(folder)

    def rename_file(self):
        source = self.pick_file()
        if source is None:
            return
        if self.rng.random() < 0.4 and len(self.files()) > 1:
            target = self.rng.choice([f for f in self.free_files() if f != source] or [None])
        else:
            target = self.fresh_name(self.rng.choice(self.folders()), "r", ".txt")
        if target is None:
            return
        os.rename(self.full(source), self.full(target))
        self.model.renamed(source, target)

    def rename_folder(self):
        folders = self.folders()[1:]
        if not folders:
            return
        source = self.rng.choice(folders)
        if self.holds_excluded(source):
            return
        parents = [f for f in self.folders() if f != source and not f.startswith(source + "/")]
        parent = self.rng.choice(parents)
        depth = parent.count("/") + 1 if parent else 0
        below = max([p.count("/") - source.count("/") for p in self.model.tree if p.startswith(source + "/")] + [0])
        if depth + below + 1 > MAX_DEPTH:
            return
        target = self.fresh_name(parent, "m")
        if target is None:
            return
        os.rename(self.full(source), self.full(target))
        self.model.renamed(source, target)

    def unlink(self):
        path = self.pick_file()
        if path is None:
            return
        os.unlink(self.full(path))
        self.model.removed(path, "unlink")

    def mkdir(self):
        folders = [f for f in self.folders() if (f.count("/") + 1 if f else 0) < MAX_DEPTH]
        if len(folders) > MAX_DIRS:
            return
        path = self.fresh_name(self.rng.choice(folders), "d")
        if path is None:
            return
        mode = self.rng.choice([0o755, 0o700, 0o750])
        os.mkdir(self.full(path), mode)
        self.model.made_folder(path, mode)

    def rmdir(self):
        empty = [f for f in self.folders()[1:] if not any(p.startswith(f + "/") for p in self.model.tree)]
        if not empty:
            return
        path = self.rng.choice(empty)
        os.rmdir(self.full(path))
        self.model.removed(path, "rmdir")

    def chmod(self):
        paths = sorted(self.model.tree)
        if not paths:
            return
        path = self.rng.choice(paths)
        kind = self.model.tree[path][0]
        mode = self.rng.choice([0o755, 0o700, 0o750] if kind == "dir" else [0o644, 0o600, 0o640, 0o755])
        os.chmod(self.full(path), mode)
        self.model.changed_mode(path, mode)

    def fsync_file(self):
        path = self.pick_file()
        if path is None:
            return
        fd = os.open(self.full(path), os.O_RDONLY if self.rng.random() < 0.25 else os.O_RDWR)
        try:
            self.fsync(fd, path)
        finally:
            os.close(fd)

    def fsync_folder(self, path=None):
        if path is None:
            path = self.rng.choice(self.folders())
        fd = os.open(self.full(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            began = self.model.seq
            os.fsync(fd)
            self.model.fsynced_folder(path, began)
        finally:
            os.close(fd)

    def free_files(self):
        return [p for p in self.files() if self.model.tree[p][2] not in self.excluded]

    def holds_excluded(self, folder):
        """Whether a file a restore is changing lies under `folder`: `ubiqfs restore` finds its
        file by path, so no folder above it may move meanwhile."""
        return any(e[2] in self.excluded for p, e in self.model.tree.items() if p.startswith(folder + "/"))

    def pick_file(self):
        files = self.free_files()
        return self.rng.choice(files) if files else None

    OPERATIONS = [
        ("create", 14), ("overwrite", 8), ("pwrite", 8), ("append", 8), ("truncate", 5), ("safe_save", 8),
        ("rename_file", 8), ("rename_folder", 2), ("unlink", 5), ("mkdir", 5), ("rmdir", 3), ("chmod", 6),
        ("fsync_file", 10), ("fsync_folder", 6), ("dsync_write", 4),
    ]
    NAMES = [name for name, _ in OPERATIONS]
    WEIGHTS = [weight for _, weight in OPERATIONS]

    def run(self, count, end_with_fsync, before=None, more=None):
        """At least `count` random operations, then more while `more()` says so (paced: a
        chore runs beside them), the last an fsync if `end_with_fsync`; `before(index)` is
        called before each. An unexpected error is returned (and ends the round)."""
        index = 0
        while index < count - 1 or (more and more()):
            if index >= count - 1:
                time.sleep(PACE)
            error = self.operation(index, self.rng.choices(self.NAMES, self.WEIGHTS)[0], before)
            if error:
                return error
            index += 1
        last = self.rng.choice(["fsync_file", "fsync_folder", "safe_save"]) if end_with_fsync else self.rng.choices(self.NAMES, self.WEIGHTS)[0]
        return self.operation(index, last, before)

    def operation(self, index, name, before):
        if before:
            before(index)
        self.progress(f"operation {name}")
        try:
            getattr(self, name)()
        except OSError as error:
            return f"operation {name} failed after op #{self.model.seq}: {error}"
        return None
