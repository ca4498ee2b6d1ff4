"""Item states for a file manager's view, one request per folder.

A view asks about every item it shows. Three xattr reads per item would be 30,000
FUSE round trips for a folder of 10,000; instead the first question about a folder
fetches the states of all its items in one control request (`states`), and later
questions are answered from memory. The watch API tells which items changed: those
are asked again, a few names per request. States that change without an event
(downloading, uploading, pending) are polled while a view shows them.

Nothing here blocks its caller: answers come through `callback`, run by `post` (the
GLib main loop in a file manager). Nothing here reads file content.
"""

import os
import queue
import threading
import time

from . import control, emblems
from .mounts import MountTable


class _Folder:
    def __init__(self):
        self.entries = {}
        self.fetched_at = None
        self.stale = set()
        self.waiters = []  # (token, name, callback)
        self.queued = False


class StateCache:
    def __init__(self, mounts=None, post=None, invalidate=None, ttl=30.0, poll=2.0):
        self.mounts = mounts or MountTable()
        self._post = post or (lambda function: function())
        self._invalidate = invalidate or (lambda path: None)
        self._ttl = ttl
        self._poll = poll
        self._lock = threading.Lock()
        self._folders = {}  # (mountpoint, folder) -> _Folder
        self._watching = {}  # mountpoint -> time the watch was started
        self._jobs = queue.Queue()
        self._tokens = 0
        self._cancelled = set()
        self._closed = threading.Event()
        # Control requests made, for tests and the benchmark.
        self.requests = 0
        threading.Thread(target=self._work, name="ubiqfs-states", daemon=True).start()
        threading.Thread(target=self._poll_transient, name="ubiqfs-poll", daemon=True).start()

    def locate(self, path):
        """(mountpoint, folder inside the mount, name), or None outside a mount and for
        a mount's root."""
        found = self.mounts.locate(path)
        if found is None or found[1] == "/":
            return None
        mountpoint, inside = found
        folder, name = os.path.split(inside)
        return mountpoint, folder, name

    def request(self, path, callback):
        """Calls `callback(summary or None)` through `post` once the state of `path` is
        known; returns None if it already was (then `callback` ran already), else a
        token for `cancel`. None is the answer outside a mount or for an unknown item."""
        where = self.locate(path)
        if where is None:
            callback(None)
            return None
        mountpoint, folder, name = where
        if self._watching.get(mountpoint, 0) <= 0:
            self._ensure_watch(mountpoint)
        key = (mountpoint, folder)
        with self._lock:
            entry = self._folders.get(key)
            if entry is None:
                entry = self._folders[key] = _Folder()
            fresh = entry.fetched_at is not None and time.monotonic() - entry.fetched_at < self._ttl
            if fresh and name not in entry.stale:
                summary = entry.entries.get(name)
            else:
                self._tokens += 1
                token = self._tokens
                entry.waiters.append((token, name, callback))
                if not entry.queued:
                    entry.queued = True
                    self._jobs.put(key)
                return token
        callback(summary)
        return None

    def cancel(self, token):
        with self._lock:
            self._cancelled.add(token)

    def get(self, path, timeout=30.0):
        """The state of `path`, waiting for it (menus and tests)."""
        done = threading.Event()
        answer = []

        def receive(summary):
            answer.append(summary)
            done.set()

        self.request(path, receive)
        if not done.wait(timeout):
            raise control.ControlError(f"no state for {path} within {timeout} s")
        return answer[0]

    def forget(self, path):
        """Drops what is known of `path` (after an action on it) so it is asked again."""
        where = self.locate(path)
        if where is None:
            return
        mountpoint, folder, name = where
        with self._lock:
            entry = self._folders.get((mountpoint, folder))
            if entry is not None:
                entry.stale.add(name)
            inside = (folder.rstrip("/") + "/" + name)
            for (point, other), value in self._folders.items():
                if point == mountpoint and (other == inside or other.startswith(inside + "/")):
                    value.fetched_at = None

    def close(self):
        self._closed.set()
        self._jobs.put(None)

    # The worker: one folder at a time, all of its waiting names in one request.

    def _work(self):
        while True:
            job = self._jobs.get()
            if job is None or self._closed.is_set():
                return
            mountpoint, folder = job
            with self._lock:
                entry = self._folders.get(job)
                if entry is None:
                    continue
                entry.queued = False
                waiters, entry.waiters = entry.waiters, []
                whole = entry.fetched_at is None or time.monotonic() - entry.fetched_at >= self._ttl
                names = None if whole else sorted({name for _, name, _ in waiters} | entry.stale)
            self._fetch(mountpoint, folder, names)
            self._answer(job, waiters)

    def _fetch(self, mountpoint, folder, names):
        """Asks the daemon; on failure the folder shows no emblems (and is asked again)."""
        self.requests += 1
        try:
            reply = control.request(mountpoint, "states", timeout=10.0, path=folder, names=names)
            states = {item["name"]: item for item in reply.get("states") or []}
        except control.ControlError:
            states = None
        with self._lock:
            entry = self._folders.get((mountpoint, folder))
            if entry is None:
                return
            if states is None:
                entry.entries, entry.fetched_at = {}, None
                entry.stale.clear()
                return
            if names is None:
                entry.entries = states
                entry.fetched_at = time.monotonic()
                entry.stale.clear()
            else:
                for name in names:
                    if name in states:
                        entry.entries[name] = states[name]
                    else:
                        entry.entries.pop(name, None)
                    entry.stale.discard(name)

    def _answer(self, key, waiters):
        with self._lock:
            entry = self._folders.get(key)
            entries = entry.entries if entry is not None else {}
            answers = [(callback, entries.get(name)) for token, name, callback in waiters if token not in self._cancelled]
            self._cancelled.difference_update(token for token, _, _ in waiters)
        for callback, summary in answers:
            self._post(lambda callback=callback, summary=summary: callback(summary))

    # Changes: the watch API marks items stale; transient states are polled.

    def _ensure_watch(self, mountpoint):
        with self._lock:
            started = self._watching.get(mountpoint)
            if started is not None and (started > 0 or time.monotonic() + started < 5.0):
                return
            self._watching[mountpoint] = 1.0
        threading.Thread(target=self._watch, args=(mountpoint,), name="ubiqfs-watch", daemon=True).start()

    def _watch(self, mountpoint):
        try:
            for event in control.watch(mountpoint):
                if self._closed.is_set():
                    return
                for path in (event.get("path"), event.get("from")):
                    if path:
                        self._changed(mountpoint, path, event.get("event") == "deleted")
        except control.ControlError:
            pass
        with self._lock:
            # Events may have been missed: everything of the mount is asked again.
            self._watching[mountpoint] = -time.monotonic()
            for (point, _), entry in self._folders.items():
                if point == mountpoint:
                    entry.fetched_at = None

    def _changed(self, mountpoint, path, deleted):
        folder, name = os.path.split(path)
        shown = False
        with self._lock:
            entry = self._folders.get((mountpoint, folder))
            if entry is not None:
                entry.stale.add(name)
                shown = True
                # A conflict copy's original changes mark too.
                if " (conflict from " in name:
                    entry.stale.update(n for n in entry.entries if n.startswith(name.split(" (conflict from ")[0]))
            if deleted:
                for key in [k for k in self._folders if k[0] == mountpoint and (k[1] == path or k[1].startswith(path + "/"))]:
                    del self._folders[key]
        if shown:
            full = mountpoint.rstrip("/") + path
            self._post(lambda: self._invalidate(full))

    def _poll_transient(self):
        while not self._closed.wait(self._poll):
            with self._lock:
                busy = [
                    (key, sorted(name for name, item in entry.entries.items() if item.get("state") in emblems.TRANSIENT))
                    for key, entry in self._folders.items() if entry.fetched_at is not None
                ]
            for (mountpoint, folder), names in busy:
                if not names:
                    continue
                with self._lock:
                    entry = self._folders.get((mountpoint, folder))
                    before = {name: entry.entries.get(name) for name in names} if entry is not None else {}
                self._fetch(mountpoint, folder, names)
                with self._lock:
                    entry = self._folders.get((mountpoint, folder))
                    changed = [name for name in names if entry is not None and entry.entries.get(name) != before.get(name)]
                for name in changed:
                    full = mountpoint.rstrip("/") + (folder.rstrip("/") + "/" + name)
                    self._post(lambda full=full: self._invalidate(full))
