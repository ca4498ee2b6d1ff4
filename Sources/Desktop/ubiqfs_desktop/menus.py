"""The context menu's entries, apart from any file manager: GNOME Files' extension
shows them, and the tests run them on a real mount."""

import os
import subprocess
from dataclasses import dataclass
from typing import Callable

from . import actions
from .mounts import MountTable

DIALOG = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "ubiqfs-dialog")


@dataclass
class Entry:
    label: str
    run: Callable[[], None]
    # The paths the entry changes (their emblems are asked again), if any.
    changes: tuple = ()


def open_dialog(kind, path):
    """A dialog in a process of its own (a slow store never freezes the file manager)."""
    return subprocess.Popen(["/usr/bin/python3", os.path.abspath(DIALOG), kind, path], start_new_session=True)


def _each(paths, action):
    def run():
        errors = []
        for path in paths:
            try:
                action(path)
            except actions.ActionError as error:
                errors.append(str(error))
        if errors:
            raise actions.ActionError("\n".join(errors))
    return run


def file_entries(paths, mounts=None):
    """For items selected in a mount; [] if any is outside one."""
    mounts = mounts or MountTable()
    if not paths or any(mounts.locate(p) is None for p in paths):
        return []
    changed = tuple(paths)
    ignored = [actions.is_ignored(p) for p in paths]
    if all(ignored):
        # Only on this device: its content is its only copy, and it has no versions.
        entries = [Entry("Sync again", _each(paths, actions.sync_again), changed)]
    else:
        if all(actions.is_pinned(p) for p in paths):
            entries = [Entry("Stop keeping on this device", _each(paths, actions.stop_keeping), changed)]
        else:
            entries = [Entry("Always keep on this device", _each(paths, actions.keep), changed)]
        if not any(ignored):
            entries.append(Entry("Free up space", _each(paths, actions.free_up_space), changed))
        entries += [
            Entry("Download now", _each(paths, actions.download), changed),
            Entry("Keep only on this device", _each(paths, actions.keep_only_here), changed),
        ]
    if len(paths) == 1:
        path = paths[0]
        if not os.path.isdir(path) and not ignored[0]:
            entries.append(Entry("Versions…", lambda: open_dialog("versions", path)))
        if actions.conflicts(path):
            entries.append(Entry("Show conflicts…", lambda: open_dialog("conflicts", path)))
    return entries


def folder_entries(path, mounts=None, status_timeout=2.0):
    """For the background of a folder in a mount: sync, pause or resume, the trash."""
    mounts = mounts or MountTable()
    if mounts.locate(path) is None:
        return []
    try:
        paused = actions.status(path, timeout=status_timeout).get("state") == "paused"
    except actions.ActionError:
        paused = False
    return [
        Entry("Sync now", lambda: actions.sync_now(path)),
        Entry("Resume sync", lambda: actions.resume(path)) if paused else Entry("Pause sync", lambda: actions.pause(path)),
        Entry("Open trash…", lambda: open_dialog("trash", path)),
    ]
