#!/usr/bin/env python3
"""Clean-room reader of a ubiqfs container in a local folder store.

Written from docs/CONTAINER-FORMAT.md (cited as CF, with its section names),
with help from SEMANTICS.md (SEM) and ARCHITECTURE.md (ARCH).  It rebuilds the
tree, the file versions and the trash as a fresh device would, fetches and
verifies every file's content, and prints one JSON object.

    python3 ubiqfs_reader.py CONTAINER_FOLDER [--passphrase-file FILE]

Exit status: 0 all well; 1 an object had to be refused while serving content
(the JSON is still printed, that file's sha256 is null); 2 the container
cannot be opened (nothing printed); 3 the pull stopped with an error (the JSON
shows the tree as far as the device got).
"""

import argparse
import base64
import binascii
import decimal
import errno
import hashlib
import hmac
import json
import os
import re
import stat
import sys
import time
import unicodedata

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

# ---------------------------------------------------------------- constants

MIB = 1 << 20
MAX_SIZE = 1 << 44                      # CF "Reading and validation": 16 TiB
MTIME_LOW, MTIME_HIGH = -(1 << 62), (1 << 62) - 1
MAX_OPS = 100_000                       # CF "Encoding": JournalRecord.maxOperations
DEFAULT_RETENTION = 2_592_000           # CF "journal/<seq>", Settings: 30 days
MAX_RETENTION = 3_155_760_000           # 36525 days
INLINE_MAX = 1024                       # CF "Small files": inline content
KNOWN_KINDS = {"file", "directory", "symlink", "fifo", "socket",
               "characterDevice", "blockDevice"}
DEVICE_KINDS = {"characterDevice", "blockDevice"}
READ_FORMATS = (1, 2)                   # formats this reader understands
SCHEME = "ubiqfs-aes256gcm-1"
FROM_CHECKPOINT = "(from a checkpoint)"  # CF "File versions"

HEX32 = re.compile(r"[0-9a-f]{32}\Z")
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
SEQ_KEY = re.compile(r"[0-9]{20}\Z")
HISTORY_KEY = re.compile(r"([0-9]{20})-([0-9]{20})\Z")


def room(limit):
    """CF "Encoding": each limit with an eighth more and 64 KiB for sealing."""
    return limit + limit // 8 + 64 * 1024


RECORD_LIMIT = room(64 * MIB)
JSON_LIMIT = room(512 * MIB)
BLOCK_LIMIT = room(64 * MIB)


class NotFound(Exception):
    """The store has no object at the key."""


class Damaged(Exception):
    """An object refused as damaged (too large, not a file, does not open)."""


class Fatal(Exception):
    """The container cannot be read at all: message, nothing printed."""


class StopPull(Exception):
    """The pull stops (CF "Reading and validation"); the tree stays as is."""


class Undecodable(Exception):
    """A record, checkpoint or history object that does not decode."""


class Refused(Exception):
    """One operation (or item, version, entry) refused by validation."""


def seq_key(prefix, seq):
    """CF "Layout": sequence numbers are exactly 20 decimal digits."""
    return "%s/%020d" % (prefix, seq)


def is_int(value, low=-(1 << 63), high=(1 << 63) - 1):
    """A JSON integer that fits the field (black box: Int64 unless said;
    a value that does not fit makes the object undecodable)."""
    return type(value) is int and low <= value <= high   # true/false are not


def is_uint32(value):
    return is_int(value, 0, (1 << 32) - 1)          # mode


def is_uint64(value):
    return is_int(value, 0, (1 << 64) - 1)          # rdev



def exact_numbers(value):
    """GUESS (black box): a number written 420.0 decodes as the integer 420,
    as Swift's JSONDecoder does; other fractions stay floats."""
    number = decimal.Decimal(value)
    if number == number.to_integral_value():
        return int(number)
    return float(number)


# ---------------------------------------------------------------- ByteString

def decode_bytestring(value):
    """CF "Encoding": a JSON string (UTF-8) or {"base64": ...}."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise Undecodable("a name is not valid Unicode")
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return decode_base64(value["base64"])
    raise Undecodable("a name is neither a string nor {base64}")


def decode_base64(text):
    """CF "Encoding": standard base64 with padding."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise Undecodable("invalid base64")


def encode_bytestring(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def parse_json(data):
    """CF "Encoding": JSON in UTF-8; NaN and Infinity are not JSON."""
    def no_constant(name):
        raise ValueError(name)
    try:
        obj = json.loads(data.decode("utf-8"), parse_constant=no_constant,
                         parse_float=exact_numbers,
                         object_pairs_hook=first_of_each_name)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Undecodable("not JSON")
    check_unicode(obj)
    return obj


def first_of_each_name(pairs):
    """CF "journal/<seq>": a name given twice in an object counts once, with
    its first value (Python's json would keep the last)."""
    obj = {}
    for name, value in pairs:
        obj.setdefault(name, value)
    return obj


def check_unicode(obj):
    """Black box: a lone surrogate escape (\\ud800) makes the object
    undecodable, as in Swift."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise Undecodable("a string is not valid Unicode")


# ---------------------------------------------------------------- the store

class LocalFolderStore:
    """CF "LocalFolderStore": the container is a folder; keys are paths."""

    def __init__(self, folder):
        self.folder = os.path.abspath(folder)
        # GUESS: only a running mount tells a missing store from a new one;
        # opening the store creates `.tmp` (CF).  A reader does not create it,
        # so a folder without it is read, and only a folder (or `.tmp`) that
        # goes away while reading makes the store unreachable.
        self.had_tmp = os.path.isdir(os.path.join(self.folder, ".tmp"))

    def _path(self, key):
        # CF "LocalFolderStore": keys with an empty component, ./.., a
        # component starting with '.', a leading '/' or a NUL are refused.
        parts = key.split("/")
        if key.startswith("/") or "\0" in key or any(
                p == "" or p.startswith(".") for p in parts):
            raise Damaged("key %r refused" % key)
        return os.path.join(self.folder, *parts)

    def _check_reachable(self):
        # CF: a missing object is notFound only while `.tmp` is there.
        probe = ".tmp" if self.had_tmp else ""
        if not os.path.isdir(os.path.join(self.folder, probe)):
            raise Fatal("the store is unreachable: %s is missing (not a "
                        "container folder, or its disk is gone)"
                        % os.path.join(self.folder, probe))

    def get(self, key, limit, start=0, end=None):
        """The object's bytes (or [start, end), clamped to its size)."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(self._path(key), flags)
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.ENOTDIR):
                self._check_reachable()
                raise NotFound(key)
            raise Damaged("%s cannot be opened: %s" % (key, err.strerror))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Damaged("%s is not a regular file" % key)
            if info.st_size > limit:      # CF "Encoding": checked before reading
                raise Damaged("%s is larger than may be read" % key)
            end = info.st_size if end is None else min(end, info.st_size)
            return self._pread_all(fd, start, max(0, end - start))
        finally:
            os.close(fd)

    @staticmethod
    def _pread_all(fd, offset, length):
        chunks = []
        while length > 0:
            chunk = os.pread(fd, min(length, 16 * MIB), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            length -= len(chunk)
        return b"".join(chunks)

    def list(self, prefix):
        """CF: readdir of the prefix's folder, skipping '.' names, by bytes."""
        folder, _, start = prefix.rpartition("/")
        self._check_reachable()
        try:
            names = os.listdir(os.fsencode(self._path(folder)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as err:
            raise Fatal("cannot list %s: %s" % (prefix, err.strerror))
        keys = [folder.encode() + b"/" + n for n in names
                if not n.startswith(b".") and n.startswith(start.encode())]
        return [k.decode("utf-8", "surrogateescape") for k in sorted(keys)]


# ---------------------------------------------------------------- encryption

def unpad(plain):
    """CF "Sealed objects": strip at the last non-zero byte, which must be
    0x80 (black box: the Padmé length itself is not checked)."""
    stripped = plain.rstrip(b"\0")
    if not stripped or stripped[-1] != 0x80:
        raise Damaged("bad padding")
    return stripped[:-1]


def open_sealed(key, data, aad):
    """nonce (12) || ciphertext || tag (16), AES-256-GCM (CF "Encryption")."""
    if len(data) < 28:
        raise Damaged("sealed object too short")
    try:
        return AESGCM(key).decrypt(data[:12], data[12:], aad)
    except InvalidTag:
        raise Damaged("does not open with the container's key")


def hkdf(master, container_id, info):
    """CF "Subkeys": HKDF-SHA256, salt `ubiqfs <id>`, 32 bytes."""
    return HKDF(algorithm=hashes.SHA256(), length=32,
                salt=("ubiqfs " + container_id).encode(),
                info=info.encode()).derive(master)


class Codec:
    """Content names and object opening: plain or encrypted (CF)."""

    def __init__(self, container_id, master=None):
        self.encrypted = master is not None
        if self.encrypted:
            self.names = hkdf(master, container_id, "ubiqfs names")
            self.content = hkdf(master, container_id, "ubiqfs content")
            self.metadata = hkdf(master, container_id, "ubiqfs metadata")

    def name_of(self, data):
        """CF "Names of content": SHA-256, or HMAC under the names key."""
        if self.encrypted:
            return hmac.new(self.names, data, hashlib.sha256).hexdigest()
        return hashlib.sha256(data).hexdigest()

    def open_object(self, key, data):
        """CF "Sealed objects": AAD `ubiqfs object <key>`, then unpadded."""
        if not self.encrypted:
            return data
        subkey = self.content if key.startswith("blocks/") else self.metadata
        return unpad(open_sealed(subkey, data, ("ubiqfs object " + key).encode()))

    def open_blob(self, name, data):
        """CF "Packed blobs": AAD `ubiqfs blob <h>` under the content key."""
        if not self.encrypted:
            return data
        return unpad(open_sealed(self.content, data, ("ubiqfs blob " + name).encode()))


def read_passphrase(path):
    """SEM/--help: the passphrase is the file's first line."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise Fatal("cannot read the passphrase file %s: %s" % (path, err.strerror))
    # Black box: the line ends at the first "\n" that does not follow a
    # "\r"; a "\r\n" is kept as part of the passphrase (one Swift Character).
    for index, byte in enumerate(data):
        if byte == 0x0A and (index == 0 or data[index - 1] != 0x0D):
            return data[:index]
    return data


def unwrap_key(obj, key_id, container_id, passphrase):
    """CF "Master key and passphrases": scrypt, then AES-GCM of K."""
    kdf = obj.get("kdf") if isinstance(obj, dict) else None
    if not isinstance(kdf, dict) or obj.get("id") != key_id:
        return None
    n, r, p = kdf.get("n"), kdf.get("r"), kdf.get("p")
    if not (is_int(n) and 1 << 10 <= n <= 1 << 22 and n & (n - 1) == 0
            and r == 8 and p == 1 and is_int(r) and is_int(p)):
        return None
    try:
        salt = decode_base64(kdf.get("salt", ""))
        sealed = decode_base64(obj.get("sealed", ""))
    except (Undecodable, AttributeError):
        return None
    if len(salt) != 32:
        return None
    try:
        kek = Scrypt(salt=salt, length=32, n=n, r=8, p=1).derive(passphrase)
    except (MemoryError, ValueError):       # n = 2^22 needs 4 GiB
        return None
    aad = ("ubiqfs key %s %s" % (container_id, key_id)).encode()
    try:
        master = open_sealed(kek, sealed, aad)
    except Damaged:
        return None
    return master if len(master) == 32 else None


def unlock(store, info, passphrase):
    """Try each keys/ object; none opening is "wrong passphrase"."""
    keys = [k for k in store.list("keys/") if HEX32.match(k[len("keys/"):])]
    if passphrase is None:
        raise Fatal("the container is encrypted: give its passphrase "
                    "(--passphrase-file FILE)")
    for key in keys:
        try:
            obj = parse_json(store.get(key, JSON_LIMIT))
        except (NotFound, Damaged, Undecodable):
            continue
        master = unwrap_key(obj, key[len("keys/"):], info["id"], passphrase)
        if master is not None:
            return master
    raise Fatal("wrong passphrase: none of the container's %d key objects "
                "opens with it" % len(keys))


def check_container_mac(info, master):
    """CF: `check` = HMAC(metadata key, "ubiqfs container id format bs created")."""
    metadata = hkdf(master, info["id"], "ubiqfs metadata")
    text = "ubiqfs container %s %d %d %d" % (
        info["id"], info["format"], info["blockSize"], info["created"])
    mac = hmac.new(metadata, text.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, info["encryption"].get("check", "")):
        raise Fatal("container.json refused: its fields do not match its "
                    "encryption check (it was changed)")


# ---------------------------------------------------------------- container.json

def load_container(store, passphrase):
    """CF "container.json" and "Encryption": open the container, or Fatal."""
    try:
        info = parse_json(store.get("container.json", JSON_LIMIT))
    except NotFound:
        raise Fatal("no container.json in %s" % store.folder)
    except (Damaged, Undecodable) as err:
        raise Fatal("container.json refused: %s" % err)
    if not isinstance(info, dict):
        raise Fatal("container.json refused: not a JSON object")
    fmt = info.get("format")
    if not is_int(fmt) or fmt not in READ_FORMATS:
        raise Fatal("the container has format %r; this reader supports 1 and 2" % fmt)
    if not (isinstance(info.get("id"), str) and HEX32.match(info["id"])):
        raise Fatal("container.json refused: malformed id")
    size = info.get("blockSize")
    if not (is_int(size) and 4096 <= size <= 67108864):
        raise Fatal("container.json refused: blockSize %r out of range" % size)
    if not is_int(info.get("created")):
        raise Fatal("container.json refused: malformed created")
    return info, open_codec(store, info, passphrase)


def open_codec(store, info, passphrase):
    enc = info.get("encryption")
    if enc is None:
        # CF: a device that finds keys/ objects refuses a stripped container.json
        if store.list("keys/"):
            raise Fatal("container.json refused: it has no `encryption` but "
                        "the store holds key objects (it was stripped)")
        return Codec(info["id"])
    if not isinstance(enc, dict) or enc.get("scheme") != SCHEME:
        raise Fatal("unknown encryption scheme %r" % (
            enc.get("scheme") if isinstance(enc, dict) else enc))
    if not (isinstance(enc.get("check"), str) and HEX64.match(enc["check"])):
        raise Fatal("container.json refused: malformed encryption check")
    master = unlock(store, info, passphrase)
    check_container_mac(info, master)
    return Codec(info["id"], master)


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
    return item


# ---------------------------------------------------------------- validation

def valid_id(value):
    return isinstance(value, str) and HEX32.match(value) is not None


def valid_name(name):
    """CF "Reading and validation": a name valid on Linux."""
    return (0 < len(name) <= 255 and b"/" not in name and b"\0" not in name
            and name not in (b".", b".."))


def validate_ref(ref):
    """CF: a hash of 64 lowercase hex, 0 <= n <= 2^44; inline and packed
    rules of "Small files"."""
    if not HEX64.match(ref["h"]) or not 0 <= ref["n"] <= MAX_SIZE:
        raise Refused("malformed block reference")
    if "d" in ref:
        # CF: refused with p or o; black box: with s too
        if "p" in ref or "o" in ref or "s" in ref or len(ref["d"]) != ref["n"] \
                or len(ref["d"]) > INLINE_MAX:
            raise Refused("malformed inline content")
    elif "p" in ref or "o" in ref or "s" in ref:
        # Black box: p and o come together, p is 32 lowercase hex, o and s
        # are >= 0, and s needs p.
        if not ("p" in ref and "o" in ref and HEX32.match(ref["p"])
                and ref["o"] >= 0 and ref.get("s", 0) >= 0):
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


def validate_item(item):
    """The stateless rules of CF "Reading and validation": returns the
    snapshot as a reader keeps it, or raises Refused."""
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
    snap = {"id": item["id"], "parent": item["parent"], "name": item["name"],
            "kind": item["kind"], "mode": item["mode"] & 0o1777,
            "mtime": item["mtime"], "size": item["size"]}
    kind = item["kind"]
    if kind == "file":
        snap["blocks"] = validate_blocks(item.get("blocks", []), item["size"])
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
    if any(not 0 <= v <= MAX_RETENTION for v in out.values()):
        return None
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
    out = {"device": rec["deviceName"], "time": rec["time"],
           "ops": [decode_op(op) for op in rec["ops"]],
           "moves": [decode_move(m) for m in moves],
           "batch": rec.get("batch"), "settings": False, "root": False}
    if has(rec, "settings"):
        out["settings"] = decode_settings(rec["settings"])
    if has(rec, "root"):
        out["root"] = decode_root(rec["root"])
    return out


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
        self.versions = {}         # id -> [version rows], oldest first
        self.trash = []            # entries, in the order they were recorded
        self.settings = {"versions": DEFAULT_RETENTION, "trash": DEFAULT_RETENTION}
        # The root's mode, mtime and xattrs, once a record or checkpoint said them.
        self.root = None
        self.moved = {}            # (h, n, old pack) -> (pack, offset)
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

    def set_base(self, snap):
        old = self.base.get(snap["id"])
        if old is not None:
            self.base_kids[old["parent"]].pop(snap["id"], None)
        self.base[snap["id"]] = snap
        self.base_kids.setdefault(snap["parent"], {})[snap["id"]] = None

    def drop_base(self, item_id):
        old = self.base.pop(item_id, None)
        if old is not None:
            self.base_kids[old["parent"]].pop(item_id, None)

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
        if snap["kind"] == "directory":
            self.kids.setdefault(snap["id"], {})

    def unshow(self, item_id):
        snap = self.items.pop(item_id)
        del self.kids[snap["parent"]][snap["name"]]
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

    # -- operations (CF "Reading and validation", "Conflicts")

    def upsert(self, snap, ctx):
        old = self.items.get(snap["id"])
        if old is not None and old["kind"] != snap["kind"]:
            raise Refused("upsert would change the kind of %s" % snap["id"])
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
        above = self.chain(self.base, item_id)
        ids = self.base_subtree(item_id)
        entries.append({
            "seq": ctx[0], "device": ctx[1], "time": ctx[2], "batch": ctx[3],
            "folder": [self.base[a]["name"] for a in reversed(above)],
            "anc": above, "parent": self.base[item_id]["parent"],
            "items": [self.base[i] for i in ids]})
        for gone in ids:
            self.drop_base(gone)
        if item_id in self.items:
            self.unshow_deleted(item_id)

    def unshow_deleted(self, item_id):
        """CF "Committing": a folder delete deletes the whole subtree except
        items with uncommitted changes, what is inside them, and the folders
        that lead to them (kept, now uncommitted)."""
        shown = self.shown_subtree(item_id)
        keep = set()
        for i in shown:
            if i in self.dirty:
                keep.update(self.shown_subtree(i))
                keep.update(a for a in self.chain(self.items, i))
        for i in reversed(shown):
            if i not in keep:
                self.unshow(i)
            else:
                self.drop_base(i)

    def finish_record(self):
        """A name stepped aside and not moved by the record stays a local
        rename (CF "Committing": "until the record's later operation")."""
        self.dirty |= self.stepped
        self.stepped.clear()

    # -- versions (CF "File versions"; ARCH "Versions")

    def record_version(self, snap, ctx):
        """A file upsert whose blocks differ from its newest version's."""
        if snap["kind"] != "file":
            return
        rows = self.versions.setdefault(snap["id"], [])
        if rows and content_key(rows[-1]["blocks"]) == content_key(snap["blocks"]):
            return
        when = snap["mtime"] if ctx[2] is None else ctx[2]
        rows.append({"seq": ctx[0], "device": ctx[1], "time": when,
                     "size": snap["size"], "mtime": snap["mtime"],
                     "blocks": snap["blocks"]})

    # -- trash (CF "The trash"; ARCH "Trash")

    def finish_trash(self, entries, batch):
        """End of a record: entries whose folder the record also deleted join
        that folder's entry; a folder's entry takes earlier entries of the
        same batch that were inside it."""
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
        lists = [s.get("blocks", []) for s in self.items.values()]
        lists += [s.get("blocks", []) for s in self.base.values()]
        lists += [row["blocks"] for rows in self.versions.values() for row in rows]
        lists += [s.get("blocks", []) for e in self.trash for s in e["items"]]
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
            rows.sort(key=lambda r: r["seq"])
            rows[:-1] = [r for r in rows[:-1] if now - r["time"] <= keep_versions]
        keep_trash = self.settings["trash"] * 1e9
        self.trash = [e for e in self.trash if now - e["time"] <= keep_trash]


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
    settings = {"versions": DEFAULT_RETENTION, "trash": DEFAULT_RETENTION}
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
    if not first <= v["seq"] <= last:
        raise Refused("version outside the object's range")
    if not valid_id(v["id"]):
        raise Refused("malformed id")
    present = [has(v, f) for f in ("size", "mtime", "blocks")]
    if any(present) and not all(present):
        raise Refused("some but not all of size, mtime and blocks")
    row = {"id": v["id"], "seq": v["seq"], "device": v["device"], "time": v["time"]}
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
        for op in rec["ops"]:
            try:
                if op["op"] == "upsert":
                    self.device.upsert(validate_item(op["item"]), ctx)
                else:
                    self.device.delete(op["id"], ctx, entries)
            except Refused as err:
                self.warn("journal record %d: operation refused: %s" % (seq, err))
        self.device.finish_record()
        self.device.finish_trash(entries, rec["batch"])
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
        checkpoint's file, or are dropped (CF "history/<first>-<last>")."""
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
            if all(r["seq"] != row["seq"] for r in rows):
                rows.append({k: row[k] for k in ("seq", "device", "time", "size",
                                                 "mtime", "blocks")})
                rows.sort(key=lambda r: r["seq"])
        self.device.trash.extend(e for e in history["trash"] if e["seq"] > after)

    def catch_up(self, checkpoint, record_trash):
        """Upserts of every reachable checkpoint item that differs from the
        committed one (parents first), then deletes of what it no longer has
        (deepest first)."""
        seq = checkpoint["seq"]
        ctx = (seq, FROM_CHECKPOINT, None, None)
        kids = {}
        for item in checkpoint["items"]:
            kids.setdefault(item["parent"], []).append(item)
        has, queue, seen = set(), ["root"], set()
        while queue:
            for item in kids.get(queue.pop(0), []):
                if item["id"] in seen:
                    continue
                seen.add(item["id"])
                try:
                    snap = validate_item(item)
                except Refused as err:
                    self.warn("checkpoint %d: item refused: %s" % (seq, err))
                    continue
                has.add(snap["id"])
                queue.append(snap["id"])
                if self.device.base.get(snap["id"]) != snap:
                    try:
                        self.device.upsert(snap, ctx)
                    except Refused as err:
                        self.warn("checkpoint %d: item refused: %s" % (seq, err))
        self.delete_missing(has, ctx, record_trash)

    def delete_missing(self, has, ctx, record_trash):
        device = self.device
        gone = [i for i in device.base if i not in has]
        gone.sort(key=lambda i: -len(device.chain(device.base, i)))
        entries = []
        for item_id in gone:
            if item_id in device.base:
                # Black box (undocumented): without a history object, a
                # catch-up delete is a trash entry of the checkpoint's seq by
                # the device "checkpoint" at the time of the join.
                mine = (ctx[0], "checkpoint", time.time_ns(), None)
                device.delete(item_id, mine, entries)
        if record_trash:
            device.finish_trash(entries, None)

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

def item_json(device, item_id, snap, content, errors):
    out = {"path": [encode_bytestring(n) for n in device.path(item_id)],
           "kind": snap["kind"], "mode": snap["mode"], "mtime": snap["mtime"],
           "size": snap["size"]}
    if snap["kind"] == "file":
        try:
            out["sha256"] = content.sha256(snap["blocks"])
        except Damaged as err:
            out["sha256"] = None
            where = b"/".join(device.path(item_id)).decode("utf-8", "replace")
            errors.append("%s: %s (EIO)" % (where, err))
    if snap["kind"] == "symlink":
        out["target"] = encode_bytestring(snap["target"])
    if snap.get("xattrs"):
        # Pairs, not an object: a JSON library may merge names a reader keeps apart.
        out["xattrs"] = [[k, base64.b64encode(v).decode("ascii")]
                         for k, v in sorted(snap["xattrs"].items(),
                                            key=lambda kv: kv[0].encode("utf-8"))]
    if snap["kind"] in DEVICE_KINDS:
        out["rdev"] = snap["rdev"]
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
    order = sorted(device.items, key=lambda i: b"/".join(device.path(i)))
    items, versions = [], []
    for item_id in order:
        snap = device.items[item_id]
        items.append(item_json(device, item_id, snap, content, errors))
        if snap["kind"] == "file":
            rows = sorted(device.versions.get(item_id, []), key=lambda r: -r["seq"])
            versions.append({"path": items[-1]["path"], "versions": [
                {"seq": r["seq"], "device": r["device"], "time": r["time"],
                 "size": r["size"]} for r in rows]})
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
