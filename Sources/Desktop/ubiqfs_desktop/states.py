"""Item states for a file manager's view, one request per folder.

A view asks about every item it shows. Three xattr reads per item would be 30,000
FUSE round trips for a folder of 10,000; instead the first question about a folder
fetches the states of all its items in one control request (`states`), and later
questions are answered from memory. The watch API tells which items changed: those
are asked again, a few names per request. States that change without an event
(downloading, uploading, pending) are polled while a view shows them.

No threads: GNOME Files' Python runs background threads only while its main thread
runs Python, so a thread waiting for the daemon could wait for ever. Everything here
is called from the host's one thread; the watch connections are non-blocking sockets
the host's loop watches (`Watch.fileno`). Nothing here reads file content.
"""

import json
import os
import socket
import time

from . import control, emblems
from .mounts import MountTable


class _Folder:
    def __init__(self):
        self.entries = {}
        self.fetched_at = None
        self.failed_at = -1e9
        self.stale = set()


class Watch:
    """A mount's watch stream on a non-blocking socket, read when the host's loop says
    data is there."""

    def __init__(self, mountpoint, timeout):
        self.mountpoint = mountpoint
        self.open = False
        self._buffer = b""
        path = control.socket_path(mountpoint)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(path)
            self._sock.sendall(json.dumps({"command": "watch", "path": "/"}).encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = self._sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
            line, _, self._buffer = reply.partition(b"\n")
            if not json.loads(line or b"{}").get("ok"):
                raise control.ControlError(f"the daemon of {mountpoint} refused to watch")
            self._sock.setblocking(False)
            self.open = True
        except (OSError, ValueError) as error:
            self._sock.close()
            raise control.ControlError(f"cannot watch {mountpoint}: {error}") from error

    def fileno(self):
        return self._sock.fileno()

    def events(self):
        """The events that arrived; `open` is False once the daemon ended the stream."""
        while self.open:
            try:
                chunk = self._sock.recv(1 << 16)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                break
            self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        found = []
        for line in lines:
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
        return found

    def close(self):
        self.open = False
        self._sock.close()


class StateCache:
    # A folder whose daemon did not answer is not asked again for this long: a view
    # asks about each of its items, and must not wait for each.
    RETRY_AFTER = 10.0

    def __init__(self, mounts=None, ttl=30.0, timeout=2.0, on_watch=None):
        """`on_watch(watch)` is told of each new `Watch` (a mount's first item looked up,
        or again after a watch ended), for the host's loop to read."""
        self.mounts = mounts or MountTable()
        self._on_watch = on_watch
        self._ttl = ttl
        self._timeout = timeout
        self._folders = {}  # (mountpoint, folder) -> _Folder
        self._watches = {}  # mountpoint -> Watch
        self._retry_watch = {}  # mountpoint -> when a failed watch may be tried again
        # Control requests made, for tests and the benchmark.
        self.requests = 0

    def locate(self, path):
        """(mountpoint, folder inside the mount, name), or None outside a mount and for
        a mount's root."""
        found = self.mounts.locate(path)
        if found is None or found[1] == "/":
            return None
        mountpoint, inside = found
        folder, name = os.path.split(inside)
        return mountpoint, folder, name

    def lookup(self, path):
        """The state of `path` (a dict of the daemon's `states` reply), or None outside a
        mount, for an unknown item, or when the daemon does not answer."""
        where = self.locate(path)
        if where is None:
            return None
        mountpoint, folder, name = where
        if self._on_watch is not None:
            watch = self.watch(mountpoint)
            if watch is not None:
                self._on_watch(watch)
        key = (mountpoint, folder)
        entry = self._folders.get(key)
        if entry is None:
            entry = self._folders[key] = _Folder()
        now = time.monotonic()
        if now - entry.failed_at < self.RETRY_AFTER:
            return None
        if entry.fetched_at is None or now - entry.fetched_at >= self._ttl:
            self._fetch(key, None)
        elif name in entry.stale:
            self._fetch(key, sorted(entry.stale))
        return entry.entries.get(name)

    def forget(self, path):
        """Drops what is known of `path` (after an action on it) so it is asked again."""
        where = self.locate(path)
        if where is None:
            return
        mountpoint, folder, name = where
        entry = self._folders.get((mountpoint, folder))
        if entry is not None:
            entry.stale.add(name)
        self._expire(mountpoint, folder.rstrip("/") + "/" + name)

    def _expire(self, mountpoint, inside):
        for (point, other), value in self._folders.items():
            if point == mountpoint and (other == inside or other.startswith(inside.rstrip("/") + "/")):
                value.fetched_at = None

    def _fetch(self, key, names):
        """Asks the daemon; on failure the folder shows no emblems (and is asked again)."""
        mountpoint, folder = key
        entry = self._folders[key]
        self.requests += 1
        try:
            reply = control.request(mountpoint, "states", timeout=self._timeout, path=folder, names=names)
            states = {item["name"]: item for item in reply.get("states") or []}
        except control.ControlError:
            entry.entries, entry.fetched_at, entry.failed_at = {}, None, time.monotonic()
            entry.stale.clear()
            return
        if names is None:
            entry.entries, entry.fetched_at = states, time.monotonic()
            entry.stale.clear()
            return
        for name in names:
            if name in states:
                entry.entries[name] = states[name]
            else:
                entry.entries.pop(name, None)
            entry.stale.discard(name)

    # Changes: the watch API marks items stale; transient states are polled.

    def watch(self, mountpoint):
        """A new `Watch` of the mount for the host's loop to read, or None if one runs
        already or the last attempt failed less than 5 s ago."""
        current = self._watches.get(mountpoint)
        if (current is not None and current.open) or time.monotonic() < self._retry_watch.get(mountpoint, 0):
            return None
        try:
            self._watches[mountpoint] = Watch(mountpoint, self._timeout)
        except control.ControlError:
            self._retry_watch[mountpoint] = time.monotonic() + 5
            return None
        return self._watches[mountpoint]

    def changed(self, watch):
        """Reads what arrived on `watch`; returns the full paths whose state changed.
        Once it ends, everything of its mount is asked again (events may be lost)."""
        paths = []
        for event in watch.events():
            for inside in (event.get("path"), event.get("from")):
                if inside and self._mark(watch.mountpoint, inside, event.get("event") == "deleted"):
                    paths.append(watch.mountpoint.rstrip("/") + inside)
        if not watch.open:
            self._expire(watch.mountpoint, "/")
        return paths

    def _mark(self, mountpoint, inside, deleted):
        folder, name = os.path.split(inside)
        entry = self._folders.get((mountpoint, folder))
        if deleted:
            self._expire(mountpoint, inside)
        if entry is None:
            return False
        entry.stale.add(name)
        # A conflict copy that comes or goes changes its original's mark too.
        if " (conflict from " in name:
            stem = name.split(" (conflict from ")[0]
            entry.stale.update(n for n in entry.entries if n.startswith(stem))
        return True

    def poll_transient(self):
        """Asks again about items shown downloading, uploading or pending; returns the
        full paths whose state changed."""
        paths = []
        for key, entry in list(self._folders.items()):
            if entry.fetched_at is None:
                continue
            names = sorted(name for name, item in entry.entries.items() if item.get("state") in emblems.TRANSIENT)
            if not names:
                continue
            before = {name: entry.entries.get(name) for name in names}
            self._fetch(key, names)
            mountpoint, folder = key
            paths += [mountpoint.rstrip("/") + folder.rstrip("/") + "/" + name
                      for name in names if entry.entries.get(name) != before[name]]
        return paths

    def close(self):
        for watch in self._watches.values():
            if watch.open:
                watch.close()
        self._watches.clear()
