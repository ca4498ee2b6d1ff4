#!/usr/bin/env python3
"""Clean-room reader of a ubiqfs container in a local folder store.

Written from docs/CONTAINER-FORMAT.md (cited as CF, with its section names),
with help from SEMANTICS.md (SEM) and ARCHITECTURE.md (ARCH).  It rebuilds the
tree, the file versions and the trash as a fresh device would, fetches and
verifies every file's content, and prints one JSON object.  Every name of
an item (its own, and each link's) is an entry of its own with the
item's attributes and versions, and `names` when there is more than one.

    python3 ubiqfs_reader.py CONTAINER_FOLDER [--passphrase-file FILE]

Exit status: 0 all well; 1 an object had to be refused while serving content
(the JSON is still printed, that file's sha256 is null); 2 the container
cannot be opened (nothing printed); 3 the pull stopped with an error (the JSON
shows the tree as far as the device got).
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources

import argparse
import base64
import hashlib
import json
import sys
import time

from basics import *  # noqa: F401,F403
from store import *  # noqa: F401,F403
from crypto import *  # noqa: F401,F403
from records import *  # noqa: F401,F403
from device import *  # noqa: F401,F403
from history import *  # noqa: F401,F403
from pull import *  # noqa: F401,F403

# ---------------------------------------------------------------- content

class ContentReader:
    """Fetch and verify blocks (CF "blocks/<hash>", "Small files", "Packed
    blobs"): the length and the name must match, else the file is EIO."""

    def __init__(self, store, codec, moved):
        self.store, self.codec, self.moved = store, codec, moved

    def block(self, ref):
        if ref["n"] == 0:
            return b""      # black box: a reader never fetches an empty block
        if "d" in ref:
            data = ref["d"]
        elif "p" in ref:
            data = self.packed(ref, ref["p"], ref["o"])
        else:
            key = "blocks/" + ref["h"]
            data = self.codec.open_object(key, self.store.get(key, BLOCK_LIMIT))
        if len(data) != ref["n"] or self.codec.name_of(data) != ref["h"]:
            raise Damaged("block %s does not match its hash" % ref["h"])
        return data

    def packed(self, ref, pack, offset, tried=()):
        """A ranged GET of o ..< o + s (s missing means n)."""
        length = ref.get("s", ref["n"])
        try:
            raw = self.store.get("packs/" + pack, BLOCK_LIMIT, offset, offset + length)
        except NotFound:
            # ARCH: a fill that names a pack gone since looks the blob up by
            # name; black box: only among the moves out of that pack.
            place = self.moved.get((ref["h"], ref["n"], pack))
            if place is None or place[0] in tried:
                raise Damaged("cannot download blob %s: pack %s is gone"
                              % (ref["h"], pack))
            return self.packed(ref, place[0], place[1], tried + (pack,))
        # CF "Store primitives": a range past the end is clamped; the length
        # and name checks of block() judge what came back.
        return self.codec.open_blob(ref["h"], raw)

    def sha256(self, blocks):
        digest = hashlib.sha256()
        for ref in blocks:
            try:
                digest.update(self.block(ref))
            except NotFound:
                raise Damaged("cannot download block %s: not in the store" % ref["h"])
        return digest.hexdigest()


# ---------------------------------------------------------------- output

def item_json(path, snap, sha256, names):
    """One name of an item: its path with the item's own attributes (a link
    is printed as the item it names, never as kind "link"); `names` when the
    item has more than one (CF "Format 3", Names: 1 + the links naming it)."""
    out = {"path": [encode_bytestring(n) for n in path],
           "kind": snap["kind"], "mode": snap["mode"], "mtime": snap["mtime"],
           "size": snap["size"]}
    if snap["kind"] == "file":
        out["sha256"] = sha256
    if snap["kind"] == "symlink":
        out["target"] = encode_bytestring(snap["target"])
    if snap.get("xattrs"):
        # Pairs, not an object: a JSON library may merge names a reader keeps apart.
        out["xattrs"] = [[k, base64.b64encode(v).decode("ascii")]
                         for k, v in sorted(snap["xattrs"].items(),
                                            key=lambda kv: kv[0].encode("utf-8"))]
    if snap["kind"] in DEVICE_KINDS:
        out["rdev"] = snap["rdev"]
    if names > 1:
        out["names"] = names
    return out


def file_sha256(device, item_id, snap, content, errors):
    """The content's SHA-256 (fetched and verified once per item), or None
    with an error (the open would fail with EIO)."""
    try:
        return content.sha256(snap["blocks"])
    except Damaged as err:
        where = b"/".join(device.path(item_id)).decode("utf-8", "replace")
        errors.append("%s: %s (EIO)" % (where, err))
        return None


def names_shown(device):
    """[(path, item id)]: every name shown, an item's own and its links'."""
    out = []
    for item_id, snap in device.items.items():
        owner = item_id
        if snap["kind"] == LINK:
            owner = snap["of"]
            named = device.items.get(owner)
            if named is None or named["kind"] in ("directory", LINK):
                # never made by the rules above; not printed if it were
                device.warn("link %s names no item shown" % item_id)
                continue
        out.append((device.path(item_id), owner))
    return out


def version_json(row):
    """One version; CF "Format 4": `input` k for version N.k (k > 0 only),
    `mergedWith` for a merged version (its kind is not printed)."""
    out = {"seq": row["seq"], "device": row["device"], "time": row["time"],
           "size": row["size"]}
    if row["input"] > 0:
        out["input"] = row["input"]
    if "mergedWith" in row:
        out["mergedWith"] = row["mergedWith"]
    return out


def trash_json(entry):
    path = entry["folder"] + [entry["items"][0]["name"]]
    return {"path": [encode_bytestring(n) for n in path], "seq": entry["seq"],
            "device": entry["device"], "time": entry["time"],
            "items": len(entry["items"])}


def report(reader, info, codec, now):
    """The JSON the brief asks for; returns (object, errors)."""
    device, errors = reader.device, []
    device.prune(now)
    content = ContentReader(reader.store, codec, device.moved)
    shown = names_shown(device)
    shown.sort(key=lambda entry: b"/".join(entry[0]))
    names, digests = {}, {}
    for _, owner in shown:
        names[owner] = names.get(owner, 0) + 1
    items, versions = [], []
    for path, owner in shown:
        snap = device.items[owner]
        if snap["kind"] == "file" and owner not in digests:
            digests[owner] = file_sha256(device, owner, snap, content, errors)
        items.append(item_json(path, snap, digests.get(owner), names[owner]))
        if snap["kind"] == "file":
            # The versions are the item's: listed under each of its names,
            # newest first; CF "Format 4": a merge's inputs after version N.
            rows = sorted(device.versions.get(owner, []),
                          key=lambda r: (-r["seq"], r["input"]))
            versions.append({"path": items[-1]["path"],
                             "versions": [version_json(r) for r in rows]})
    # SEM "The trash": entries not all of whose items are live, newest first
    # GUESS (black box): within one seq, by the deleted item's id
    listed = [e for e in device.trash
              if not all(s["id"] in device.items for s in e["items"])]
    listed.sort(key=lambda e: (-e["seq"], e["items"][0]["id"]))
    if device.root is not None:
        root = dict(device.root, kind="directory", size=0, path=[])
        root["xattrs"] = [[k, base64.b64encode(v).decode("ascii")]
                          for k, v in sorted(root["xattrs"].items(),
                                             key=lambda kv: kv[0].encode("utf-8"))]
        if not root["xattrs"]:
            del root["xattrs"]
        items.insert(0, root)
    return {"format": info["format"], "encrypted": codec.encrypted,
            "items": items, "versions": versions,
            "trash": [trash_json(e) for e in listed]}, errors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("container", help="the container's folder (with container.json)")
    parser.add_argument("--passphrase-file", help="its first line is the passphrase")
    args = parser.parse_args(argv)
    try:
        store = LocalFolderStore(args.container)
        passphrase = read_passphrase(args.passphrase_file) if args.passphrase_file else None
        info, codec = load_container(store, passphrase)
        reader = Reader(store, info, codec)
        reader.pull()
        result, errors = report(reader, info, codec, time.time_ns())
    except Fatal as err:
        print("ubiqfs_reader: error: %s" % err, file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(result) + "\n")
    for error in errors:
        print("ubiqfs_reader: error: %s" % error, file=sys.stderr)
    if reader.stopped:
        print("ubiqfs_reader: error: the pull stopped: %s" % reader.stopped, file=sys.stderr)
        return 3
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
