"""Chores run on the laptop beside the workload of a ubiqfs round, so that a power cut lands
in the middle of them too (issue 34): an eviction (then a pin, sometimes), a collection (which also repacks packs and compacts the journal: the retention is 0 from the
start) and a restore of an earlier version. The seed picks one chore for some rounds;
it starts at a seeded operation of the workload, the workload goes on beside it, and the
cut comes a seeded time after its start: while it runs or after it returned. What returned
before the cut is judged; what the cut interrupted is judged by the checks after it."""

import os
import random
import threading
import time

REFUSALS = ("Device or resource busy", "Operation not permitted", "No such file or directory")  # of evict and pin


def prepare_collection(device):
    """Retention 0 (every version but each file's newest, and every trash entry, is garbage
    at once), then a first collection: it writes the checkpoint that the next collection
    compacts the journal up to, so a collection round compacts. None, or what failed."""
    for arguments in (("retention", device.mountpoint, "--versions", "0", "--trash", "0"), ("gc", device.mountpoint, "--grace", "1s")):
        result = device.command(*arguments)
        if result.returncode != 0:
            return f"`ubiqfs {' '.join(arguments)}` failed: {(result.stdout + result.stderr).strip()}"
    return None


def pick_chore(seed, number, device):
    """The chore of ubiqfs round `number`, or None. A restore needs files committed by an
    earlier round, so round 0 has none."""
    rng = random.Random(f"{seed}:chore:{number}")
    kind = rng.choice([None, Evict, Collect] + ([Restore] if number else []))
    return kind(device, rng) if kind else None


class Chore(threading.Thread):
    """Commands of the `ubiqfs` CLI run one after the other in the background."""

    kind = "chore"
    reach = 1.0  # the cut comes up to this many seconds after the start
    starts = (1 / 3, 1)  # the part of the round's operations where it starts

    def __init__(self, device, rng):
        super().__init__(daemon=True)
        self.device, self.rng = device, rng
        self.commands = []
        self.results = []  # (arguments, returncode, output, seconds after the start)
        self.began = self.cut_at = self.cut_time = None
        self.note = "nothing to do"
        self.pushed = []  # seconds each `sync --wait` of the chore took
        self.problems = []  # what failed before the cut, besides the commands

    def hooks(self, workload, count):
        """The workload's `before` and `more`: start at a seeded operation (in the part of
        the round `starts` says), then keep the workload going until the seeded moment of the
        cut."""
        self.prepare(workload)
        first, last = self.starts
        start_at = self.rng.randrange(int(count * first), int(count * last))

        def before(index):
            if index == start_at:
                self.begin(workload)

        def more():
            return self.cut_at is not None and time.monotonic() < self.cut_at

        return before, more

    def prepare(self, workload):
        """Before the round's first operation: everything pushed, so the chore meets files
        uploaded and unchanged (which it evicts, collects, restores) beside the round's new
        changes. Whether the push succeeded."""
        return self.push("before the round")

    def push(self, when):
        started = time.monotonic()
        synced, output = self.device.sync()
        self.pushed.append(time.monotonic() - started)
        if not synced:
            self.note = f"`ubiqfs sync --wait` failed {when}"
            self.problems.append(f"`ubiqfs sync --wait` {when} failed: {output}")
        return synced

    def plan(self, workload):
        """The commands to run (argument lists), chosen at the start."""
        raise NotImplementedError

    def ran(self, arguments, result):
        """A command returned before the cut."""

    def ended(self):
        """Every command returned (or the cut stopped the rest)."""

    def begin(self, workload):
        self.commands = self.plan(workload)
        if not self.commands:
            return
        self.began = time.monotonic()
        self.cut_at = self.began + self.rng.uniform(0, self.reach)
        self.start()

    def run(self):
        try:
            for arguments in self.commands:
                if self.cut_time is not None:
                    break
                result = self.device.command(*arguments)
                self.results.append((arguments, result.returncode, (result.stdout + result.stderr).strip(), time.monotonic() - self.began))
                if self.cut_time is None:
                    self.ran(arguments, result)
        finally:
            self.ended()

    def cut(self):
        """Called just before the cut: what returns from now on was cut short."""
        self.cut_time = time.monotonic()

    def finish(self, timeout=60):
        """After the cut (the daemon is gone: a command still running fails at once): a line
        for the round's report, and the failures of commands that returned before the cut."""
        if self.began is None:
            return f"{self.kind}: {self.note}", self.problems
        self.join(timeout)
        if self.is_alive():
            return f"{self.kind}: still running", [f"`ubiqfs {self.commands[0][0]}` did not return {timeout} s after the cut"]
        cut_after = self.cut_time - self.began
        failures, parts = [], []
        for arguments, code, output, seconds in self.results:
            if seconds > cut_after:
                parts.append(f"{arguments[0]} cut short after {cut_after:.1f} s")
                continue
            parts.append(f"{arguments[0]} returned {code} after {seconds:.1f} s: {self.outcome(code, output)}")
            if code != 0 and not self.refused(output):
                failures.append(f"`ubiqfs {' '.join(arguments)}` failed before the cut: {output}")
        if len(self.results) < len(self.commands):
            parts.append(f"{len(self.commands) - len(self.results)} commands not run (cut {cut_after:.1f} s after the start)")
        return f"{self.kind}: {self.note}; " + "; ".join(parts), self.problems + failures

    def outcome(self, code, output):
        if code == 0:
            return "ok"
        return output.splitlines()[0] if output else "no output"

    def refused(self, output):
        """A refusal the command may meet beside the workload (none but for evictions)."""
        return False


class Evict(Chore):
    """`ubiqfs evict` of one to three items: files uploaded and unchanged (which it evicts) or
    folders (the whole workload folder among them), then sometimes a pin of one of those files
    (which downloads it again; not a folder's, which would keep every file under it here for
    good). It starts early in the round, while most files are still as pushed, and the workload
    then writes to the placeholders. Items being written, or pinned, are refused and items the
    workload moved meanwhile are gone: those refusals are expected."""

    kind = "evict"
    reach = 0.8
    starts = (0, 0.2)

    def plan(self, workload):
        clean = [p for p in workload.files() if ubiqfs_attribute(workload.full(p), "state") == "local"]
        folders = workload.folders()
        paths = sorted({self.rng.choice(clean if clean and self.rng.random() < 0.6 else folders) for _ in range(self.rng.randint(1, 3))})
        self.evicting = [workload.full(path) for path in paths]
        commands = [["evict", *self.evicting]]
        self.note = f"evict {', '.join(p or '.' for p in paths)} ({len(clean)} files uploaded and unchanged; sync --wait took {self.pushed[0]:.1f} s before the round)"
        files = [path for path in paths if path in clean]
        if files and self.rng.random() < 0.3:
            pinned = self.rng.choice(files)
            commands.append(["pin", workload.full(pinned)])
            self.note += f", then pin {pinned}"
        return commands

    def ran(self, arguments, result):
        if arguments[0] == "evict":
            placeholders = sum(1 for path in self.evicting for full in files_under(path) if ubiqfs_attribute(full, "state") == "placeholder")
            self.note += f"; {placeholders} placeholders under them once evict returned"

    def refused(self, output):
        # "ubiqfs: PATH: ERRNO TEXT (why, from the item's state)"
        reasons = [line.rsplit(": ", 1)[-1] for line in output.splitlines() if line.startswith("ubiqfs: ")]
        return bool(reasons) and all(reason.startswith(REFUSALS) for reason in reasons)


class Collect(Chore):
    """`ubiqfs gc --grace 1s`: marks, condemns, sweeps, repacks packs mostly garbage and
    compacts the journal, while the workload and the desktop go on writing."""

    kind = "gc"
    reach = 4.0

    def plan(self, workload):
        self.note = f"gc --grace 1s (sync --wait took {self.pushed[0]:.1f} s before the round)"
        return [["gc", self.device.mountpoint, "--grace", "1s"]]

    def outcome(self, code, output):
        if code != 0:
            return super().outcome(code, output)
        return "; ".join(line.split(";")[0] for line in output.splitlines() if not line.startswith("the store holds"))


class Restore(Chore):
    """`ubiqfs restore` of a file changed in this round to the version it had at the round's
    start. The content of a version is known only as the content a file had while this device
    called it committed, so `prepare` notes those once everything is pushed; the first sync
    since the mount has then forgotten the versions past the retention (0), so they stay
    listed. The start pushes the round's changes, so the file has several versions. The
    workload leaves the file alone while the restore runs; the model takes the restore's
    content as allowed from its start and as the file's content once acknowledged."""

    kind = "restore"
    reach = 0.8

    def prepare(self, workload):
        self.samples = {}  # ubiqfs id -> (version, content)
        if not super().prepare(workload):
            return
        self.note = "no file uploaded and unchanged at the round's start"
        for path in workload.files():
            full = workload.full(path)
            version = ubiqfs_attribute(full, "version")
            state = ubiqfs_attribute(full, "state")
            if state in ("local", "placeholder", "partial") and version not in (None, "0") and ubiqfs_attribute(full, "version") == version:
                self.samples[ubiqfs_attribute(full, "id")] = (int(version), workload.model.current[workload.model.tree[path][2]])

    def plan(self, workload):
        self.workload = workload
        if not self.samples or not self.push("before the restore"):
            return []
        target = self.pick(workload)
        if target is None:
            self.note = f"no file changed since one of the {len(self.samples)} committed versions seen at the start"
            return []
        self.path, self.version, self.content, listed = target
        self.identity = workload.model.tree[self.path][2]
        self.note = (f"restore {self.path} --version {self.version} ({listed} versions listed, {len(self.content)} bytes; "
                     f"sync --wait took {self.pushed[0]:.1f} s before the round, {self.pushed[1]:.1f} s before the restore)")
        workload.model.restore_started(self.path, self.content, self.version)
        workload.excluded.add(self.identity)
        return [["restore", workload.full(self.path), "--version", str(self.version)]]

    def pick(self, workload):
        """(path, version, content, versions listed) of a file whose content changed
        since a version seen at the start, that version still listed: of the first four, one
        with several versions listed if any has, a version with content first (a file the
        cut left empty has an empty version)."""
        changed = []
        for path in workload.free_files():
            sample = self.samples.get(ubiqfs_attribute(workload.full(path), "id"))
            if sample and sample[1] != workload.model.current[workload.model.tree[path][2]]:
                changed.append((path, *sample))
        self.rng.shuffle(changed)
        changed.sort(key=lambda candidate: not candidate[2])
        fallback = None
        for path, version, content in changed[:4]:
            listed = self.device.versions(workload.full(path))
            if version in listed:
                if len(listed) > 1:
                    return path, version, content, len(listed)
                fallback = fallback or (path, version, content, len(listed))
        return fallback

    def ran(self, arguments, result):
        if result.returncode == 0:
            self.workload.model.restore_finished(self.path, self.content, self.version)

    def ended(self):
        self.workload.excluded.discard(self.identity)


def ubiqfs_attribute(path, name):
    """A `user.ubiqfs.*` attribute as text, or None (gone, or not set)."""
    try:
        return os.getxattr(path, f"user.ubiqfs.{name}").decode()
    except OSError:
        return None


def files_under(path):
    if not os.path.isdir(path):
        return [path]
    return [os.path.join(folder, name) for folder, _, names in os.walk(path) for name in names]
