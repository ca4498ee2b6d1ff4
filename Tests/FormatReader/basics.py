"""The format's constants, errors, and its JSON and ByteString encodings."""

import base64
import binascii
import decimal
import json
import re


# ---------------------------------------------------------------- constants

MIB = 1 << 20
MAX_SIZE = 1 << 44                      # CF "Reading and validation": 16 TiB
MTIME_LOW, MTIME_HIGH = -(1 << 62), (1 << 62) - 1
MAX_OPS = 100_000                       # CF "Encoding": JournalRecord.maxOperations
DEFAULT_RETENTION = 2_592_000           # CF "journal/<seq>", Settings: 30 days
MAX_RETENTION = 3_155_760_000           # 36525 days
INLINE_MAX = 1024                       # CF "Small files": inline content
LINK = "link"                           # CF "Format 3", Links: another name of an item
KNOWN_KINDS = {"file", "directory", "symlink", "fifo", "socket",
               "characterDevice", "blockDevice", LINK}
DEVICE_KINDS = {"characterDevice", "blockDevice"}
READ_FORMATS = (1, 2, 3, 4, 5)          # formats this reader understands
THUMBNAIL_SIZES = (128, 256, 512, 1024)  # CF "Format 3", Thumbnails
THUMBNAIL_MAX_BYTES = MIB               # a thumbnail's blocks, in all
THUMBNAILS_MAX = 4
MERGES_FROM = 4                         # CF "Format 4", Merges: records of format >= 4
MAX_MERGE_INPUTS = 16                   # 1 to 16 inputs; an input k is 1 to 16
MERGE_DEFAULTS = {"text": True, "sqlite": False, "json": False}  # CF "Settings: what merges"
SPLICES_FROM = 5                        # CF "Format 5", Splices: records of format >= 5
SPLICE_MAX_BLOCKS = 1 << 20             # a splice's result: at most 1,048,576 blocks
SCHEME = "ubiqfs-aes256gcm-1"
FROM_CHECKPOINT = "(from a checkpoint)"  # CF "File versions"

HEX32 = re.compile(r"[0-9a-f]{32}\Z")
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
MERGE_KIND = re.compile(r"[a-z]{1,16}\Z")  # CF "Format 4": 1 to 16 lowercase ASCII letters
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
