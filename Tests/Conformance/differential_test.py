#!/usr/bin/env python3
"""Differential test: the same seeded random operations on a native folder and on a
ubiqfs mount must give the same results, the same errors and the same trees; and the
mount's tree must stay the same after a remount and after evicting everything.

Run by Tests/Conformance/run.sh. UBIQFS_BIN is the binary (default .build/debug/ubiqfs);
UBIQFS_DIFF_EXAMPLES and UBIQFS_DIFF_STEPS scale it up by hand (defaults 25 and 60);
UBIQFS_DIFF_SEED picks another seed (hypothesis then explores differently).
"""
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from hypothesis import HealthCheck, Phase, seed, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("UBIQFS_BIN", os.path.join(ROOT, ".build/debug/ubiqfs"))
EXAMPLES = int(os.environ.get("UBIQFS_DIFF_EXAMPLES", "25"))
STEPS = int(os.environ.get("UBIQFS_DIFF_STEPS", "60"))
SEED = int(os.environ.get("UBIQFS_DIFF_SEED", "20261122"))

# A small namespace, so operations collide often: renames over files, rmdir of full folders.
NAMES = ["a", "b", "c.txt", "d", "d/e", "d/f.bin", "g", "g/h", "g/h/i"]
PATHS = st.sampled_from(NAMES)
DATA = st.binary(min_size=0, max_size=3000) | st.sampled_from([b"", b"x" * 70000, bytes(range(256)) * 40])


def run(*args, check=True):
    result = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=180)
    if check and result.returncode != 0:
        raise AssertionError(f"ubiqfs {' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result


class Container:
    """One container in a temporary folder, mounted, unmounted on every path."""

    mounted = set()

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="ubiqfs-test-", dir="/tmp")
        self.mountpoint = os.path.join(self.root, "mnt")
        self.native = os.path.join(self.root, "native")
        os.mkdir(self.mountpoint)
        os.mkdir(self.native)
        self.mount()

    def mount(self):
        run("mount", self.mountpoint, "--store", os.path.join(self.root, "store"),
            "--state-dir", os.path.join(self.root, "state"), "--device", "diff", "--poll-interval", "0.5")
        Container.mounted.add(self.mountpoint)

    def unmount(self):
        result = run("unmount", self.mountpoint, check=False)
        if result.returncode != 0:
            subprocess.run(["fusermount3", "-uz", self.mountpoint])
            raise AssertionError(f"unmount failed: {result.stderr}")
        Container.mounted.discard(self.mountpoint)

    def destroy(self):
        if self.mountpoint in Container.mounted:
            run("unmount", self.mountpoint, check=False)
            subprocess.run(["fusermount3", "-uz", self.mountpoint], capture_output=True)
            Container.mounted.discard(self.mountpoint)
        shutil.rmtree(self.root, ignore_errors=True)


def outcome(call):
    """What a call did: ("ok", value) or ("error", errno name)."""
    try:
        return ("ok", call())
    except OSError as error:
        return ("error", errno.errorcode.get(error.errno, str(error.errno)))


def xattrs_supported(path):
    try:
        os.setxattr(path, "user.probe", b"1")
        os.removexattr(path, "user.probe")
        return True
    except OSError:
        return False


def tree(root):
    """Every item under root: type, size, permission bits, content hash, target, xattrs,
    link count; and which paths are names of one file (hard links)."""
    items = {}
    names = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            info = os.lstat(path)
            if os.path.islink(path):
                items[relative] = ("symlink", os.readlink(path))
                continue
            xattrs = sorted((key, os.getxattr(path, key)) for key in os.listxattr(path) if key.startswith("user."))
            if os.path.isdir(path):
                items[relative] = ("dir", oct(info.st_mode & 0o7777), xattrs)
            else:
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                items[relative] = ("file", info.st_size, oct(info.st_mode & 0o7777), digest, xattrs, info.st_nlink)
                names.setdefault(info.st_ino, []).append(relative)
    items[" hard links"] = sorted(sorted(group) for group in names.values() if len(group) > 1)
    return items


class DifferentialMachine(RuleBasedStateMachine):
    """Each rule does one thing to both folders and requires the same outcome."""

    @initialize()
    def start(self):
        self.container = Container()
        self.sides = (self.container.native, self.container.mountpoint)
        self.xattrs = xattrs_supported(self.container.native)
        self.handles = []  # pairs of open descriptors (native, mount), with the path they were opened at

    def both(self, description, call):
        results = [outcome(lambda side=side: call(side)) for side in self.sides]
        assert results[0] == results[1], f"{description}: native {results[0]} but ubiqfs {results[1]}"
        return results[0]

    @rule(path=PATHS, offset=st.integers(0, 100_000), data=DATA)
    def write(self, path, offset, data):
        def call(side):
            fd = os.open(os.path.join(side, path), os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                return os.pwrite(fd, data, offset)
            finally:
                os.close(fd)
        self.both(f"write {len(data)} bytes at {offset} to {path}", call)

    @rule(path=PATHS, size=st.integers(0, 150_000))
    def truncate(self, path, size):
        self.both(f"truncate {path} to {size}", lambda side: os.truncate(os.path.join(side, path), size))

    @rule(source=PATHS, destination=PATHS)
    def rename(self, source, destination):
        self.both(f"rename {source} to {destination}", lambda side: os.rename(os.path.join(side, source), os.path.join(side, destination)))

    @rule(path=PATHS)
    def unlink(self, path):
        self.both(f"unlink {path}", lambda side: os.unlink(os.path.join(side, path)))

    @rule(source=PATHS, destination=PATHS)
    def link(self, source, destination):
        self.both(f"link {source} as {destination}", lambda side: os.link(os.path.join(side, source), os.path.join(side, destination), follow_symlinks=False))

    @rule(path=PATHS)
    def mkdir(self, path):
        self.both(f"mkdir {path}", lambda side: os.mkdir(os.path.join(side, path), 0o755))

    @rule(path=PATHS)
    def rmdir(self, path):
        self.both(f"rmdir {path}", lambda side: os.rmdir(os.path.join(side, path)))

    # Targets inside the tree only: the test writes through symlinks and must not escape.
    @rule(path=PATHS, link=st.sampled_from(["a", "d/e", "nowhere", "g/../c.txt"]))
    def symlink(self, path, link):
        self.both(f"symlink {path} -> {link}", lambda side: os.symlink(link, os.path.join(side, path)))

    @rule(path=PATHS)
    def readlink(self, path):
        self.both(f"readlink {path}", lambda side: os.readlink(os.path.join(side, path)))

    @rule(path=PATHS, mode=st.sampled_from([0o600, 0o644, 0o755, 0o700, 0o444, 0o750]))
    def chmod(self, path, mode):
        if os.path.islink(os.path.join(self.sides[0], path)):
            return  # a symlink has no mode of its own on Linux; chmod would follow it
        self.both(f"chmod {path} {oct(mode)}", lambda side: os.chmod(os.path.join(side, path), mode))

    @rule(path=PATHS)
    def read(self, path):
        def call(side):
            with open(os.path.join(side, path), "rb") as handle:
                return hashlib.sha256(handle.read()).hexdigest()
        self.both(f"read {path}", call)

    @rule(path=PATHS, value=st.binary(min_size=0, max_size=64))
    def setxattr(self, path, value):
        if self.xattrs:
            self.both(f"setxattr {path}", lambda side: os.setxattr(os.path.join(side, path), "user.note", value, follow_symlinks=False))

    @rule(path=PATHS)
    def removexattr(self, path):
        if self.xattrs:
            self.both(f"removexattr {path}", lambda side: os.removexattr(os.path.join(side, path), "user.note", follow_symlinks=False))

    @precondition(lambda self: len(self.handles) < 4)
    @rule(path=PATHS, append=st.booleans())
    def open_handle(self, path, append):
        flags = os.O_RDWR | (os.O_APPEND if append else 0)
        results = [outcome(lambda side=side: os.open(os.path.join(side, path), flags)) for side in self.sides]
        if results[0][0] == results[1][0] == "ok":
            self.handles.append((results[0][1], results[1][1], path))
            return
        for kind, value in results:
            if kind == "ok":
                os.close(value)
        assert results[0] == results[1], f"open {path}: native {results[0]} but ubiqfs {results[1]}"

    @precondition(lambda self: self.handles)
    @rule(index=st.integers(0, 3), offset=st.integers(0, 80_000), data=DATA)
    def write_handle(self, index, offset, data):
        native, mounted, path = self.handles[index % len(self.handles)]
        results = [outcome(lambda fd=fd: os.pwrite(fd, data, offset)) for fd in (native, mounted)]
        assert results[0] == results[1], f"pwrite on a handle of {path}: native {results[0]} but ubiqfs {results[1]}"

    @precondition(lambda self: self.handles)
    @rule(index=st.integers(0, 3))
    def read_handle(self, index):
        native, mounted, path = self.handles[index % len(self.handles)]
        results = [outcome(lambda fd=fd: hashlib.sha256(os.pread(fd, 1 << 20, 0)).hexdigest()) for fd in (native, mounted)]
        assert results[0] == results[1], f"read through a handle of {path} (maybe unlinked or renamed since): native {results[0]} but ubiqfs {results[1]}"

    @precondition(lambda self: self.handles)
    @rule(index=st.integers(0, 3), size=st.integers(0, 90_000))
    def truncate_handle(self, index, size):
        native, mounted, path = self.handles[index % len(self.handles)]
        results = [outcome(lambda fd=fd: os.ftruncate(fd, size)) for fd in (native, mounted)]
        assert results[0] == results[1], f"ftruncate on a handle of {path}: native {results[0]} but ubiqfs {results[1]}"

    @precondition(lambda self: self.handles)
    @rule(index=st.integers(0, 3))
    def fsync_and_close(self, index):
        native, mounted, path = self.handles.pop(index % len(self.handles))
        results = [outcome(lambda fd=fd: (os.fsync(fd), os.close(fd))[1]) for fd in (native, mounted)]
        assert results[0] == results[1], f"fsync and close of {path}: native {results[0]} but ubiqfs {results[1]}"

    @invariant()
    def same_tree(self):
        if hasattr(self, "container"):
            assert tree(self.sides[0]) == tree(self.sides[1]), "the trees differ"

    def teardown(self):
        if not hasattr(self, "container"):
            return
        try:
            for native, mounted, _ in self.handles:
                os.close(native)
                os.close(mounted)
            expected = tree(self.sides[0])
            assert tree(self.sides[1]) == expected, "the trees differ after closing every handle"
            # Uploaded, unmounted and mounted again: the same tree, from the state dir.
            run("sync", self.container.mountpoint, "--wait")
            self.container.unmount()
            self.container.mount()
            assert tree(self.sides[1]) == expected, "the tree differs after a remount"
            # Everything evicted: the same tree again, read back through placeholders.
            run("evict", self.container.mountpoint)
            assert tree(self.sides[1]) == expected, "the tree differs after evicting everything"
        finally:
            self.container.destroy()


DifferentialMachine.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=False,
    suppress_health_check=list(HealthCheck),
    # Shrinking mounts a container per try: by hand only (UBIQFS_DIFF_SHRINK=1).
    phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("UBIQFS_DIFF_SHRINK") else []),
    print_blob=True,
)
DiffTest = seed(SEED)(DifferentialMachine).TestCase

if __name__ == "__main__":
    try:
        unittest.main(argv=[sys.argv[0], "-v"])
    finally:
        for mountpoint in list(Container.mounted):
            subprocess.run(["fusermount3", "-uz", mountpoint], capture_output=True)
