"""Processes and mounts of the power-cut test: the simulator, the ubiqfs devices, the
desktop's writer, and the janitor and watchdog that end every one of them, whatever happens."""

import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time

HANG_SECONDS = 300


def say(line=""):
    print(line, flush=True)


class Janitor:
    """Knows every process and mount the test made; `cleanup` ends them and removes the temp
    folder, on success, failure, Ctrl-C or SIGTERM alike."""

    def __init__(self, root):
        self.root = root
        self.pids = set()
        self.done = False
        self.lock = threading.Lock()

    def track(self, pid):
        with self.lock:
            self.pids.add(pid)

    def our_processes(self):
        """Our children and every process whose command line names the temp folder (the
        daemons, which leave our session)."""
        found = set(self.pids)
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    command = handle.read().decode(errors="replace")
            except OSError:
                continue
            if self.root in command:
                found.add(int(name))
        return found

    def kill_all(self):
        for pid in self.our_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def mounts(self):
        return [point for point, _ in mount_table() if point == self.root or point.startswith(self.root + "/")]

    def unmount_all(self):
        for _ in range(3):
            points = sorted(self.mounts(), key=len, reverse=True)
            if not points:
                return True
            for point in points:
                subprocess.run(["fusermount3", "-uz", point], capture_output=True)
            time.sleep(0.2)
        return not self.mounts()

    def cleanup(self):
        with self.lock:
            if self.done:
                return
            self.done = True
        self.kill_all()
        time.sleep(0.2)
        unmounted = self.unmount_all()
        for pid in list(self.pids):
            try:
                os.waitpid(pid, os.WNOHANG)
            except OSError:
                pass
        if unmounted:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            say(f"WARNING: mounts left under {self.root}: {self.mounts()}; the folder is kept")


def mount_table():
    """(mountpoint, fstype) of every mount, from /proc/self/mountinfo."""
    result = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            fstype = fields[fields.index("-") + 1]
            result.append((point, fstype))
    return result


def is_mounted(point, fstype=None):
    return any(p == point and (fstype is None or t == fstype) for p, t in mount_table())


class Watchdog(threading.Thread):
    """A hung mount would block the test for ever: with no progress for HANG_SECONDS, every
    process of the test is killed, which turns the hang into ENOTCONN errors and a failure."""

    def __init__(self, janitor):
        super().__init__(daemon=True)
        self.janitor = janitor
        self.last = time.monotonic()
        self.fired = False
        self.what = "starting"

    def progress(self, what):
        self.last = time.monotonic()
        self.what = what

    def run(self):
        while not self.janitor.done:
            time.sleep(5)
            if time.monotonic() - self.last > HANG_SECONDS and not self.fired:
                self.fired = True
                say(f"HANG: no progress for {HANG_SECONDS} s during: {self.what}; killing every process of the test")
                self.janitor.kill_all()


class Simulator:
    """powercutfs serving `mountpoint` from `backing`; `cut` is kill -9. Each start picks
    (by seed) whether the simulated journal also commits names by itself, and how often, as
    ext4's does every 5 s: a delete or rename nobody fsynced may then survive the cut while
    the state database's record of it does not."""

    INTERVALS = (None, 0.3, 1.0, 3.0)

    def __init__(self, binary, backing, mountpoint, log, janitor, seed):
        self.binary, self.backing, self.mountpoint, self.log_path, self.janitor = binary, backing, mountpoint, log, janitor
        self.process = None
        self.rng = random.Random(f"{seed}:simulator")
        self.interval = None

    def start(self):
        log = open(self.log_path, "ab")
        self.interval = self.rng.choice(self.INTERVALS)
        commits = ["--commit-interval", str(self.interval)] if self.interval else []
        self.process = subprocess.Popen([self.binary, *commits, self.backing, self.mountpoint], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.janitor.track(self.process.pid)
        deadline = time.monotonic() + 30
        while not is_mounted(self.mountpoint, "fuse.powercutfs"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"powercutfs did not mount {self.mountpoint}: {tail(self.log_path)}")
            time.sleep(0.05)

    def kill(self):
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)

    def reap(self):
        if self.process:
            self.process.wait(timeout=30)
        subprocess.run(["fusermount3", "-uz", self.mountpoint], capture_output=True)

    def stop(self):
        """A clean unmount (everything written back)."""
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        subprocess.run(["fusermount3", "-uz", self.mountpoint], capture_output=True)


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:]).strip()
    except OSError as error:
        return f"(cannot read {path}: {error})"


class Device:
    """One ubiqfs device: a mountpoint and a state dir on the same store."""

    def __init__(self, name, binary, mountpoint, state, store, janitor):
        self.name, self.binary, self.mountpoint, self.state, self.store, self.janitor = name, binary, mountpoint, state, store, janitor
        os.makedirs(mountpoint, exist_ok=True)

    def command(self, *arguments, timeout=180):
        return subprocess.run([self.binary, *arguments], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def mount(self, extra=()):
        result = self.command(
            "mount", self.mountpoint, "--store", self.store, "--state-dir", self.state, "--device", self.name,
            "--no-notify", "--poll-interval", "1", *extra,
        )
        if result.returncode != 0:
            raise RuntimeError(f"mount of {self.name} failed: {(result.stdout + result.stderr).strip()}")

    def pid(self):
        """The daemon, found by its command line (it left our session)."""
        marker = f"--state-dir={self.state}"
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    arguments = handle.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            if "mount" in arguments and "--foreground" in arguments and marker in arguments:
                return int(name)
        return None

    def sync(self):
        result = self.command("sync", self.mountpoint, "--wait")
        return result.returncode == 0, (result.stdout + result.stderr).strip()

    def status(self):
        result = self.command("status", "--json", self.mountpoint, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"status of {self.name} failed: {(result.stdout + result.stderr).strip()}")
        return json.loads(result.stdout)

    def versions(self, path):
        """The version numbers `ubiqfs versions` lists for a file ([] if it fails)."""
        result = self.command("versions", "--json", path, timeout=60)
        return [entry["version"] for entry in json.loads(result.stdout)] if result.returncode == 0 else []

    def unmount(self):
        if is_mounted(self.mountpoint):
            try:
                self.command("unmount", self.mountpoint)
            except subprocess.TimeoutExpired:
                pass
        pid = self.pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
        subprocess.run(["fusermount3", "-uz", self.mountpoint], capture_output=True)

    @property
    def log_path(self):
        return os.path.join(self.state, "ubiqfs.log")


class DesktopWriter(threading.Thread):
    """The second device writes into other/ during the rounds, so the laptop pulls (and
    applies, and downloads) while it is cut."""

    def __init__(self, root, seed):
        super().__init__(daemon=True)
        self.root = root
        self.rng = random.Random(f"{seed}:desktop")
        self.stopping = threading.Event()
        self.errors = []
        self.writes = 0

    def run(self):
        while not self.stopping.wait(self.rng.uniform(0.1, 0.6)):
            name = f"o{self.rng.randrange(25)}.dat"
            path = os.path.join(self.root, name)
            try:
                if self.rng.random() < 0.15 and os.path.exists(path):
                    os.unlink(path)
                else:
                    with open(path, "wb") as handle:
                        handle.write(self.rng.randbytes(self.rng.randint(0, 60000)))
                self.writes += 1
            except OSError as error:
                self.errors.append(f"{name}: {error}")

    def stop(self):
        self.stopping.set()
        self.join(timeout=30)


def read_text(path):
    try:
        with open(path, errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""
