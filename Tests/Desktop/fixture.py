"""Real mounts for the desktop tests: the ubiqfs binary of this tree, two devices on
one local folder store, always unmounted (even when a test fails)."""

import os
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("UBIQFS_BINARY") or os.path.join(ROOT, ".build", "debug", "ubiqfs")


def ubiqfs(*args, check=True, env=None):
    return subprocess.run([BINARY, *args], check=check, capture_output=True, text=True, timeout=120, env=env)


class Mount:
    """A device of the store: `path` is its mountpoint."""

    def __init__(self, base, store, name, env=None, options=()):
        self.path = os.path.join(base, name)
        self.state = os.path.join(base, name + "-state")
        os.makedirs(self.path)
        if "--thumbnail-cache" not in options:
            # Its own thumbnail cache, never the user's: a test that looks at a desktop's
            # cache names that one.
            options = ("--thumbnail-cache", os.path.join(base, name + "-cache", "thumbnails"), *options)
        ubiqfs("mount", self.path, "--store", store, "--state-dir", self.state, "--device", name, *options, env=env)

    def file(self, name):
        return os.path.join(self.path, name)

    def state_of(self, name):
        return os.getxattr(self.file(name), "user.ubiqfs.state").decode()

    def sync(self):
        ubiqfs("sync", self.path, "--wait")

    def unmount(self):
        if os.path.ismount(self.path):
            result = ubiqfs("unmount", self.path, check=False)
            if os.path.ismount(self.path):
                subprocess.run(["fusermount3", "-uz", self.path], check=False)
            return result


class Devices:
    """Two devices, A and B, on a fresh store in a temporary folder."""

    def __init__(self, env=None, b_options=(), a_options=()):
        self.base = tempfile.mkdtemp(prefix="ubiqfs-test-desktop-")
        self.store = os.path.join(self.base, "store")
        self.mounts = []
        try:
            self.a = self._mount("a", env, a_options)
            self.b = self._mount("b", env, b_options)
        except Exception:
            self.close()
            raise

    def _mount(self, name, env, options=()):
        mount = Mount(self.base, self.store, name, env, options)
        self.mounts.append(mount)
        return mount

    def wait(self, condition, timeout=30.0, what="a condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def close(self):
        for mount in self.mounts:
            mount.unmount()
        shutil.rmtree(self.base, ignore_errors=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, size, seed=b"x"):
    with open(path, "wb") as f:
        f.write((seed * 4096)[:4096] * (size // 4096) + seed * (size % 4096))


def make_conflict(devices, name="report.txt"):
    """Both devices change `name` while B does not sync: B's version becomes a copy."""
    a, b = devices.a, devices.b
    ubiqfs("pause", b.path)
    write(a.file(name), 70 * 1024, b"a")
    a.sync()
    write(b.file(name), 72 * 1024, b"b")
    ubiqfs("resume", b.path)
    b.sync()
    devices.wait(lambda: any("conflict from" in n for n in os.listdir(b.path)), what="a conflict copy on B")


def make_states(devices):
    """On device B: a placeholder, a local file, a pinned file, a file with a conflict
    copy and a file that stays on B only (a `.nosync` name). Returns their names."""
    a, b = devices.a, devices.b
    for name in ("cloud.txt", "local.txt", "pinned.txt", "report.txt"):
        write(a.file(name), 64 * 1024)
    a.sync()
    devices.wait(lambda: all(os.path.exists(b.file(n)) for n in ("cloud.txt", "local.txt", "pinned.txt", "report.txt")),
                 what="B to see A's files")
    with open(b.file("local.txt"), "rb") as f:
        f.read()
    os.setxattr(b.file("pinned.txt"), "user.ubiqfs.pinned", b"1")
    devices.wait(lambda: b.state_of("pinned.txt") == "local", what="the pinned file to download")
    make_conflict(devices)
    write(b.file("draft.nosync"), 64 * 1024)
    devices.wait(lambda: b.state_of("cloud.txt") == "placeholder" and b.state_of("local.txt") == "local",
                 what="the placeholder and the local file")
    devices.wait(lambda: b.state_of("draft.nosync") == "ignored", what="the .nosync file to be ignored")
    return {"placeholder": "cloud.txt", "local": "local.txt", "pinned": "pinned.txt", "conflict": "report.txt",
            "ignored": "draft.nosync"}


def devices_with_states():
    """Two devices with `make_states` done; (devices, names). Unmounted on failure."""
    devices = Devices()
    try:
        return devices, make_states(devices)
    except Exception:
        devices.close()
        raise
