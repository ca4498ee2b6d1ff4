"""What a fresh device keeps: the committed tree, names stepped aside, versions, trash, settings."""


from basics import *  # noqa: F401,F403
from records import *  # noqa: F401,F403

# ---------------------------------------------------------------- the device

ROOT = {"id": "root", "kind": "directory"}


def shorten(stem, limit):
    """SEM "Conflicts": the stem is shortened to keep the name within 255
    bytes.  Black box: cut at a byte, even inside a UTF-8 character."""
    return stem[:limit]


class Device:
    """What a fresh device keeps (CF "Reading and validation", "Conflicts",
    "File versions", "The trash"): the committed snapshots (`base`), the
    items it shows (`items`: the same but for names it stepped aside, which
    are its own uncommitted renames), versions, trash and settings."""

    def __init__(self, warn):
        self.base = {}             # id -> committed snapshot
        self.base_kids = {}        # parent id -> {child id: None}
        self.items = {}            # id -> snapshot as shown here
        self.kids = {"root": {}}   # parent id -> {name: id}, as shown here
        self.dirty = set()         # ids whose place here is a local change
        self.stepped = set()       # ids stepped aside in the current record
        # id -> [version rows], oldest first (by seq, then input: CF "Format
        # 4", a merge's input k is version N.k, listed after version N)
        self.versions = {}
        self.trash = []            # entries, in the order they were recorded
        self.settings = {"versions": DEFAULT_RETENTION, "trash": DEFAULT_RETENTION,
                         "merge": dict(MERGE_DEFAULTS)}
        # The root's mode, mtime and xattrs, once a record or checkpoint said them.
        self.root = None
        self.moved = {}            # (h, n, old pack) -> (pack, offset)
        # CF "Format 3", Links: an item's further names, as shown and committed.
        self.links = {}            # item id -> {link id: None}, as shown here
        self.base_links = {}       # item id -> {link id: None}, committed
        self.kept_now = set()      # ids a delete of this record left shown
        # (shown snapshot, moved here) of links this record's own deletes took away
        self.link_deletes = []
        self.links_removed = []    # committed links this record removed (for the trash)
        # CF "Format 5", Splices: id -> the file's list as the journal gave it
        # last (the base of a splice), whether its upsert was applied or not.
        self.lists = {}
        self.warn = warn

    # -- the trees

    def node(self, item_id):
        return ROOT if item_id == "root" else self.items.get(item_id)

    @staticmethod
    def chain(table, item_id):
        """Ids of the folders above an item in `table`, nearest first."""
        out, seen = [], {item_id}
        parent = table[item_id]["parent"]
        while parent in table and parent not in seen:
            seen.add(parent)
            out.append(parent)
            parent = table[parent]["parent"]
        return out

    def path(self, item_id):
        """The names shown here, from the top down."""
        up = reversed(self.chain(self.items, item_id))
        return [self.items[a]["name"] for a in up] + [self.items[item_id]["name"]]

    def shown_subtree(self, item_id):
        out, queue = [], [item_id]
        while queue:
            current = queue.pop(0)
            out.append(current)
            queue.extend(self.kids.get(current, {}).values())
        return out

    def base_subtree(self, item_id):
        out, queue, seen = [], [item_id], {item_id}
        while queue:
            current = queue.pop(0)
            out.append(current)
            fresh = [k for k in self.base_kids.get(current, {}) if k not in seen]
            seen.update(fresh)
            queue.extend(fresh)
        return out

    @staticmethod
    def index_link(index, snap, add):
        """Keep `index` (item id -> its links) in step with a link's snapshot."""
        if snap is None or snap["kind"] != LINK:
            return
        if add:
            index.setdefault(snap["of"], {})[snap["id"]] = None
        else:
            names = index.get(snap["of"], {})
            names.pop(snap["id"], None)
            if not names:
                index.pop(snap["of"], None)

    def set_base(self, snap):
        old = self.base.get(snap["id"])
        if old is not None:
            self.base_kids[old["parent"]].pop(snap["id"], None)
            self.index_link(self.base_links, old, False)
        self.base[snap["id"]] = snap
        self.base_kids.setdefault(snap["parent"], {})[snap["id"]] = None
        self.index_link(self.base_links, snap, True)

    def drop_base(self, item_id):
        old = self.base.pop(item_id, None)
        if old is not None:
            self.base_kids[old["parent"]].pop(item_id, None)
            self.index_link(self.base_links, old, False)

    def links_of(self, item_id):
        """The links shown here that name the item (its further names)."""
        return list(self.links.get(item_id, {}))

    def free_name(self, parent, name):
        """CF "Conflicts": `name (2)`, or the next free number.  Black box:
        the number goes before the extension (last dot, at most 15 bytes
        after it), as for conflict copies, and the stem is cut to 255."""
        stem, dot, ext = name.rpartition(b".")
        if not dot or not stem or len(ext) > 15:
            stem, dot, ext = name, b"", b""
        taken = self.kids.get(parent, {})
        number = 2
        while True:
            suffix = b" (%d)%s%s" % (number, dot, ext)
            candidate = shorten(stem, 255 - len(suffix)) + suffix
            if candidate not in taken:
                return candidate
            number += 1

    def show(self, snap):
        """Show an item at its place; the item already holding its name
        steps aside (CF "Conflicts": two items with one name)."""
        old = self.items.get(snap["id"])
        if old is not None:
            del self.kids[old["parent"]][old["name"]]
            self.index_link(self.links, old, False)
        holder = self.kids[snap["parent"]].get(snap["name"])
        if holder is not None and holder != snap["id"]:
            aside = dict(self.items[holder])
            aside["name"] = self.free_name(snap["parent"], snap["name"])
            del self.kids[snap["parent"]][snap["name"]]
            self.kids[snap["parent"]][aside["name"]] = holder
            self.items[holder] = aside
            self.stepped.add(holder)
            self.warn("%s steps aside as %r" % (holder, aside["name"]))
        self.items[snap["id"]] = snap
        self.kids[snap["parent"]][snap["name"]] = snap["id"]
        self.index_link(self.links, snap, True)
        if snap["kind"] == "directory":
            self.kids.setdefault(snap["id"], {})

    def unshow(self, item_id):
        snap = self.items.pop(item_id)
        del self.kids[snap["parent"]][snap["name"]]
        self.index_link(self.links, snap, False)
        self.kids.pop(item_id, None)
        self.dirty.discard(item_id)
        self.stepped.discard(item_id)

    def is_inside(self, item_id, folder_id):
        """Whether item_id is folder_id or lies under it (as shown)."""
        while item_id != "root":
            if item_id == folder_id:
                return True
            item_id = self.items[item_id]["parent"]
        return False

    # -- the journal's lists (CF "Format 5", Splices: the base)

    def keep_list(self, item):
        """An upsert read in a record or in the checkpoint joined from (its
        splice expanded), applied or refused by the checks: a file's
        `blocks` (missing: []) become its id's list; an upsert as another
        kind forgets the list."""
        if item["kind"] == "file":
            self.lists[item["id"]] = [dict(ref) for ref in item.get("blocks", [])]
        else:
            self.lists.pop(item["id"], None)

    def forget_list(self, item_id):
        """CF "Splices": a `delete` of the id forgets its list (GUESS: only a
        delete that names the id, not the items deleted with a folder)."""
        self.lists.pop(item_id, None)

    # -- operations (CF "Reading and validation", "Conflicts")

    def upsert(self, snap, ctx):
        old = self.items.get(snap["id"])
        if old is not None and old["kind"] != snap["kind"]:
            raise Refused("upsert would change the kind of %s" % snap["id"])
        if snap["kind"] == LINK:
            # CF "Reading and validation", Link: `of` names no item on this
            # device, a folder or a link; or another item than before.
            named = self.items.get(snap["of"])
            if named is None:
                raise Refused("link %s names no item here (%s)" % (snap["id"], snap["of"]))
            if named["kind"] in ("directory", LINK):
                raise Refused("link %s names a %s" % (snap["id"], named["kind"]))
            if old is not None and old["of"] != snap["of"]:
                raise Refused("link %s would name another item" % snap["id"])
        parent = self.node(snap["parent"])
        if parent is None:
            raise Refused("parent %s does not exist" % snap["parent"])
        if parent["kind"] != "directory":
            raise Refused("parent %s is not a folder" % snap["parent"])
        self.set_base(snap)
        shown = dict(snap)
        if snap["id"] in self.dirty and snap["id"] not in self.stepped:
            # a local rename (a name stepped aside before) keeps its place
            shown["parent"], shown["name"] = old["parent"], old["name"]
        else:
            self.dirty.discard(snap["id"])
            self.stepped.discard(snap["id"])
            if snap["kind"] == "directory" and self.is_inside(snap["parent"], snap["id"]):
                shown["parent"] = "root"        # a folder moved inside itself
                self.dirty.add(snap["id"])      # that placement is pushed
        self.show(shown)
        self.record_version(snap, ctx)

    def delete(self, item_id, ctx, entries):
        if not valid_id(item_id):
            raise Refused("delete of a malformed id or root")
        if item_id not in self.base:
            return                      # CF: delete of an unknown id
        if self.base[item_id]["kind"] == LINK:
            # CF "Format 3", Removing a name: that name only, and not an
            # entry of the trash (but in the entry of a folder this record
            # deletes that held it: finish_trash).  Edits against deletes: a
            # record that deletes a link alone removes that name; it comes
            # back only with an item this record deletes and this device
            # keeps (finish_record).
            self.links_removed.append(self.base[item_id])
            self.drop_base(item_id)
            if item_id in self.items:
                self.link_deletes.append((self.items[item_id], item_id in self.dirty))
                self.unshow(item_id)
            return
        above = self.chain(self.base, item_id)
        ids = self.base_subtree(item_id)
        # CF "Format 3", Removing a name: a folder's entry holds the links
        # in it as any item there; the links of a deleted item are in no
        # entry.
        entries.append({
            "seq": ctx[0], "device": ctx[1], "time": ctx[2], "batch": ctx[3],
            "folder": [self.base[a]["name"] for a in reversed(above)],
            "anc": above, "parent": self.base[item_id]["parent"],
            "items": [self.base[i] for i in ids]})
        for gone in ids:
            self.drop_base(gone)
        # CF "Format 3": deleting the item deletes every link that names it
        # (also an item deleted with its folder).
        for gone in ids:
            for link in list(self.base_links.get(gone, {})):
                self.links_removed.append(self.base[link])
                self.drop_base(link)
        if item_id in self.items:
            self.unshow_deleted(item_id)

    def unshow_deleted(self, item_id):
        """CF "Committing": a folder delete deletes the whole subtree except
        items with uncommitted changes, what is inside them, and the folders
        that lead to them (kept, now uncommitted).  CF "Format 3", Edits
        against deletes: an item is kept too when one of its links was made
        or moved here (also one this record deleted before), and a kept item
        keeps its links; the links of an item that goes, go."""
        shown = self.shown_subtree(item_id)
        moved_links = set(snap["of"] for snap, moved in self.link_deletes if moved)
        keep = set()

        def keep_with(i):
            keep.update(self.shown_subtree(i))
            keep.update(a for a in self.chain(self.items, i))
        for i in shown:
            if self.items[i]["kind"] != LINK and (
                    i in self.dirty or i in moved_links
                    or any(l in self.dirty for l in self.links_of(i))):
                keep_with(i)
        # A link goes with its name's folder unless its item is kept here
        # (a record that deletes a link alone removes that name).
        for i in shown:
            if self.items[i]["kind"] == LINK and self.items[i]["of"] in keep:
                keep_with(i)
        gone = set(i for i in shown if i not in keep)
        elsewhere = []
        for i in shown:
            if i in gone:
                for link in self.links_of(i):
                    if link not in gone:
                        gone.add(link)
                        elsewhere.append(link)
        for link in elsewhere:
            self.drop_base(link)
            self.unshow(link)
        for i in reversed(shown):
            if i not in gone:
                self.drop_base(i)
                self.kept_now.add(i)
            elif i in self.items:
                self.unshow(i)

    def finish_record(self):
        """A name stepped aside and not moved by the record stays a local
        rename (CF "Committing": "until the record's later operation").
        CF "Format 3", Edits against deletes: an item kept against a delete
        of this record keeps the links this record deleted too (every name
        removed there: the edit keeps them all); a link deleted while its
        item stays, goes."""
        for snap, _ in self.link_deletes:
            parent = self.node(snap["parent"])
            if (snap["of"] in self.kept_now and snap["of"] in self.items
                    and snap["id"] not in self.items and parent is not None
                    and parent["kind"] == "directory"):
                self.show(dict(snap))
                self.warn("link %s kept with its item %s" % (snap["id"], snap["of"]))
        self.link_deletes = []
        self.kept_now.clear()
        self.dirty |= self.stepped
        self.stepped.clear()

    # -- versions (CF "File versions"; ARCH "Versions")

    @staticmethod
    def newest_version(rows):
        """The file's newest version (a merge's inputs are not: CF "Format
        4", the upsert after a merge is compared with version N)."""
        plain = [r for r in rows if r["input"] == 0]
        return plain[-1] if plain else None

    def record_version(self, snap, ctx, always=False):
        """A file upsert whose blocks differ from its newest version's (or,
        `always`, one that is the content of a merge).  Returns the row, or
        None when the upsert is no version."""
        if snap["kind"] != "file":
            return None
        rows = self.versions.setdefault(snap["id"], [])
        newest = self.newest_version(rows)
        if not always and newest is not None \
                and content_key(newest["blocks"]) == content_key(snap["blocks"]):
            return None
        when = snap["mtime"] if ctx[2] is None else ctx[2]
        row = {"seq": ctx[0], "input": 0, "device": ctx[1], "time": when,
               "size": snap["size"], "mtime": snap["mtime"],
               "blocks": snap["blocks"]}
        rows.append(row)
        return row

    def record_merge(self, snap, merge, ctx):
        """CF "Format 4", Merges, Versions: the upsert's content is version N
        of the file even when it equals the previous version's, marked
        merged with `with`; the k-th input (from 1) is version N.k, with the
        input's device, time, size, mtime and blocks."""
        rows = self.versions.setdefault(snap["id"], [])
        row = next((r for r in reversed(rows)
                    if r["seq"] == ctx[0] and r["input"] == 0), None)
        if row is None:
            row = self.record_version(snap, ctx, always=True)
        row["mergedWith"], row["mergeKind"] = merge["with"], merge["kind"]
        for k, given in enumerate(merge["inputs"], 1):
            rows.append({"seq": ctx[0], "input": k, "device": given["device"],
                         "time": given["time"], "size": given["size"],
                         "mtime": given["mtime"], "blocks": given["blocks"]})

    # -- trash (CF "The trash"; ARCH "Trash")

    def finish_trash(self, entries, batch):
        """End of a record: entries whose folder the record also deleted join
        that folder's entry; a folder's entry takes earlier entries of the
        same batch that were inside it.  CF "Format 3", Removing a name: a
        link this record removed (its own delete, or its item's) is in no
        entry, except that a link inside a folder this record deleted is in
        the folder's entry like any item there (and counts in its items)."""
        links, self.links_removed = self.links_removed, []
        owner = {}
        for index, entry in enumerate(entries):
            for snap in entry["items"]:
                owner[snap["id"]] = index
        top = list(range(len(entries)))

        def find(index):
            seen = set()
            while top[index] != index and index not in seen:
                seen.add(index)
                index = top[index]
            return index
        for index, entry in enumerate(entries):
            other = owner.get(entry["parent"])
            if other is not None and find(other) != index:
                top[index] = find(other)
        merged = []
        for index, entry in enumerate(entries):
            root = find(index)
            if root != index:
                entries[root]["items"] = entries[root]["items"] + entry["items"]
        for snap in links:
            index = owner.get(snap["parent"])
            if index is not None and snap["id"] not in owner:
                root = find(index)
                entries[root]["items"] = entries[root]["items"] + [snap]
                owner[snap["id"]] = root
        for index, entry in enumerate(entries):
            if find(index) == index:
                merged.append(entry)
        for entry in merged:
            if batch is not None and entry["items"][0]["kind"] == "directory":
                self.take_batch(entry, batch)
            self.trash.append(entry)

    def take_batch(self, entry, batch):
        folder_id = entry["items"][0]["id"]
        place = entry["folder"] + [entry["items"][0]["name"]]
        keep = []
        for old in self.trash:
            inside = (folder_id in old["anc"]) if old["anc"] is not None else (
                old["folder"][:len(place)] == place)
            if old.get("batch") == batch and old["seq"] < entry["seq"] and inside:
                entry["items"] = entry["items"] + old["items"]
            else:
                keep.append(old)
        self.trash = keep

    # -- blob moves (CF "Where a blob is now")

    def relocate(self, moves):
        table = {(m["h"], m["n"], m["f"]): (m["p"], m["o"]) for m in moves}
        self.moved.update(table)
        lists = [b for s in self.items.values() for b in block_lists(s)]
        lists += [b for s in self.base.values() for b in block_lists(s)]
        lists += [row["blocks"] for rows in self.versions.values() for row in rows]
        lists += [b for e in self.trash for s in e["items"] for b in block_lists(s)]
        lists += list(self.lists.values())     # CF "Splices": the bases too
        seen = set()
        for blocks in lists:
            for ref in blocks:
                if id(ref) in seen:
                    continue
                seen.add(id(ref))
                place = table.get((ref["h"], ref["n"], ref.get("p")))
                if place is not None:
                    ref["p"], ref["o"] = place

    # -- retention (SEM "Versions", "The trash"; ARCH pruneHistory)

    def prune(self, now):
        keep_versions = self.settings["versions"] * 1e9
        for rows in self.versions.values():
            rows.sort(key=lambda r: (r["seq"], r["input"]))
            plain = [r for r in rows if r["input"] == 0]
            kept = [r for r in plain[:-1] if now - r["time"] <= keep_versions]
            kept += plain[-1:]
            # CF "Format 4", Merges: inputs are kept and pruned with version
            # N (by N's time, not their own); GUESS: an input whose version N
            # is not there (refused in a history object) goes too.
            seqs, kept = set(r["seq"] for r in kept), set(id(r) for r in kept)
            rows[:] = [r for r in rows if id(r) in kept
                       or (r["input"] > 0 and r["seq"] in seqs)]
        keep_trash = self.settings["trash"] * 1e9
        self.trash = [e for e in self.trash if now - e["time"] <= keep_trash]
