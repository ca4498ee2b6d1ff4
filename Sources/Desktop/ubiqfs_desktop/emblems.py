"""From an item's state to the emblems a file manager shows on it.

The emblems are the icons `emblem-ubiqfs-*` this package installs (hicolor theme):

| Emblem | Shown when |
|---|---|
| `emblem-ubiqfs-ignored` | it stays on this device only and never syncs (ignored) |
| `emblem-ubiqfs-downloading` | a download of the whole item runs (a pin, Download now) |
| `emblem-ubiqfs-uploading` | its upload runs |
| `emblem-ubiqfs-error` | its last transfer failed |
| `emblem-ubiqfs-pending` | a local change waits to be uploaded |
| `emblem-ubiqfs-cloud` | a file with no content here (a placeholder) |
| `emblem-ubiqfs-partial` | a file with some of its blocks here |
| `emblem-ubiqfs-pinned` | kept on this device (and nothing above applies) |
| `emblem-ubiqfs-local` | a file whose content is here |
| `emblem-ubiqfs-conflict` | added when the item has conflict copies or is one |

A folder shows only what is worth a look: ignored, pinned, pending, error, conflict.
"""

CLOUD = "emblem-ubiqfs-cloud"
PARTIAL = "emblem-ubiqfs-partial"
LOCAL = "emblem-ubiqfs-local"
PINNED = "emblem-ubiqfs-pinned"
DOWNLOADING = "emblem-ubiqfs-downloading"
UPLOADING = "emblem-ubiqfs-uploading"
PENDING = "emblem-ubiqfs-pending"
CONFLICT = "emblem-ubiqfs-conflict"
ERROR = "emblem-ubiqfs-error"
IGNORED = "emblem-ubiqfs-ignored"

ALL = (CLOUD, PARTIAL, LOCAL, PINNED, DOWNLOADING, UPLOADING, PENDING, CONFLICT, ERROR, IGNORED)

_BY_STATE = {
    "ignored": IGNORED,
    "downloading": DOWNLOADING,
    "uploading": UPLOADING,
    "error": ERROR,
    "pending": PENDING,
    "placeholder": CLOUD,
    "partial": PARTIAL,
}

# States that change without an event of the watch API: a view polls them.
TRANSIENT = frozenset({"downloading", "uploading", "pending"})


def emblems(summary, is_folder=False):
    """The emblems of one item, most important first. `summary` is one entry of the
    daemon's `states` reply: state, pinned, conflicts, conflictCopy."""
    state = summary.get("state", "local")
    main = _BY_STATE.get(state)
    if main is None and summary.get("pinned"):
        main = PINNED
    if main is None and not is_folder:
        main = LOCAL
    if is_folder and main in (CLOUD, PARTIAL, LOCAL, DOWNLOADING, UPLOADING):
        main = PINNED if summary.get("pinned") else None
    result = [main] if main else []
    if summary.get("conflicts") or summary.get("conflictCopy"):
        result.append(CONFLICT)
    return result


def describe(summary):
    """One line for a tooltip or a status column: what the state means to a person."""
    state = summary.get("state", "local")
    words = {
        "ignored": "Only on this device; never synced",
        "downloading": f"Downloading ({summary.get('progress', 0)}%)",
        "uploading": f"Uploading ({summary.get('progress', 0)}%)",
        "error": "The last transfer failed",
        "pending": "Waiting to upload",
        "placeholder": "In the cloud only",
        "partial": f"Partly on this device ({summary.get('progress', 0)}%)",
        "local": "On this device",
    }.get(state, state)
    if summary.get("pinned") and state != "ignored":
        words += ", always kept on this device"
    if summary.get("conflicts"):
        words += "; has conflict copies"
    if summary.get("conflictCopy"):
        words += "; a conflict copy"
    return words
