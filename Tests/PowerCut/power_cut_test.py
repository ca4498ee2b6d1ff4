#!/usr/bin/env python3
"""Randomized power-cut test of ubiqfs (issue 34: fsync must survive a power cut).

The state dir lives on powercutfs (Tests/PowerCutFS), a FUSE filesystem that keeps every
write in memory until it is fsynced; `kill -9` of it is a power cut. A seeded program writes,
renames and fsyncs files through a real mount, every acknowledged promise is logged outside
the simulator, the daemon and the simulator are killed at once at random points, both come
back, and every promise is checked:

  (a) names, kinds and modes under work/ equal the model's tree at some moment between the
      last fsync/fsyncdir (of anything) that returned before the cut and the cut;
  (b) a file's content is what it was at its last data sync before the cut, or any content
      it had after; a file never fsynced may also be empty (on ubiqfs a restore is promised,
      as a data sync of its file, by any fsync started after `ubiqfs restore` returned);
  (c) every file reads without error and its stat size equals the bytes read.

ubiqfs must also come back without quarantine or conflict copies, and after the last round a
fresh device on the same store must see exactly the laptop's tree. Some ubiqfs rounds, chosen
by the seed, run a chore on the laptop beside the workload while the cut comes: an eviction
(and a pin), a collection with repacking and compaction (the retention is 0 from the start)
or a restore of an earlier version (powercut_chores.py); a chore's command that returned
before the cut must have succeeded. The same workload and checker first run on a plain
folder on the simulator (the control): it must come back clean, which shows the checker is
fair. `--self-test` adds a control round whose promised files are altered after the cut: the
checker must flag them.

Run from the repository's root (as root, with fuse3):

    python3 Tests/PowerCut/power_cut_test.py [--self-test]

Environment: UBIQFS_BIN (default .build/debug/ubiqfs), POWERCUTFS_BIN (default
.build/debug/powercutfs, then .build-sim/debug/powercutfs), UBIQFS_POWERCUT_SEED,
UBIQFS_POWERCUT_ROUNDS (rounds per run, default 6), UBIQFS_POWERCUT_MINUTES (soak: ubiqfs
rounds go on until then), UBIQFS_POWERCUT_SELF_TEST=1 (same as --self-test),
UBIQFS_POWERCUT_ONLY=control|ubiqfs (skip the other run), UBIQFS_POWERCUT_KEEP_LOGS=DIR (copy
the daemon logs and the promise logs there before the temp folder is removed).
"""

import atexit
import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from powercut_chores import pick_chore, prepare_collection
from powercut_model import Model, check, describe, digest, observe
from powercut_processes import Device, DesktopWriter, Janitor, Simulator, Watchdog, read_text, say, tail
from powercut_workload import Workload

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Report:
    """Every broken promise and failure, printed as found (which path, which promise,
    expected vs found, seed and round) and counted for the summary."""

    def __init__(self, seed, rounds):
        self.seed, self.rounds = seed, rounds
        self.failures = []

    def broken(self, where, items, limit=40):
        for index, (path, promise, expected, found) in enumerate(items):
            self.failures.append((where, path, promise))
            if index < limit:
                say(f"  BROKEN [{where}] {path}: {promise}\n      expected: {expected}\n      found:    {found}")
        if len(items) > limit:
            say(f"  ... and {len(items) - limit} more broken promises in {where}")

    def fail(self, where, message):
        self.failures.append((where, "-", message.splitlines()[0]))
        say(f"  FAILED [{where}] {message}")

    def replay(self):
        return f"UBIQFS_POWERCUT_SEED={self.seed} UBIQFS_POWERCUT_ROUNDS={self.rounds} python3 Tests/PowerCut/power_cut_test.py"


class Run:
    """Shared parts of the control run and the ubiqfs run: rounds of workload, cut, check."""

    CUTS = ["after_fsync", "background", "mid"]

    def __init__(self, context, name, root):
        self.context = context
        self.name = name
        self.root = root
        self.log = open(os.path.join(context.tmp, f"promises-{name}.jsonl"), "w")
        self.model = Model()
        self.model.log = self.log

    def round(self, number, extra_wait=0.0, chore=None):
        """The workload, with `chore` beside it; then the wait before the cut."""
        rng = random.Random(f"{self.context.seed}:{self.name}:{number}")
        cut = rng.choice(self.CUTS)
        count = rng.randint(25, 70)
        started = time.monotonic()
        workload = Workload(self.root, self.model, rng, self.context.watchdog.progress)
        before, more = chore.hooks(workload, count) if chore else (None, None)
        error = workload.run(count, end_with_fsync=cut == "after_fsync", before=before, more=more)
        where = f"{self.name} seed={self.context.seed} round={number} cut={cut}"
        if error:
            self.context.report.fail(where, error)
        if cut == "background":
            time.sleep(rng.uniform(0.2, 2.5) + extra_wait)
        return rng, cut, where, time.monotonic() - started

    def check_after_cut(self, alter=None):
        """Broken promises of the tree found after a cut (`alter` first changes it: the
        self-test), paths shown from the mount; the tree found is the next round's start
        (a lost workload folder is made again, so later rounds still test something)."""
        if alter:
            alter()
        shape, contents, problems = observe(self.root)
        broken = list(problems) + check(self.model, shape, contents)
        self.model = Model.baseline(self.model.seq + 1, shape, contents, self.log)
        if not os.path.isdir(self.root):
            os.mkdir(self.root, 0o755)
            fsync_path(self.root)
            fsync_path(os.path.dirname(self.root))
        label = os.path.basename(self.root)
        return [(label if path == "." else f"{label}/{path}", *rest) for path, *rest in broken]


class Context:
    """What every run shares: the seed, the binaries, the simulator, the janitor."""

    def __init__(self, seed, rounds, tmp, janitor, watchdog, report, binaries):
        self.seed, self.rounds, self.tmp, self.janitor, self.watchdog, self.report = seed, rounds, tmp, janitor, watchdog, report
        self.ubiqfs, self.powercutfs = binaries
        self.sim = Simulator(self.powercutfs, os.path.join(tmp, "backing"), os.path.join(tmp, "sim"), os.path.join(tmp, "powercutfs.log"), janitor, seed)


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run_control(context, self_test):
    """The checker on a plain folder of the simulator: must come back clean."""
    say(f"== control: {context.rounds} rounds on a plain folder of powercutfs (cut = kill -9 powercutfs)")
    plain = os.path.join(context.sim.mountpoint, "plain")
    os.mkdir(plain, 0o755)
    fsync_path(plain)
    fsync_path(context.sim.mountpoint)
    run = Run(context, "control", plain)
    clean = True
    for number in range(context.rounds):
        _, cut, where, took = run.round(number)
        context.sim.kill()
        context.sim.reap()
        context.sim.start()
        broken = run.check_after_cut()
        say(f"  round {number} ({cut}, {took:.1f} s, {run.model.seq} ops so far): {'clean' if not broken else f'{len(broken)} broken promises'}")
        if broken:
            clean = False
            context.report.broken(where, broken)
    if self_test:
        clean = run_self_test(context, run) and clean
    return clean


def run_self_test(context, run):
    """A control round whose promised files are altered after the cut: the checker must
    flag each alteration, or it could not catch a broken promise at all."""
    say("== self-test: a control round, then promised items altered after the cut")
    where = f"self-test seed={context.seed}"
    workload = Workload(run.root, run.model, random.Random(f"{context.seed}:self-test"), context.watchdog.progress)
    workload.run(20, end_with_fsync=False)
    os.makedirs(os.path.join(run.root, "promised"), 0o755)
    run.model.made_folder("promised", 0o755)
    path = "promised/kept.txt"
    with open(os.path.join(run.root, path), "wb") as handle:
        run.model.created(path, 0o644)
        os.chmod(handle.fileno(), 0o644)
        handle.write(b"promised content\n")
        handle.flush()
        run.model.wrote(path, b"promised content\n", "write")
        os.fsync(handle.fileno())
        run.model.fsynced(path)
    workload.fsync_folder("promised")
    context.sim.kill()
    context.sim.reap()
    context.sim.start()

    def alter():
        with open(os.path.join(run.root, path), "r+b") as handle:
            handle.write(b"ALTERED")
        os.chmod(os.path.join(run.root, "promised"), 0o700)

    broken = run.check_after_cut(alter)
    caught = {(p, promise[:3]) for p, promise, _, _ in broken}
    expected = {(f"plain/{path}", "(b)"), ("plain/promised", "(a)")}
    for p, promise, wanted, found in broken:
        say(f"  flagged (as it must be): {p}: {promise}\n      expected: {wanted}\n      found:    {found}")
    if expected <= caught and len(broken) == len(expected):
        say("  self-test: the checker flagged both altered items, and nothing else")
        return True
    context.report.fail(where, f"the checker flagged {sorted(caught)}; it had to flag exactly {sorted(expected)}")
    return False


def run_ubiqfs(context, deadline):
    """The laptop's state dir on the simulator; the desktop and the store on the real disk."""
    tmp = context.tmp
    store = os.path.join(tmp, "store")
    laptop = Device("laptop", context.ubiqfs, os.path.join(tmp, "mnt"), os.path.join(context.sim.mountpoint, "state"), store, context.janitor)
    desktop = Device("desktop", context.ubiqfs, os.path.join(tmp, "mnt2"), os.path.join(tmp, "desktop-state"), store, context.janitor)
    fresh = Device("fresh", context.ubiqfs, os.path.join(tmp, "mnt3"), os.path.join(tmp, "fresh-state"), store, context.janitor)
    report = context.report
    say("== ubiqfs: the laptop's state dir on powercutfs; cut = kill -9 of the daemon and of powercutfs at once")
    desktop.mount()
    os.makedirs(os.path.join(desktop.mountpoint, "other"), exist_ok=True)
    options = round_options(context.seed, 0)
    laptop.mount(options)
    work = os.path.join(laptop.mountpoint, "work")
    os.mkdir(work, 0o755)
    fsync_path(work)
    fsync_path(laptop.mountpoint)
    failure = prepare_collection(laptop)
    if failure:
        report.fail(f"setup seed={context.seed}", failure)
    writer = DesktopWriter(os.path.join(desktop.mountpoint, "other"), context.seed)
    writer.start()
    run = Run(context, "ubiqfs", work)
    number = 0
    alive = True
    try:
        while number < context.rounds or (deadline and time.monotonic() < deadline):
            chore = pick_chore(context.seed, number, laptop)
            _, cut, where, took = run.round(number, extra_wait=0.5, chore=chore)
            where += f" options={' '.join(options) or 'none'}" + (f" chore={chore.kind}" if chore else "")
            where += f" sim-commits={context.sim.interval or 'none'}"
            log_before = read_text(laptop.log_path)
            done = cut_laptop(context, laptop, chore, where)
            keep_log(context, f"laptop-round{number}-before-cut.log", log_before)
            keep_state(context, laptop, number)
            options = round_options(context.seed, number + 1)
            try:
                laptop.mount(options)
            except RuntimeError as error:
                report.fail(where, f"the laptop did not mount again after the cut: {error}\n      log after the cut: {tail(laptop.log_path)}")
                alive = False
                break
            broken = run.check_after_cut()
            broken += ubiqfs_health(laptop)
            say(f"  round {number} ({cut}, {took:.1f} s, {run.model.seq} ops so far, desktop writes {writer.writes}): "
                f"{'clean' if not broken else f'{len(broken)} broken promises'}" + (f"\n      {done}" if done else ""))
            if broken:
                report.broken(where, broken)
                say(f"      laptop log after the cut: {interesting(read_text(laptop.log_path))}")
            number += 1
    finally:
        writer.stop()
    keep_log(context, "laptop-last.log", read_text(laptop.log_path))
    for error in writer.errors[:5]:
        report.fail("desktop writer", error)
    if alive:
        final_checks(context, laptop, desktop, fresh)
    for device in (laptop, fresh, desktop):
        device.unmount()
    return number


def cut_laptop(context, laptop, chore, where):
    """The daemon first, then the disk, back to back: the daemon never runs on a dead disk.
    The chore's commands end with the daemon; what they did before the cut is returned as a
    line for the round's report, and their failures are reported."""
    if chore:
        chore.cut()
    pid = laptop.pid()
    if pid:
        os.kill(pid, signal.SIGKILL)
    else:
        context.report.fail(where, "the laptop's daemon was not running before the cut")
    context.sim.kill()
    wait_gone(pid)
    subprocess.run(["fusermount3", "-uz", laptop.mountpoint], capture_output=True)
    done = None
    if chore:
        done, failures = chore.finish()
        for failure in failures:
            context.report.fail(where, failure)
    context.sim.reap()
    context.sim.start()
    return done


def keep_state(context, device, number):
    """With UBIQFS_POWERCUT_KEEP_LOGS: the laptop's state dir as the cut left it (database
    and cache) before the mount that follows it, and the store's journal then, for a closer
    look at what broke."""
    target = os.environ.get("UBIQFS_POWERCUT_KEEP_LOGS")
    if not target:
        return
    destination = os.path.join(target, f"laptop-state-round{number}")
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(device.state, destination, ignore=shutil.ignore_patterns("control.sock"), dirs_exist_ok=True)
    journal = os.path.join(device.store, "default", "journal")
    if os.path.isdir(journal):
        shutil.copytree(journal, os.path.join(target, f"journal-round{number}"), dirs_exist_ok=True)


def round_options(seed, number):
    """Vary the mount per round: a small cache budget (evictions), slow store calls (cuts
    land inside pushes), both or neither."""
    rng = random.Random(f"{seed}:options:{number}")
    options = []
    if rng.random() < 0.5:
        options += ["--cache-size", rng.choice(["256K", "1M"])]
    if rng.random() < 0.5:
        options += ["--store-faults", f"latency={rng.choice(['50ms', '150ms', '400ms'])}"]
    return options


def ubiqfs_health(device):
    """No quarantine, no conflict copies: [(path, promise, expected, found)]."""
    problems = []
    for name in os.listdir(device.mountpoint):
        if name.startswith("ubiqfs recovered"):
            problems.append((name, "no quarantine", "no 'ubiqfs recovered ...' folder", "present"))
    for folder, folders, files in os.walk(device.mountpoint):
        for name in folders + files:
            if "(conflict from" in name:
                path = os.path.relpath(os.path.join(folder, name), device.mountpoint)
                problems.append((path, "no conflict copy", "absent", "a conflict copy"))
    for line in read_text(device.log_path).splitlines():
        if "quarantine" in line.lower():
            problems.append(("ubiqfs.log", "no quarantine", "no quarantine in the log", line.strip()[:300]))
    return problems


def final_checks(context, laptop, desktop, fresh):
    report = context.report
    where = f"final seed={context.seed}"
    say("== final: sync everything, then a fresh device must see exactly the laptop's tree")
    for device in (laptop, desktop, laptop):
        context.watchdog.progress(f"sync of {device.name}")
        ok, output = device.sync()
        if not ok:
            report.fail(where, f"`ubiqfs sync --wait` on the {device.name} failed: {output}")
    status = laptop.status().get("status", {})
    if status.get("pendingItems") or status.get("pendingFiles"):
        report.fail(where, f"the laptop still has pending items after sync --wait: pendingItems={status.get('pendingItems')} pendingFiles={status.get('pendingFiles')}; errors: {status.get('errors')}")
    health = ubiqfs_health(laptop)
    if health:
        report.broken(where, health)
    fresh.mount()
    context.watchdog.progress("sync of the fresh device")
    ok, output = fresh.sync()
    if not ok:
        report.fail(where, f"`ubiqfs sync --wait` on the fresh device failed: {output}")
    mine = tree_of(laptop.mountpoint)
    theirs = tree_of(fresh.mountpoint)
    report.broken(where + " fresh-vs-laptop", compare_trees(mine, theirs, "laptop", "fresh device"))
    other = lambda tree: {p: v for p, v in tree.items() if p == "other" or p.startswith("other/")}
    report.broken(where + " desktop-other", compare_trees(other(tree_of(desktop.mountpoint)), other(mine), "desktop", "laptop"))
    say(f"  laptop: {len(mine)} items; fresh device: {len(theirs)} items")


def tree_of(root):
    shape, contents, problems = observe(root)
    return {p: (kind, mode, digest(contents[p]) if kind == "file" else "", len(contents.get(p, b""))) for p, (kind, mode) in shape.items()}


def compare_trees(expected, found, expected_name, found_name):
    items = []
    for path in sorted(set(expected) | set(found)):
        want, got = expected.get(path), found.get(path)
        if want != got:
            show = lambda v: "absent" if v is None else f"{v[0]} mode {v[1]:o}" + (f", {describe(v[3], v[2])}" if v[0] == "file" else "")
            items.append((path, f"the {found_name} agrees with the {expected_name}", show(want), show(got)))
    return items


def interesting(log):
    lines = [line for line in log.splitlines() if any(w in line for w in ("error", "warning", "notice", "critical"))]
    return ("\n        " + "\n        ".join(lines[-8:])) if lines else "(nothing above info)"


def keep_log(context, name, text):
    target = os.environ.get("UBIQFS_POWERCUT_KEEP_LOGS")
    if target:
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, name), "w") as handle:
            handle.write(text)


def wait_gone(pid, timeout=30):
    deadline = time.monotonic() + timeout
    while pid and os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(")")[-1].split()[0] == "Z":
                    return
        except OSError:
            return
        time.sleep(0.02)


def binaries(tmp):
    """Copies of both binaries, so a rebuild during the run changes nothing."""
    ubiqfs = os.environ.get("UBIQFS_BIN", os.path.join(REPO, ".build/debug/ubiqfs"))
    powercutfs = os.environ.get("POWERCUTFS_BIN")
    if not powercutfs:
        powercutfs = os.path.join(REPO, ".build/debug/powercutfs")
        if not os.path.exists(powercutfs) and os.path.exists(os.path.join(REPO, ".build-sim/debug/powercutfs")):
            powercutfs = os.path.join(REPO, ".build-sim/debug/powercutfs")
    copies = []
    for path, name in ((ubiqfs, "ubiqfs"), (powercutfs, "powercutfs")):
        if not os.path.isfile(path):
            raise SystemExit(f"{name} binary not found at {path} (build it: swift build --product {name})")
        copy = os.path.join(tmp, "bin", name)
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        for attempt in range(30):
            try:
                shutil.copy2(path, copy)
                break
            except OSError:
                time.sleep(2)
        copies.append(copy)
    return copies


def main():
    self_test = "--self-test" in sys.argv[1:] or os.environ.get("UBIQFS_POWERCUT_SELF_TEST") == "1"
    unknown = [a for a in sys.argv[1:] if a != "--self-test"]
    if unknown:
        raise SystemExit(f"unknown arguments {unknown}; usage: power_cut_test.py [--self-test]")
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        raise SystemExit("needs root and /dev/fuse")
    seed = int(os.environ.get("UBIQFS_POWERCUT_SEED") or random.SystemRandom().randrange(1, 10**6))
    rounds = int(os.environ.get("UBIQFS_POWERCUT_ROUNDS") or 6)
    minutes = float(os.environ.get("UBIQFS_POWERCUT_MINUTES") or 0)
    only = os.environ.get("UBIQFS_POWERCUT_ONLY", "")
    os.umask(0)
    tmp = tempfile.mkdtemp(prefix="ubiqfs-test-powercut-", dir="/tmp")
    janitor = Janitor(tmp)
    atexit.register(janitor.cleanup)

    def interrupted(number, _frame):
        raise SystemExit(128 + number)

    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, interrupted)
    watchdog = Watchdog(janitor)
    watchdog.start()
    report = Report(seed, rounds)
    say(f"power-cut test: seed {seed}, {rounds} rounds{f', soak {minutes} min' if minutes else ''}; temp folder {tmp}")
    say(f"replay: {report.replay()}")
    started = time.monotonic()
    control_clean = True
    try:
        context = Context(seed, rounds, tmp, janitor, watchdog, report, binaries(tmp))
        os.makedirs(context.sim.mountpoint)
        context.sim.start()
        if only != "ubiqfs":
            control_clean = run_control(context, self_test)
        if only != "control":
            deadline = started + minutes * 60 if minutes else None
            run_ubiqfs(context, deadline)
        context.sim.stop()
        if watchdog.fired:
            report.fail("watchdog", "the run hung and was killed")
    except SystemExit:
        raise
    except BaseException as error:
        report.fail("test", f"{type(error).__name__}: {error}")
    finally:
        if os.environ.get("UBIQFS_POWERCUT_KEEP_LOGS"):
            for name in os.listdir(tmp):
                if name.endswith(".jsonl") or name.endswith(".log"):
                    shutil.copy(os.path.join(tmp, name), os.environ["UBIQFS_POWERCUT_KEEP_LOGS"])
            journal = os.path.join(tmp, "store", "default", "journal")
            if os.path.isdir(journal):
                shutil.copytree(journal, os.path.join(os.environ["UBIQFS_POWERCUT_KEEP_LOGS"], "journal-last"), dirs_exist_ok=True)
        janitor.cleanup()
    say()
    say(f"== done in {time.monotonic() - started:.0f} s; seed {seed}")
    if not control_clean:
        say("THE CONTROL RUN FOUND BROKEN PROMISES: the checker (or the simulator) is wrong, not ubiqfs")
    if report.failures:
        counts = collections.Counter(promise.split(" ")[0] if promise.startswith("(") else promise for _, _, promise in report.failures)
        say(f"{len(report.failures)} broken promises or failures: " + ", ".join(f"{n} x {p}" for p, n in counts.most_common()))
        say(f"replay: {report.replay()}")
        sys.exit(1)
    say("every promise held")


if __name__ == "__main__":
    main()
