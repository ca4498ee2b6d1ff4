"""The model of what the workload did, and the checker of what a power cut may leave.

Promises (the same for the control folder and for ubiqfs, and what powercutfs guarantees):
(a) names, kinds and modes equal the model's tree at some moment between the last fsync or
fsyncdir (of anything) that returned before the cut and the cut; (b) a file's content is its
content at its last data sync before the cut, or any content it had after (never synced:
that, or empty); (c) every file reads without error, and its stat size is the bytes read.
A restore (`ubiqfs restore`, run beside the workload on ubiqfs) is a content change that any
later fsync promises: its content is installed durably and its row is in the database that
every fsync syncs.
"""

import collections
import functools
import hashlib
import json
import os
import stat
import threading


def digest(data):
    return hashlib.sha256(data).hexdigest()[:12]


def describe(size, sha):
    return f"{size} bytes (sha {sha})"


def locked(method):
    """A restore reports to the model from its own thread, beside the workload: each report
    is one step, numbered in the order the calls were acknowledged."""

    @functools.wraps(method)
    def under_lock(self, *arguments, **options):
        with self.lock:
            return method(self, *arguments, **options)

    return under_lock


class Model:
    """Paths (relative to the workload's root) to entries [kind, mode, identity]; for each
    file identity its contents over time and its last data sync; a snapshot of the tree after
    every change of names or modes; the last fsync of anything; restores under way and done."""

    def __init__(self, seq=0):
        self.seq = seq
        self.tree = {}
        self.versions = {}  # identity -> [(seq, sha, size)]
        self.current = {}  # identity -> bytes
        self.synced = {}  # identity -> seq of its last fsync
        self.snapshots = [(seq, {})]
        self.last_sync = seq
        self.last_sync_what = "the start of the round"
        self.history = collections.defaultdict(list)  # path -> [(seq, text)]
        self.next_identity = 0
        self.log = None
        self.found = set()  # identities found after the last cut, durable since
        self.restoring = {}  # identity -> (sha, size) of a restore started, not acknowledged
        self.restored = {}  # identity -> seq of its last acknowledged restore
        self.lock = threading.RLock()

    @classmethod
    def baseline(cls, seq, shape, contents, log):
        """The state found after a cut, taken as durable: the next round starts from it."""
        model = cls(seq)
        model.log = log
        for path, (kind, mode) in sorted(shape.items()):
            identity = None
            if kind == "file":
                identity = model.new_identity(contents[path])
                model.synced[identity] = seq
                model.found.add(identity)
            model.tree[path] = [kind, mode, identity]
            model.history[path].append((seq, "found after the cut"))
        model.snapshots = [(seq, model.frozen())]
        return model

    def new_identity(self, data):
        identity = self.next_identity
        self.next_identity += 1
        self.versions[identity] = [(self.seq, digest(data), len(data))]
        self.current[identity] = data
        return identity

    def frozen(self):
        return {path: tuple(entry) for path, entry in self.tree.items()}

    def tick(self, text, *paths, **details):
        self.seq += 1
        for path in paths:
            self.history[path].append((self.seq, text))
        if self.log:
            self.log.write(json.dumps({"seq": self.seq, "op": text, "paths": list(paths), **details}) + "\n")
            self.log.flush()

    def snapshot(self):
        self.snapshots.append((self.seq, self.frozen()))

    # What the workload reports, after each acknowledged call.

    @locked
    def created(self, path, mode):
        self.tick(f"create (mode {mode:o})", path)
        self.tree[path] = ["file", mode, self.new_identity(b"")]
        self.snapshot()

    @locked
    def wrote(self, path, data, what):
        identity = self.tree[path][2]
        self.tick(f"{what} -> {describe(len(data), digest(data))}", path, size=len(data), sha=digest(data))
        self.current[identity] = data
        self.versions[identity].append((self.seq, digest(data), len(data)))

    @locked
    def fsynced(self, path, began=None):
        """`began`: `seq` when the call started. It promises what was acknowledged before it
        started, not a restore acknowledged while it ran."""
        began = self.seq if began is None else began
        self.tick("fsync (its content and every earlier change promised)", path)
        self.synced[self.tree[path][2]] = began
        self.last_sync = began
        self.last_sync_what = f"fsync of {path}"

    @locked
    def fsynced_folder(self, path, began=None):
        began = self.seq if began is None else began
        self.tick("fsyncdir (every earlier change promised)", path or ".")
        self.last_sync = began
        self.last_sync_what = f"fsyncdir of {path or '.'}"

    @locked
    def restore_started(self, path, data, version):
        """From now on the file may hold `data`, until the restore is acknowledged."""
        self.tick(f"restore of version {version} started -> {describe(len(data), digest(data))}", path)
        self.restoring[self.tree[path][2]] = (digest(data), len(data))

    @locked
    def restore_finished(self, path, data, version):
        """`ubiqfs restore` returned: a content change, promised by the next fsync of anything."""
        identity = self.tree[path][2]
        self.tick(f"restore of version {version} acknowledged -> {describe(len(data), digest(data))}", path)
        self.current[identity] = data
        self.versions[identity].append((self.seq, digest(data), len(data)))
        self.restored[identity] = self.seq
        del self.restoring[identity]

    @locked
    def made_folder(self, path, mode):
        self.tick(f"mkdir (mode {mode:o})", path)
        self.tree[path] = ["dir", mode, None]
        self.snapshot()

    @locked
    def removed(self, path, what):
        self.tick(what, path)
        del self.tree[path]
        self.snapshot()

    @locked
    def renamed(self, source, target):
        moved = {p: e for p, e in self.tree.items() if p == source or p.startswith(source + "/")}
        if target in self.tree and target not in moved:
            self.history[target].append((self.seq + 1, f"replaced by rename of {source}"))
        for path in moved:
            del self.tree[path]
        for path, entry in moved.items():
            new = target + path[len(source):]
            self.tree[new] = entry
        self.tick(f"rename {source} -> {target}", source, target)
        self.snapshot()

    @locked
    def changed_mode(self, path, mode):
        self.tick(f"chmod {mode:o}", path)
        self.tree[path][1] = mode
        self.snapshot()

    # What a cut may leave.

    def allowed_snapshots(self):
        """The tree as it was when the last fsync (that returned) started, and every tree after."""
        start = max(i for i, (seq, _) in enumerate(self.snapshots) if seq <= self.last_sync)
        return self.snapshots[start:]

    def last_data_sync(self, identity):
        """The seq that promised the identity's content: its own last fsync, or its last
        restore if an fsync of anything started after the restore was acknowledged."""
        synced = self.synced.get(identity)
        restored = self.restored.get(identity)
        if restored is None or restored > self.last_sync:
            return synced
        return restored if synced is None else max(synced, restored)

    def allowed_contents(self, identity):
        """(sha, size) pairs the identity may hold after a cut, and a sentence saying why."""
        versions = self.versions[identity]
        synced = self.last_data_sync(identity)
        restoring = {self.restoring[identity]} if identity in self.restoring else set()
        also = "; or the content of the restore under way at the cut" if restoring else ""
        if synced is None:
            allowed = {(sha, size) for _, sha, size in versions} | {(digest(b""), 0)} | restoring
            return allowed, f"never fsynced: any content it had, or empty{also}"
        at_sync = max(i for i, (seq, _, _) in enumerate(versions) if seq <= synced)
        allowed = {(sha, size) for _, sha, size in versions[at_sync:]} | restoring
        _, sha, size = versions[at_sync]
        later = len(versions) - at_sync - 1
        if identity in self.found and synced == versions[0][0]:
            when = f"found after the last cut (op #{synced}, durable since; never fsynced again)"
        elif synced == self.restored.get(identity):
            when = f"restored at op #{synced}, promised by the fsync after op #{self.last_sync}"
        else:
            when = f"fsynced after op #{synced}"
        return allowed, f"{when} with {describe(size, sha)}; allowed: that or one of the {later} later contents{also}"

    def story(self, path, limit=5):
        events = self.history.get(path, [])[-limit:]
        return "; ".join(f"#{seq} {text}" for seq, text in events) or "no operation on it"


def observe(root):
    """{path: (kind, mode)}, {path: bytes} and the problems of promise (c)."""
    shape, contents, problems = {}, {}, []
    if not os.path.isdir(root):
        return shape, contents, [(".", "(a) the workload's folder exists", "the folder, made and fsynced before the first round", "absent")]

    def failed(error):
        problems.append((os.path.relpath(error.filename or root, root), "(c) readable", "a folder that lists", f"error {error}"))

    for folder, folders, files in os.walk(root, onerror=failed):
        for name in folders + files:
            full = os.path.join(folder, name)
            path = os.path.relpath(full, root)
            try:
                info = os.lstat(full)
            except OSError as error:
                problems.append((path, "(c) readable", "stat", f"error {error}"))
                continue
            kind = "dir" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"
            shape[path] = (kind, stat.S_IMODE(info.st_mode))
            if kind != "file":
                continue
            try:
                with open(full, "rb") as handle:
                    data = handle.read()
            except OSError as error:
                problems.append((path, "(c) readable", f"{info.st_size} readable bytes", f"error {error}"))
                data = b""
            else:
                if len(data) != info.st_size:
                    problems.append((path, "(c) stat size = bytes read", f"{info.st_size} bytes (stat)", f"{len(data)} bytes read"))
            contents[path] = data
    return shape, contents, problems


def check(model, shape, contents):
    """Broken promises: [(path, promise, expected, found)]."""
    allowed = model.allowed_snapshots()
    since = f"the last fsync that returned started after op #{model.last_sync} ({model.last_sync_what})"

    def plain(snapshot):
        return {p: (e[0], e[1]) for p, e in snapshot.items()}

    matches = [snapshot for _, snapshot in allowed if plain(snapshot) == shape]
    failures = []
    if not matches:
        def distance(item):
            _, snapshot = item
            tree = plain(snapshot)
            return sum(1 for p in set(tree) | set(shape) if tree.get(p) != shape.get(p))

        seq, closest = min(reversed(allowed), key=distance)
        tree = plain(closest)
        for path in sorted(set(tree) | set(shape)):
            want, got = tree.get(path), shape.get(path)
            if want == got:
                continue
            expected = f"{want[0]} mode {want[1]:o}" if want else "absent"
            found = f"{got[0]} mode {got[1]:o}" if got else "absent"
            failures.append((
                path, "(a) names/kinds/modes are a state between the last fsync and the cut",
                f"{expected} (closest allowed state: after op #{seq}; {since}; history: {model.story(path)})", found,
            ))
        matches = [closest]
    best = None
    for snapshot in matches:
        problems = []
        for path, (kind, _, identity) in sorted(snapshot.items()):
            if kind != "file" or path not in contents:
                continue
            data = contents[path]
            permitted, why = model.allowed_contents(identity)
            if (digest(data), len(data)) not in permitted:
                problems.append((path, "(b) content is the fsynced one or later", f"{why}; history: {model.story(path)}", describe(len(data), digest(data))))
        if best is None or len(problems) < len(best):
            best = problems
        if not problems:
            break
    return failures + (best or [])
