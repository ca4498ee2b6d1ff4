"""Checkpoints and history objects ("Checkpoints", "Shared history, trash and retention")."""


from basics import *  # noqa: F401,F403
from records import *  # noqa: F401,F403

# ---------------------------------------------------------------- checkpoints and history

def decode_checkpoint(obj, seq):
    """CF "checkpoints/<seq>": refused if it does not decode, has a format
    this reader does not read, a `seq` other than its key's, or >= 2^63-1."""
    if not isinstance(obj, dict):
        raise Undecodable("not an object")
    if obj.get("format") not in READ_FORMATS or not is_int(obj.get("format")):
        raise Undecodable("format %r is not read" % obj.get("format"))
    if obj.get("seq") != seq or not is_int(obj.get("seq")) or seq >= (1 << 63) - 1:
        raise Undecodable("seq does not match its key")
    items = require(obj, "items", lambda v: isinstance(v, list), "checkpoint")
    settings = {"versions": DEFAULT_RETENTION, "trash": DEFAULT_RETENTION,
                "merge": dict(MERGE_DEFAULTS)}
    if has(obj, "settings"):
        given = decode_settings(obj["settings"])
        if given is not None:       # black box: out of range refuses them only
            settings.update(given)
    root = decode_root(obj["root"]) if has(obj, "root") else False
    return {"seq": seq, "items": [decode_item(i) for i in items],
            "settings": settings, "root": root}


def decode_history_version(v, first, last):
    """CF "history/<first>-<last>", `versions`; Refused for one version."""
    for field, check in (("seq", is_int), ("id", lambda x: isinstance(x, str)),
                         ("device", lambda x: isinstance(x, str)), ("time", is_int)):
        require(v, field, check, "history version")
    for field, check in (("input", is_int), ("mergedWith", is_int),
                         ("mergeKind", lambda x: isinstance(x, str))):
        if has(v, field):      # CF "Format 4": optional, of their types
            require(v, field, check, "history version")
    if not first <= v["seq"] <= last:
        raise Refused("version outside the object's range")
    if not valid_id(v["id"]):
        raise Refused("malformed id")
    present = [has(v, f) for f in ("size", "mtime", "blocks")]
    if any(present) and not all(present):
        raise Refused("some but not all of size, mtime and blocks")
    row = {"id": v["id"], "seq": v["seq"], "input": 0, "device": v["device"],
           "time": v["time"]}
    # CF "Format 4", Merges: an input is listed with "input": k (absent: 0)
    # and always with its content; a merged version carries "mergedWith" and
    # "mergeKind".  An entry whose input is not 1 to 16 or whose mergedWith
    # is not before its seq is refused alone; of another JSON type the object
    # does not decode (as for the other fields here).  GUESS: an explicit
    # "input": 0 is "not 1 to 16" (refused), and an input without content is
    # refused alone (it cannot take the checkpoint's file's).
    if has(v, "input"):
        row["input"] = v["input"]
        if not 1 <= row["input"] <= MAX_MERGE_INPUTS:
            raise Refused("input not 1 to 16")
        if not all(present):
            raise Refused("an input without its content")
    if has(v, "mergedWith"):
        row["mergedWith"] = v["mergedWith"]
        if not row["mergedWith"] < v["seq"]:
            raise Refused("mergedWith not before its seq")
    if has(v, "mergeKind"):
        row["mergeKind"] = v["mergeKind"]
    if all(present):
        if not (is_int(v["size"]) and is_int(v["mtime"]) and isinstance(v["blocks"], list)):
            raise Undecodable("malformed version")
        if not 0 <= v["size"] <= MAX_SIZE:
            raise Refused("size out of range")
        row.update(size=v["size"], mtime=v["mtime"],
                   blocks=validate_blocks([decode_ref(r) for r in v["blocks"]], v["size"]))
    return row


def decode_history_entry(e, first, last):
    """CF "history/<first>-<last>", `trash`; Refused for one entry."""
    require(e, "seq", is_int, "trash entry")
    require(e, "device", lambda x: isinstance(x, str), "trash entry")
    require(e, "time", is_int, "trash entry")
    folder = [decode_bytestring(n) for n in require(
        e, "folder", lambda x: isinstance(x, list), "trash entry")]
    items = [decode_item(i) for i in require(
        e, "items", lambda x: isinstance(x, list), "trash entry")]
    if not first <= e["seq"] <= last:
        raise Refused("trash entry outside the object's range")
    if not items:
        raise Refused("empty trash entry")
    if not all(valid_name(n) for n in folder):
        raise Refused("a folder name not allowed on Linux")
    snaps = [validate_item(i) for i in items]
    return {"seq": e["seq"], "device": e["device"], "time": e["time"],
            "batch": e.get("batch") if isinstance(e.get("batch"), str) else None,
            "folder": folder, "anc": None, "parent": snaps[0]["parent"],
            "items": snaps}


def decode_history(obj, first, last, warn):
    """CF: refused whole if it does not decode, its format is unknown,
    first > last or its key does not match; else bad parts are refused."""
    if not isinstance(obj, dict) or obj.get("format") not in READ_FORMATS \
            or not is_int(obj.get("format")):
        raise Undecodable("unknown format")
    if obj.get("first") != first or obj.get("last") != last or first > last:
        raise Undecodable("first/last do not match its key")
    out = {"versions": [], "trash": []}
    for field, decode in (("versions", decode_history_version),
                          ("trash", decode_history_entry)):
        parts = obj.get(field) or []        # GUESS: an absent list is empty
        if not isinstance(parts, list):
            raise Undecodable("malformed %s" % field)
        for part in parts:
            try:
                out[field].append(decode(part, first, last))
            except Refused as err:
                warn("history/%d-%d: a %s entry refused: %s" % (first, last, field, err))
    return out
