"""The pull: journal replay, the chain, joining from checkpoints ("A reader's path through a container")."""

import hashlib
import sys
import time

from basics import *  # noqa: F401,F403
from records import *  # noqa: F401,F403
from device import *  # noqa: F401,F403
from history import *  # noqa: F401,F403

# ---------------------------------------------------------------- the pull

class Reader:
    """A fresh device's first pull (CF "Committing" step 1, "Checkpoints",
    "Compaction": Rejoining; ARCH "Data flow of a sync step")."""

    def __init__(self, store, info, codec):
        self.store, self.info, self.codec = store, info, codec
        self.warnings = []
        self.device = Device(self.warn)
        self.last_seq = 0
        self.prev = None      # SHA-256 of the previous record's bytes, if known
        self.stopped = None   # why the pull stopped, if it did

    def warn(self, message):
        self.warnings.append(message)
        print("ubiqfs_reader: warning: %s" % message, file=sys.stderr)

    # -- reading objects

    def get_json(self, key, limit):
        """Get, open (encrypted) and parse a JSON object of the store."""
        return parse_json(self.codec.open_object(key, self.store.get(key, limit)))

    def read_record(self, seq):
        """None (notFound), or (kind, value): ("tombstone", compacted),
        ("skip", reason) or ("record", decoded).  Checks the chain."""
        key = seq_key("journal", seq)
        try:
            raw = self.store.get(key, RECORD_LIMIT)
        except NotFound:
            return None
        except Damaged as err:
            self.prev = None                  # CF: bytes unknown, prev unchecked
            return ("skip", str(err))
        try:
            plain = self.codec.open_object(key, raw)
        except Damaged as err:
            self.prev = None
            return ("skip", str(err))
        previous, self.prev = self.prev, hashlib.sha256(plain).hexdigest()
        try:
            rec = parse_json(plain)
        except Undecodable as err:
            return ("skip", str(err))
        return self.classify(seq, rec, previous)

    def classify(self, seq, rec, previous):
        if not isinstance(rec, dict) or not is_int(rec.get("format")):
            return ("skip", "not a record (no format)")
        if rec["format"] not in READ_FORMATS:
            raise StopPull("journal record %d has format %d, which this reader "
                           "does not read: upgrade" % (seq, rec["format"]))
        prev = rec.get("prev")
        if prev is not None and not isinstance(prev, str):
            return ("skip", "malformed prev")        # black box
        if prev is not None and previous is not None and prev != previous:
            raise StopPull("journal record %d does not follow record %d as this "
                           "device has it: the store shows devices different "
                           "histories" % (seq, seq - 1))
        if has(rec, "compacted"):
            if is_int(rec["compacted"]):
                return ("tombstone", rec["compacted"])
            return ("skip", "malformed compacted")
        try:
            return ("record", decode_record(rec))
        except Undecodable as err:
            return ("skip", str(err))

    def list_checkpoints(self):
        keys = self.store.list("checkpoints/")
        return sorted(int(k[12:]) for k in keys if SEQ_KEY.match(k[12:]))

    def list_history(self):
        """[(first, last, key)] of history/<first>-<last>."""
        out = []
        for key in self.store.list("history/"):
            match = HISTORY_KEY.match(key[len("history/"):])
            if match:
                out.append((int(match.group(1)), int(match.group(2)), key))
        return out

    # -- applying

    def apply_record(self, seq, rec):
        ctx = (seq, rec["device"], rec["time"], rec["batch"])
        entries = []
        upserted = {}        # file id -> its snapshot as this record's last upsert applied it
        for op in self.expand_splices(rec):
            try:
                if op["op"] == "refused":
                    raise Refused(op["why"])
                if op["op"] == "upsert":
                    snap = validate_item(op["item"])
                    self.device.upsert(snap, ctx)
                    if snap["kind"] == "file":
                        upserted[snap["id"]] = snap
                else:
                    self.device.delete(op["id"], ctx, entries)
            except Refused as err:
                self.warn("journal record %d: operation refused: %s" % (seq, err))
        self.device.finish_record()
        self.device.finish_trash(entries, rec["batch"])
        self.take_merges(seq, rec["merges"], upserted, ctx)
        moves = [m for m in rec["moves"] if m is not None]
        if len(moves) != len(rec["moves"]):
            self.warn("journal record %d: a malformed move refused" % seq)
        if moves:
            self.device.relocate(moves)
        if rec["settings"] is None:
            self.warn("journal record %d: settings out of range refused" % seq)
        elif rec["settings"]:
            self.device.settings.update(rec["settings"])
        self.take_root(seq, rec["root"])

    def expand_splices(self, rec):
        """CF "A reader's path", step 4, and "Format 5", Splices: before the
        record's operations are applied, each splice becomes `blocks`,
        operations taken in order (a second upsert of a file is an edit of
        the first).  Every upsert read sets or forgets its id's list
        (keep_list) whether it is applied or refused later; a delete forgets
        it; a splice refused forgets it too, and its upsert is returned as
        {"op": "refused", "why": ...} (logged in its turn, the rest of the
        record applied).  A splice of an item that is not a file is refused."""
        out = []
        for op in rec["ops"]:
            if op["op"] == "delete":
                self.device.forget_list(op["id"])
                out.append(op)
                continue
            item = op["item"]
            if "splice" in item:
                try:
                    item = expand_splice(item, self.device.lists.get(item["id"]),
                                         rec["format"])
                except Refused as err:
                    self.device.forget_list(item["id"])
                    out.append({"op": "refused", "why": str(err)})
                    continue
            self.device.keep_list(item)
            out.append({"op": "upsert", "item": item})
        return out

    def take_merges(self, seq, merges, upserted, ctx):
        """CF "Format 4", Merges (after `ops`, before `relocate`: CF "A
        reader's path", step 4): each merge checked alone, one that breaks a
        rule dropped (logged) and the record still applied; the record must
        carry an upsert of a file with that id (GUESS: one this device applied;
        an upsert refused is none).  GUESS: a second merge of one file in a
        record is dropped too (its inputs would be versions N.k again)."""
        merged = set()
        for merge in merges:
            try:
                merge = validate_merge(merge, seq)
                if merge["id"] not in upserted:
                    raise Refused("merge of %s: the record applies no upsert of such a file"
                                  % merge["id"])
                if merge["id"] in merged:
                    raise Refused("a second merge of %s" % merge["id"])
            except Refused as err:
                self.warn("journal record %d: a merge refused: %s" % (seq, err))
                continue
            merged.add(merge["id"])
            self.device.record_merge(upserted[merge["id"]], merge, ctx)

    def take_root(self, seq, root):
        """CF "The root's own attributes": from this record on; a fresh reader
        has no change of its own to merge."""
        if root is None:
            self.warn("journal record %d: root attributes refused" % seq)
        elif root:
            self.device.root = root

    # -- joining from a checkpoint (CF "Checkpoints", "Compaction")

    def join_candidates(self, after):
        """The checkpoint at the end of the newest history object whose
        checkpoint exists first (with it), then the others after `after`,
        newest first (without history)."""
        checkpoints = self.list_checkpoints()
        histories = [h for h in self.list_history() if h[1] in set(checkpoints)]
        newest = max(histories, key=lambda h: (h[1], h[0]), default=None)
        order = []
        if newest is not None and newest[1] > after:
            order.append((newest[1], newest))
        for seq in reversed(checkpoints):
            if seq > after and (newest is None or seq != newest[1]):
                order.append((seq, None))
        return order, newest is not None

    def try_join(self, after):
        """Join the first readable candidate; False if none is."""
        order, _ = self.join_candidates(after)
        for seq, history_key in order:
            key = seq_key("checkpoints", seq)
            try:
                checkpoint = decode_checkpoint(self.get_json(key, JSON_LIMIT), seq)
            except (NotFound, Damaged, Undecodable) as err:
                self.warn("checkpoint %d skipped: %s" % (seq, err))
                continue
            history = self.read_history(history_key) if history_key else None
            self.join(checkpoint, history)
            return True
        return False

    def read_history(self, history_key):
        first, last, key = history_key
        try:
            return decode_history(self.get_json(key, JSON_LIMIT), first, last, self.warn)
        except (NotFound, Damaged, Undecodable) as err:
            self.warn("%s refused: %s; joining without the history" % (key, err))
            return None

    def join(self, checkpoint, history):
        """CF "Compaction", Rejoining: applied like one record: first the
        history's versions and trash after n, then the catch-up."""
        seq, after = checkpoint["seq"], self.last_seq
        by_id = {}
        for item in checkpoint["items"]:
            by_id.setdefault(item["id"], item)
        if history is not None:
            self.add_history(history, after, by_id)
        self.catch_up(checkpoint, record_trash=history is None)
        self.device.finish_record()
        self.device.settings = dict(checkpoint["settings"])
        self.take_root(seq, checkpoint["root"])
        self.last_seq, self.prev = seq, None
        self.warn("joined from checkpoint %d%s" % (
            seq, "" if history is not None else " without a history object"))

    def add_history(self, history, after, by_id):
        """Versions that leave out size, mtime and blocks take them from the
        checkpoint's file, or are dropped (CF "history/<first>-<last>").
        CF "Format 4": an input (N.k) is its own row, after version N."""
        for row in history["versions"]:
            if row["seq"] <= after:
                continue
            if "blocks" not in row:
                item = by_id.get(row["id"])
                try:
                    snap = validate_item(item) if item else None
                except Refused:
                    snap = None
                if snap is None or snap["kind"] != "file":
                    continue
                row = dict(row, size=snap["size"], mtime=snap["mtime"],
                           blocks=snap["blocks"])
            rows = self.device.versions.setdefault(row["id"], [])
            if all((r["seq"], r["input"]) != (row["seq"], row["input"]) for r in rows):
                rows.append({k: row[k] for k in ("seq", "input", "device", "time",
                                                 "size", "mtime", "blocks",
                                                 "mergedWith", "mergeKind")
                             if k in row})
                rows.sort(key=lambda r: (r["seq"], r["input"]))
        self.device.trash.extend(e for e in history["trash"] if e["seq"] > after)

    def catch_up(self, checkpoint, record_trash):
        """Upserts of every reachable checkpoint item that differs from the
        committed one (parents first, siblings in the order of their ids),
        then deletes of what it no longer has (deepest first).  CF "Format
        3": the links come after every other item, in the order of their ids
        (reachable: their folder is).  CF "Two items with one name": the
        item applied later keeps a name (of two items the greater id, of an
        item and a link the link); the other steps aside."""
        seq = checkpoint["seq"]
        ctx = (seq, FROM_CHECKPOINT, None, None)
        kids = {}
        for item in checkpoint["items"]:
            kids.setdefault(item["parent"], []).append(item)
        for siblings in kids.values():
            siblings.sort(key=lambda i: i["id"])    # stable: first of an id
        has, queue, seen, links = set(), ["root"], set(), []
        while queue:
            for item in kids.get(queue.pop(0), []):
                if item["id"] in seen:
                    continue
                seen.add(item["id"])
                if item["kind"] == LINK:
                    links.append(item)      # a link holds nothing: not queued
                    continue
                if self.catch_up_item(seq, item, ctx, has):
                    queue.append(item["id"])
        for item in sorted(links, key=lambda i: i["id"]):   # stable: first of an id
            self.catch_up_item(seq, item, ctx, has)
        self.delete_missing(has, ctx, record_trash)

    def catch_up_item(self, seq, item, ctx, has):
        """One checkpoint item, checked and placed as an upsert; False if the
        stateless checks refuse it (then nothing under it is reached).  CF
        "Splices": a file's list is the checkpoint's (whether the item is
        then applied, refused, or the same as committed here); an item with
        `splice` is refused, and leaves the list as it was."""
        if "splice" not in item:
            self.device.keep_list(item)
        try:
            snap = validate_item(item)
        except Refused as err:
            self.warn("checkpoint %d: item refused: %s" % (seq, err))
            return False
        has.add(snap["id"])
        if self.device.base.get(snap["id"]) != snap:
            try:
                self.device.upsert(snap, ctx)
            except Refused as err:
                self.warn("checkpoint %d: item refused: %s" % (seq, err))
        return True

    def delete_missing(self, has, ctx, record_trash):
        device = self.device
        gone = [i for i in device.base if i not in has]
        gone.sort(key=lambda i: -len(device.chain(device.base, i)))
        entries = []
        for item_id in gone:
            # CF "Compaction", Rejoining: the catch-up deletes every committed
            # item the checkpoint no longer has; CF "Splices": a delete of the
            # id forgets its list (each of them, also one inside a folder
            # deleted first).
            device.forget_list(item_id)
            if item_id in device.base:
                # Black box (undocumented): without a history object, a
                # catch-up delete is a trash entry of the checkpoint's seq by
                # the device "checkpoint" at the time of the join.
                mine = (ctx[0], "checkpoint", time.time_ns(), None)
                device.delete(item_id, mine, entries)
        if record_trash:
            device.finish_trash(entries, None)
        else:
            device.links_removed = []

    # -- the pull loop

    def start(self):
        """A new device: format 1 joins the newest readable checkpoint; format
        2 joins only with a history object, else replays from record 1."""
        _, has_history = self.join_candidates(0)
        if self.info["format"] == 1 or has_history:
            self.try_join(0)

    def rejoin(self, why):
        after = self.last_seq
        if not self.try_join(after):
            if why == "compacted":
                raise StopPull("journal record %d was compacted and no checkpoint "
                               "after it is readable" % (after + 1))
            return False
        return True

    def gap_check(self):
        """CF "Why no device writes into a compacted gap": a checkpoint after
        n while journal/<n+1> is still missing (asked again after the LIST)
        means the records before it are gone: rejoin.  True: go on pulling."""
        if not any(seq > self.last_seq for seq in self.list_checkpoints()):
            return False
        try:
            self.store.get(seq_key("journal", self.last_seq + 1), RECORD_LIMIT, 0, 0)
            return True            # it appeared meanwhile: read it
        except NotFound:
            pass
        except Damaged:
            return True
        return self.rejoin("missing")

    def pull(self):
        """Records from lastSeq + 1 until notFound (CF "Layout")."""
        try:
            self.start()
            checked = False        # the gap check: at the first pull, after a join
            while True:
                seq = self.last_seq + 1
                got = self.read_record(seq)
                if got is None:
                    if checked:
                        return
                    checked = True
                    if self.gap_check():
                        checked = self.last_seq + 1 == seq   # a join allows another
                        continue
                    return
                kind, value = got
                if kind == "tombstone":
                    self.rejoin("compacted")
                    checked = False
                    continue
                if kind == "skip":
                    self.warn("journal record %d skipped: %s" % (seq, value))
                else:
                    self.apply_record(seq, value)
                self.last_seq = seq
        except StopPull as err:
            self.stopped = str(err)
