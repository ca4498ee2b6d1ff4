"""Items, block references and journal records: decoding and the validation rules ("Reading and validation")."""

import hashlib
import unicodedata

from basics import *  # noqa: F401,F403

# ---------------------------------------------------------------- decoding items

def has(obj, field):
    """An optional field is there (black box: JSON null means absent)."""
    return isinstance(obj, dict) and obj.get(field) is not None


def require(obj, field, check, what):
    """A field that must be there with the right JSON type (else undecodable)."""
    if not isinstance(obj, dict) or field not in obj or not check(obj[field]):
        raise Undecodable("%s: missing or malformed `%s`" % (what, field))
    return obj[field]


def decode_ref(ref):
    """A block reference {"h","n"[,"d"|"p","o"[,"s"]]} (CF "ItemSnapshot",
    "Small files"); types only, the rules come in validate_ref."""
    if not isinstance(ref, dict):
        raise Undecodable("a block reference is not an object")
    out = {"h": require(ref, "h", lambda v: isinstance(v, str), "block"),
           "n": require(ref, "n", is_int, "block")}
    if has(ref, "d"):
        out["d"] = decode_base64(require(ref, "d", lambda v: isinstance(v, str), "block"))
    for field in ("p", "o", "s"):
        if has(ref, field):
            check = (lambda v: isinstance(v, str)) if field == "p" else is_int
            out[field] = require(ref, field, check, "block")
    return out


def decode_xattrs(value):
    """CF: {"user.name": "<base64 value>"} (binary values as base64)."""
    if not isinstance(value, dict):
        raise Undecodable("xattrs is not an object")
    out = {}
    for name, data in value.items():
        if not isinstance(data, str):
            raise Undecodable("an xattr value is not a string")
        out[name] = decode_base64(data)
    return out


def decode_item(obj):
    """An ItemSnapshot's fields and types; an unknown kind is undecodable
    (CF "Reading and validation": missing fields, unknown kind)."""
    is_str = lambda v: isinstance(v, str)
    item = {"id": require(obj, "id", is_str, "item"),
            "parent": require(obj, "parent", is_str, "item"),
            "name": decode_bytestring(require(obj, "name", lambda v: True, "item")),
            "kind": require(obj, "kind", is_str, "item"),
            "mode": require(obj, "mode", is_uint32, "item"),
            "mtime": require(obj, "mtime", is_int, "item"),
            "size": require(obj, "size", is_int, "item")}
    if item["kind"] not in KNOWN_KINDS:
        raise Undecodable("unknown kind %r" % item["kind"])
    if has(obj, "blocks"):
        blocks = require(obj, "blocks", lambda v: isinstance(v, list), "item")
        item["blocks"] = [decode_ref(ref) for ref in blocks]
    if has(obj, "target"):
        item["target"] = decode_bytestring(obj["target"])
    if has(obj, "xattrs"):
        item["xattrs"] = decode_xattrs(obj["xattrs"])
    if has(obj, "rdev"):
        item["rdev"] = require(obj, "rdev", is_uint64, "item")
    if has(obj, "of"):
        # CF "Format 3", Links: `of` is a string; of another JSON type the
        # record does not decode (as for any field, on any kind); a string
        # that is no id is refused (validate_link).
        item["of"] = require(obj, "of", lambda v: isinstance(v, str), "item")
    if has(obj, "thumbnails"):
        item["thumbnails"] = decode_thumbnails(obj["thumbnails"])
    if has(obj, "splice"):
        # CF "Format 5", Splices: decoded on any item and in any object (a
        # type error is a type error); what it may stand in is judged later
        # (expand_splice for a record, validate_item refuses it elsewhere).
        item["splice"] = decode_splice(obj["splice"])
    return item


def decode_thumbnails(value):
    """CF "Format 3", Thumbnails: [{"size": int, "blocks": [ref, ...]}].
    Both fields are required: a thumbnail that is not an object, lacks one
    of them or has one of another JSON type makes the record undecodable
    (a thumbnail's references are decoded as content references, `d` in
    base64 included).  The rules (size, blocks, 1 MiB) come in
    validate_thumbnails."""
    if not isinstance(value, list):
        raise Undecodable("thumbnails is not an array")
    out = []
    for thumb in value:
        if not isinstance(thumb, dict):
            raise Undecodable("a thumbnail is not an object")
        size = require(thumb, "size", is_int, "thumbnail")
        blocks = require(thumb, "blocks", lambda v: isinstance(v, list), "thumbnail")
        out.append({"size": size, "blocks": [decode_ref(ref) for ref in blocks]})
    return out


def decode_splice(value):
    """CF "Format 5", Splices: {"of": int, "base": string, "runs": [{"copy":
    [start, count]} or {"new": [ref, ...]}, ...]}.  GUESS (CF is silent on
    type errors inside `splice`): as for an item's fields, a `splice` that
    is not an object, `of` not an int, `base` not a string, `runs` not an
    array, a run not an object, a `copy` not an array of ints, a `new` not an
    array, or a reference in it that does not decode (CF "ItemSnapshot")
    makes the record undecodable.  The rules CF lists as refusing the upsert
    alone (a run with both fields or neither, a `copy` not two ints in range,
    a `new` empty or with a malformed reference, ...) come in expand_splice."""
    if not isinstance(value, dict):
        raise Undecodable("splice is not an object")
    out = {"of": require(value, "of", is_int, "splice"),
           "base": require(value, "base", lambda v: isinstance(v, str), "splice"),
           "runs": []}
    for run in require(value, "runs", lambda v: isinstance(v, list), "splice"):
        if not isinstance(run, dict):
            raise Undecodable("a splice run is not an object")
        one = {}
        if has(run, "copy"):
            one["copy"] = require(run, "copy", lambda v: isinstance(v, list)
                                  and all(is_int(x) for x in v), "splice run")
        if has(run, "new"):
            refs = require(run, "new", lambda v: isinstance(v, list), "splice run")
            one["new"] = [decode_ref(ref) for ref in refs]
        out["runs"].append(one)
    return out


# ---------------------------------------------------------------- validation

def valid_id(value):
    return isinstance(value, str) and HEX32.match(value) is not None


def valid_name(name):
    """CF "Reading and validation": a name valid on Linux."""
    return (0 < len(name) <= 255 and b"/" not in name and b"\0" not in name
            and name not in (b".", b".."))


def validate_ref(ref):
    """CF "ItemSnapshot", block reference: a hash of 64 lowercase hex,
    0 <= n <= 2^44; inline and packed rules ("Small files")."""
    if not HEX64.match(ref["h"]) or not 0 <= ref["n"] <= MAX_SIZE:
        raise Refused("malformed block reference")
    if "d" in ref:
        # CF: exactly n bytes, at most 1024, with no p, o or s
        if "p" in ref or "o" in ref or "s" in ref or len(ref["d"]) != ref["n"] \
                or len(ref["d"]) > INLINE_MAX:
            raise Refused("malformed inline content")
    elif "p" in ref or "o" in ref or "s" in ref:
        # CF "ItemSnapshot": p and o come together (s needs them), p is 32
        # lowercase hex, 0 <= o <= 2^44 and, if present, 0 <= s <= 2^44.
        if not ("p" in ref and "o" in ref and HEX32.match(ref["p"])
                and 0 <= ref["o"] <= MAX_SIZE
                and 0 <= ref.get("s", 0) <= MAX_SIZE):
            raise Refused("malformed packed reference")
    return ref


def validate_blocks(blocks, size):
    refs = [validate_ref(dict(ref)) for ref in blocks]
    if sum(ref["n"] for ref in refs) != size:   # Python ints cannot overflow
        raise Refused("block lengths do not add up to the size")
    return refs


def filter_xattrs(xattrs):
    """CF "Reading and validation", `xattrs`: user.* only, not user.ubiqfs.*,
    names <= 255 bytes, values <= 65536; then in byte order of names kept
    while names plus values total at most 262144 bytes."""
    kept, total = {}, 0
    eligible = {}
    normal = {}
    for name, value in xattrs.items():
        # CF ItemSnapshot `xattrs`: names are kept in NFC; of names equal in
        # NFC, the first in the object counts.
        key = unicodedata.normalize("NFC", name)
        if key in normal:
            continue
        normal[key] = True
        raw = key.encode("utf-8", "surrogatepass")
        if (key.startswith("user.") and not key.startswith("user.ubiqfs.")
                and len(raw) <= 255 and len(value) <= 65536):
            # Ordered by the name as the record spells it.
            eligible[name.encode("utf-8", "surrogatepass")] = (key, value)
    for spelled in sorted(eligible):
        key, value = eligible[spelled]
        total += len(key.encode("utf-8", "surrogatepass")) + len(value)
        if total > 262144:
            break
        kept[key] = value
    return kept


def validate_thumbnails(thumbnails):
    """CF "Reading and validation", Thumbnail, and "Format 3", Thumbnails:
    a well-formed thumbnail of an unknown size, with no block, a malformed
    reference or more than 1 MiB (the sum of its `n`) is dropped silently,
    and so is a second one of a size (the first in array order is kept);
    the item is applied.  (More than 4: with one of each of four sizes there
    cannot be more, so that rule never bites.)"""
    kept, sizes = [], set()
    for thumb in thumbnails:
        if thumb["size"] not in THUMBNAIL_SIZES or not thumb["blocks"]:
            continue
        try:
            refs = [validate_ref(dict(ref)) for ref in thumb["blocks"]]
        except Refused:
            continue
        if sum(ref["n"] for ref in refs) > THUMBNAIL_MAX_BYTES:
            continue
        if thumb["size"] in sizes or len(kept) >= THUMBNAILS_MAX:
            continue
        sizes.add(thumb["size"])
        kept.append({"size": thumb["size"], "blocks": refs})
    return kept


def validate_link(item):
    """CF "Reading and validation", Link, and "Format 3", Links: checked as
    any item first (id, parent, name, size and mtime in range, in
    validate_item); then `of` missing, malformed, `root` or the link's own
    id is refused; otherwise mode, mtime and size are taken as 0 and every
    other field is dropped.  Links are read in records and checkpoints of
    any format."""
    of = item.get("of")
    if of is None or not valid_id(of) or of == item["id"]:
        raise Refused("link %s: `of` missing, malformed, root or its own id"
                      % item["id"])
    return {"id": item["id"], "parent": item["parent"], "name": item["name"],
            "kind": LINK, "mode": 0, "mtime": 0, "size": 0, "of": of}


def validate_item(item):
    """The stateless rules of CF "Reading and validation": returns the
    snapshot as a reader keeps it, or raises Refused."""
    if "splice" in item:
        # CF "Splices": a record's splices are expanded before its items are
        # checked (expand_splice); checkpoints and history objects always
        # carry whole lists, an item with `splice` there is refused.
        raise Refused("%s: a splice outside a journal record" % item["id"])
    if not valid_id(item["id"]):
        raise Refused("malformed id %r" % item["id"])
    if item["parent"] != "root" and not valid_id(item["parent"]):
        raise Refused("malformed parent")
    if item["parent"] == item["id"]:
        raise Refused("parent = id")
    if not valid_name(item["name"]):
        raise Refused("name not valid on Linux")
    if not 0 <= item["size"] <= MAX_SIZE:
        raise Refused("size out of range")
    # CF says "strictly between"; the black box keeps both ends: inclusive.
    if not MTIME_LOW <= item["mtime"] <= MTIME_HIGH:
        raise Refused("mtime out of range")
    kind = item["kind"]
    if kind == LINK:
        return validate_link(item)
    # `of` (links) is dropped on any other kind, `thumbnails` on any but files.
    snap = {"id": item["id"], "parent": item["parent"], "name": item["name"],
            "kind": item["kind"], "mode": item["mode"] & 0o1777,
            "mtime": item["mtime"], "size": item["size"]}
    if kind == "file":
        snap["blocks"] = validate_blocks(item.get("blocks", []), item["size"])
        thumbnails = validate_thumbnails(item.get("thumbnails", []))
        if thumbnails:
            snap["thumbnails"] = thumbnails
    elif kind == "directory":
        snap["size"] = 0
    elif kind == "symlink":
        target = item.get("target")
        if not target or len(target) > 4095 or b"\0" in target:
            raise Refused("bad symlink target")
        snap["target"] = target
        snap["size"] = len(target)
    else:
        # CF "ItemSnapshot": FIFOs, sockets, devices have size 0 (the black
        # box shows 0 whatever the record says); a missing rdev is 0.
        snap["size"] = 0
        if kind in DEVICE_KINDS:
            snap["rdev"] = item.get("rdev", 0)
    xattrs = filter_xattrs(item.get("xattrs", {}))
    if xattrs:
        snap["xattrs"] = xattrs
    return snap


def content_key(blocks):
    """Content is compared by the blocks' h and n, never their place (CF)."""
    return tuple((ref["h"], ref["n"]) for ref in blocks)


def block_lists(snap):
    """Every list of block references a snapshot names: its content and its
    thumbnails' (CF "Format 3": `relocate` moves apply to both)."""
    lists = [snap["blocks"]] if "blocks" in snap else []
    lists += [thumb["blocks"] for thumb in snap.get("thumbnails", [])]
    return lists


# ---------------------------------------------------------------- splices (CF "Format 5")

def list_digest(blocks):
    """CF "Splices", `base`: SHA-256 of "<h>:<n>\n" for each block in order
    (`n` in decimal); places take no part.  (`h` is ASCII when well formed;
    a kept list may hold malformed ones, taken here as UTF-8.)"""
    digest = hashlib.sha256()
    for ref in blocks:
        digest.update(("%s:%d\n" % (ref["h"], ref["n"])).encode("utf-8"))
    return digest.hexdigest()


def check_run(run, of):
    """CF "Splices", Expanding: one run's rules; returns how many blocks it
    gives.  Exactly one of `copy` and `new`; a `copy` is two ints with
    0 <= start, count >= 1, start + count <= of; a `new` is not empty and
    holds only well-formed references."""
    if ("copy" in run) == ("new" in run):
        raise Refused("a splice run has both fields or neither")
    if "copy" in run:
        copy = run["copy"]
        if len(copy) != 2 or not (copy[0] >= 0 and copy[1] >= 1
                                  and copy[0] + copy[1] <= of):
            raise Refused("a splice's copy run is not two ints in range")
        return copy[1]
    if not run["new"]:
        raise Refused("a splice's new run is empty")
    for ref in run["new"]:
        validate_ref(dict(ref))
    return len(run["new"])


def expand_splice(item, kept, record_format):
    """CF "Splices", Expanding: the item with `blocks`, the concatenation of
    its splice's runs (a `copy` takes the kept list's references as they are,
    places included; a `new` its own), in place of `splice`; or Refused (the
    upsert alone) when: the record's format is below 5, the item also has
    `blocks` or is not a file, no list is kept for the id (`kept` None) or its length is not
    `of` or its digest not `base`, a run breaks check_run, or the result
    would have more than 1,048,576 blocks.  The lengths adding up to `size`
    are checked after, as for any item (validate_item)."""
    splice = item["splice"]
    if record_format < SPLICES_FROM:
        raise Refused("%s: a splice in a record of format %d" % (item["id"], record_format))
    if "blocks" in item:
        raise Refused("%s: `blocks` beside `splice`" % item["id"])
    if item.get("kind") != "file":
        raise Refused("%s: a splice of an item that is not a file" % item["id"])
    if kept is None:
        raise Refused("%s: a splice of a file whose list this reader does not keep"
                      % item["id"])
    if len(kept) != splice["of"] or list_digest(kept) != splice["base"]:
        raise Refused("%s: a splice of another base" % item["id"])
    try:
        total = sum(check_run(run, splice["of"]) for run in splice["runs"])
    except Refused as err:
        raise Refused("%s: %s" % (item["id"], err))
    if total > SPLICE_MAX_BLOCKS:
        raise Refused("%s: a splice of more than 1,048,576 blocks" % item["id"])
    blocks = []
    for run in splice["runs"]:
        if "copy" in run:
            start, count = run["copy"]
            blocks.extend(dict(ref) for ref in kept[start:start + count])
        else:
            blocks.extend(dict(ref) for ref in run["new"])
    out = {k: v for k, v in item.items() if k != "splice"}
    out["blocks"] = blocks
    return out


# ---------------------------------------------------------------- records

def decode_settings(value):
    """CF Settings: {"retention": {"versions": S, "trash": S}}.  Black box:
    both fields must be there as whole seconds, else the record does not
    decode; a value out of range refuses the settings alone (None)."""
    retention = value.get("retention") if isinstance(value, dict) else None
    if not isinstance(retention, dict) or not all(
            is_int(retention.get(f)) for f in ("versions", "trash")):
        raise Undecodable("malformed settings")
    out = {f: retention[f] for f in ("versions", "trash")}
    merge = decode_merge_setting(value.get("merge"))
    if any(not 0 <= v <= MAX_RETENTION for v in out.values()):
        return None
    out["merge"] = merge
    return out


def decode_merge_setting(value):
    """CF "Format 4", Settings: what merges: `merge` {"text": bool, ...};
    a kind left out takes its default, a kind not known is ignored, and the
    object absent (every container before format 4) means the defaults.
    GUESS: a known kind that is not a boolean, or a `merge` that is not an
    object, makes the record undecodable ("as for any field")."""
    out = dict(MERGE_DEFAULTS)
    if value is None:
        return out
    if not isinstance(value, dict):
        raise Undecodable("malformed merge settings")
    for kind in MERGE_DEFAULTS:
        if has(value, kind):
            out[kind] = require(value, kind, lambda v: isinstance(v, bool), "merge settings")
    return out


def decode_root(value):
    """CF "journal/<seq>" `root`: {"mode", "mtime", "xattrs"?}, the types of
    an item's fields (else the record does not decode); a mtime out of range
    refuses the root's attributes alone (None); modes and xattrs are kept as
    an item's."""
    if not isinstance(value, dict):
        raise Undecodable("malformed root")
    require(value, "mode", is_uint32, "root")
    require(value, "mtime", is_int, "root")
    xattrs = decode_xattrs(value["xattrs"]) if has(value, "xattrs") else {}
    if not MTIME_LOW <= value["mtime"] <= MTIME_HIGH:
        return None
    return {"mode": value["mode"] & 0o1777, "mtime": value["mtime"],
            "xattrs": filter_xattrs(xattrs)}


def decode_op(op):
    kind = op.get("op") if isinstance(op, dict) else None
    if kind == "upsert":
        return {"op": "upsert", "item": decode_item(op.get("item"))}
    if kind == "delete":
        return {"op": "delete", "id": require(op, "id", lambda v: isinstance(v, str), "delete")}
    raise Undecodable("unknown op %r" % kind)


def decode_move(move):
    """CF "Where a blob is now": a malformed move is refused alone (None);
    black box: one of the wrong JSON types makes the record undecodable."""
    is_str = lambda v: isinstance(v, str)
    for field, check in (("h", is_str), ("n", is_int), ("f", is_str),
                         ("p", is_str), ("o", is_int)):
        require(move, field, check, "move")
    if not (HEX64.match(move["h"]) and 0 <= move["n"] <= MAX_SIZE
            and valid_id(move["f"]) and valid_id(move["p"])
            and move["f"] != move["p"] and move["o"] >= 0):
        return None
    return {k: move[k] for k in ("h", "n", "f", "p", "o")}


def decode_merge(merge):
    """CF "Format 4", Merges: {"id", "base", "with", "kind", "inputs":
    [{"device", "time", "size", "mtime", "blocks"}]}.  A field of another
    JSON type makes the record undecodable; GUESS: so does a missing one
    (null is absent), as for an item's fields.  The rules come in
    validate_merge."""
    if not isinstance(merge, dict):
        raise Undecodable("a merge is not an object")
    is_str = lambda v: isinstance(v, str)
    out = {"id": require(merge, "id", is_str, "merge"),
           "base": require(merge, "base", is_int, "merge"),
           "with": require(merge, "with", is_int, "merge"),
           "kind": require(merge, "kind", is_str, "merge"),
           "inputs": []}
    for given in require(merge, "inputs", lambda v: isinstance(v, list), "merge"):
        if not isinstance(given, dict):
            raise Undecodable("a merge input is not an object")
        one = {"device": require(given, "device", is_str, "merge input")}
        for field in ("time", "size", "mtime"):
            one[field] = require(given, field, is_int, "merge input")
        blocks = require(given, "blocks", lambda v: isinstance(v, list), "merge input")
        one["blocks"] = [decode_ref(ref) for ref in blocks]
        out["inputs"].append(one)
    return out


def validate_merge(merge, seq):
    """CF "Format 4", Merges: the rules of one merge, checked alone (Refused
    drops it, the record still applies): `id` well formed and not the root;
    1 <= base < with < the record's number; `kind` 1 to 16 lowercase ASCII
    letters; 1 to 16 inputs, each with a `device` of 1 to 255 bytes, `time`
    and `mtime` in the range of an mtime, `size` in range, well-formed
    blocks adding up to `size`.  (That the record upserts a file with that
    id is checked where the record is applied.)"""
    if not valid_id(merge["id"]):
        raise Refused("merge of a malformed id or root")
    if not 1 <= merge["base"] < merge["with"] < seq:
        raise Refused("merge of %s: not 1 <= base < with < %d" % (merge["id"], seq))
    if not MERGE_KIND.match(merge["kind"]):
        raise Refused("merge of %s: malformed kind" % merge["id"])
    if not 1 <= len(merge["inputs"]) <= MAX_MERGE_INPUTS:
        raise Refused("merge of %s: not 1 to 16 inputs" % merge["id"])
    inputs = []
    for given in merge["inputs"]:
        if not 1 <= len(given["device"].encode("utf-8")) <= 255:
            raise Refused("merge of %s: an input's device is not 1 to 255 bytes"
                          % merge["id"])
        if not (MTIME_LOW <= given["time"] <= MTIME_HIGH
                and MTIME_LOW <= given["mtime"] <= MTIME_HIGH):
            raise Refused("merge of %s: an input's time or mtime out of range"
                          % merge["id"])
        if not 0 <= given["size"] <= MAX_SIZE:
            raise Refused("merge of %s: an input's size out of range" % merge["id"])
        inputs.append(dict(given, blocks=validate_blocks(given["blocks"], given["size"])))
    return dict(merge, inputs=inputs)


def decode_record(rec):
    """A JournalRecord that is not a tombstone (CF "journal/<seq>")."""
    is_str = lambda v: isinstance(v, str)
    # Black box: a record without `commit` ("not read today") is skipped too.
    for field, check in (("device", is_str), ("deviceName", is_str),
                         ("commit", is_str), ("time", is_int),
                         ("ops", lambda v: isinstance(v, list))):
        require(rec, field, check, "record")
    moves = rec["relocate"] if has(rec, "relocate") else []
    if not isinstance(moves, list):
        raise Undecodable("malformed relocate")
    if has(rec, "batch") and not isinstance(rec["batch"], str):
        raise Undecodable("malformed batch")     # black box
    if len(rec["ops"]) > MAX_OPS or len(moves) > MAX_OPS:
        raise Undecodable("more than 100,000 operations or blob moves")
    out = {"format": rec["format"], "device": rec["deviceName"], "time": rec["time"],
           "ops": [decode_op(op) for op in rec["ops"]],
           "moves": [decode_move(m) for m in moves],
           "batch": rec.get("batch"), "settings": False, "root": False}
    # CF "Format 4", Merges: `merges` in a record of format 3 or less is ignored.
    out["merges"] = []
    if has(rec, "merges") and rec["format"] >= MERGES_FROM:
        if not isinstance(rec["merges"], list):
            raise Undecodable("malformed merges")
        out["merges"] = [decode_merge(m) for m in rec["merges"]]
    if has(rec, "settings"):
        out["settings"] = decode_settings(rec["settings"])
    if has(rec, "root"):
        out["root"] = decode_root(rec["root"])
    return out
