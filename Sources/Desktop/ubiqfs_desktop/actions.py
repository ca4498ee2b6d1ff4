"""What the context menu does: each action is the xattr or control request the
command line uses (docs/XATTRS.md, docs/ARCHITECTURE.md), so a menu and
`ubiqfs pin` behave the same. Errors come back as `ActionError` with a sentence."""

import errno
import os

from . import control
from .mounts import MountTable


class ActionError(Exception):
    pass


_mounts = MountTable()


def locate(path, mounts=None):
    """(mountpoint, path inside the mount) or ActionError."""
    found = (mounts or _mounts).locate(os.path.abspath(path))
    if found is None:
        raise ActionError(f"{path} is not inside a ubiqfs mount")
    return found


def _setxattr(path, name, value, what):
    try:
        os.setxattr(path, name, value)
    except OSError as error:
        reasons = {
            errno.EPERM: "not permitted",
            errno.EBUSY: "it has changes not uploaded yet, or is open for writing",
            errno.EACCES: "you cannot write to it",
        }
        if name.endswith("evict"):
            reasons[errno.EPERM] = ("it is only on this device (its only copy)" if is_ignored(path)
                                    else "it is kept on this device (stop keeping it first)")
        elif name.endswith("ignored"):
            reasons[errno.EPERM] = "the top of a mount always syncs"
            reasons[errno.EBUSY] = ("its content is not all on this device yet (download it first), "
                                    "or it has other names (hard links)")
        raise ActionError(f"cannot {what} {os.path.basename(path)}: {reasons.get(error.errno, error.strerror)}") from error


def keep(path):
    """Always keep on this device: pin (a folder passes it on); downloads what is missing."""
    _setxattr(path, "user.ubiqfs.pinned", b"1", "keep")


def stop_keeping(path):
    """Stop keeping, as `ubiqfs unpin`: an explicit "not pinned", so an item of a kept
    folder stops being kept too; its content stays until space is needed."""
    _setxattr(path, "user.ubiqfs.pinned", b"0", "stop keeping")


def free_up_space(path):
    """Drops the local content of a file, or of every file under a folder."""
    _setxattr(path, "user.ubiqfs.evict", b"1", "free up space of")


def download(path):
    """Fetches every block not here yet, in the background."""
    _setxattr(path, "user.ubiqfs.download", b"1", "download")


def keep_only_here(path):
    """Keeps the item on this device only, as `setfattr -n user.ubiqfs.ignored -v 1`: it
    leaves the cloud (the other devices see it deleted) and is never synced."""
    _setxattr(path, "user.ubiqfs.ignored", b"1", "keep only on this device")


def sync_again(path):
    """Clears `user.ubiqfs.ignored`: the item is uploaded as new. An item a rule ignores
    (a `.ubiqfsignore` pattern, a `.nosync` name, `--ignore-file`, an ignored folder)
    stays ignored, which is an error here."""
    _setxattr(path, "user.ubiqfs.ignored", b"0", "sync again")
    if is_ignored(path):
        raise ActionError(f"cannot sync again {os.path.basename(path)}: an ignore rule matches it "
                          "(.ubiqfsignore, a .nosync name, --ignore-file, or an ignored folder)")


def is_ignored(path):
    try:
        return os.getxattr(path, "user.ubiqfs.ignored") == b"1"
    except OSError:
        return False


def is_pinned(path):
    try:
        return os.getxattr(path, "user.ubiqfs.pinned") == b"1"
    except OSError:
        return False


def conflicts(path):
    """The full paths of the item's conflict copies, sorted."""
    try:
        value = os.getxattr(path, "user.ubiqfs.conflicts")
    except OSError as error:
        if error.errno == errno.ENODATA:
            return []
        raise ActionError(f"cannot read the conflicts of {os.path.basename(path)}: {error.strerror}") from error
    folder = os.path.dirname(path)
    return [os.path.join(folder, os.fsdecode(name)) for name in value.split(b"\n") if name]


def _call(where, command, timeout=30.0, about_it=False, **fields):
    """Sends `command` to the daemon of the mount `where` is in (with `about_it`, naming
    `where` as the request's path)."""
    mountpoint, inside = locate(where)
    if about_it:
        fields["path"] = inside
    try:
        return control.request(mountpoint, command, timeout=timeout, **fields), mountpoint, inside
    except control.ControlError as error:
        raise ActionError(str(error)) from error


def versions(path):
    """Newest first: dicts with version, device, time, size, current (and input,
    mergedWith for merges and the edits they took in)."""
    reply, _, _ = _call(path, "versions", about_it=True)
    return reply.get("versions") or []


def restore(path, version, input=0):
    """Makes version `version` (`version.input` for an edit a merge took in) the file's
    content again (a new version, history kept)."""
    fields = {"version": int(version)}
    if input:
        fields["input"] = int(input)
    _call(path, "restore", about_it=True, **fields)


def sync_now(path):
    _call(path, "sync")


def pause(path):
    _call(path, "pause")


def resume(path):
    _call(path, "resume")


def status(path, timeout=30.0):
    reply, _, _ = _call(path, "status", timeout=timeout)
    return reply.get("status") or {}


def trash(path):
    """The shared trash: dicts with path, kind, deleted, device, seq, size, items."""
    reply, _, _ = _call(path, "trash")
    return reply.get("trash") or []


def restore_from_trash(path, inside, seq):
    """Brings back `inside` (a path in the mount) as deleted in record `seq`; returns
    where it is now, as a full path."""
    reply, mountpoint, _ = _call(path, "trash-restore", path=inside, version=int(seq))
    return mountpoint.rstrip("/") + (reply.get("path") or inside)
