"""ubiqfs in GNOME Files (nautilus-python 4): emblems on the items of a ubiqfs mount
and their context-menu actions (docs/DESKTOP.md)."""

import os
import subprocess
import sys
import threading
from urllib.parse import unquote, urlparse

import gi

gi.require_version("Nautilus", "4.0")
from gi.repository import GLib, GObject, Nautilus  # noqa: E402

# The package: SHARE/ubiqfs/desktop beside SHARE/nautilus-python/extensions where it is
# installed, or the source tree's Sources/Desktop for a symlink to this file.
_HERE = os.path.dirname(os.path.realpath(__file__))
for _place in (os.path.join(_HERE, "..", "..", "ubiqfs", "desktop"), os.path.join(_HERE, "..")):
    if os.path.isdir(os.path.join(_place, "ubiqfs_desktop")):
        sys.path.insert(0, os.path.abspath(_place))
        break

from ubiqfs_desktop import actions, emblems, menus  # noqa: E402
from ubiqfs_desktop.states import StateCache  # noqa: E402


def _path(file_info):
    uri = file_info.get_uri()
    if not uri.startswith("file://"):
        return None
    return unquote(urlparse(uri).path)


def _invalidate(path):
    info = Nautilus.FileInfo.lookup_for_uri(GLib.filename_to_uri(path, None))
    if info is not None:
        info.invalidate_extension_info()


def _post(function):
    GLib.idle_add(lambda: (function(), False)[1])


class UbiqfsExtension(GObject.GObject, Nautilus.InfoProvider, Nautilus.MenuProvider):
    def __init__(self):
        super().__init__()
        self.states = StateCache(post=_post, invalidate=_invalidate)
        self.pending = {}

    # Emblems

    def update_file_info_full(self, provider, handle, closure, file_info):
        path = _path(file_info)
        if path is None or self.states.locate(path) is None:
            return Nautilus.OperationResult.COMPLETE
        done = []

        def apply(summary):
            if summary is not None:
                for emblem in emblems.emblems(summary, is_folder=file_info.is_directory()):
                    file_info.add_emblem(emblem)
            if done:  # answered later: tell Nautilus
                self.pending.pop(handle, None)
                Nautilus.info_provider_update_complete_invoke(closure, provider, handle, Nautilus.OperationResult.COMPLETE)

        token = self.states.request(path, apply)
        if token is None:
            return Nautilus.OperationResult.COMPLETE
        done.append(True)
        self.pending[handle] = token
        return Nautilus.OperationResult.IN_PROGRESS

    def cancel_update(self, provider, handle):
        token = self.pending.pop(handle, None)
        if token is not None:
            self.states.cancel(token)

    # Menus

    def get_file_items(self, files):
        paths = [_path(f) for f in files]
        if None in paths:
            return []
        return self._menu("Ubiqfs::Items", menus.file_entries(paths, self.states.mounts))

    def get_background_items(self, folder):
        path = _path(folder)
        if path is None:
            return []
        return self._menu("Ubiqfs::Folder", menus.folder_entries(path, self.states.mounts))

    def _menu(self, name, entries):
        if not entries:
            return []
        top = Nautilus.MenuItem(name=name, label="ubiqfs")
        submenu = Nautilus.Menu()
        top.set_submenu(submenu)
        for entry in entries:
            item = Nautilus.MenuItem(name=f"{name}::{entry.label}", label=entry.label)
            item.connect("activate", lambda _item, entry=entry: self._run(entry))
            submenu.append_item(item)
        return [top]

    def _run(self, entry):
        """Off the main loop (a request may wait for the store); a failure is told in a
        notification. The changed items' emblems are asked again."""
        def body():
            try:
                entry.run()
            except actions.ActionError as error:
                subprocess.run(["notify-send", "--app-name=ubiqfs", "--icon=emblem-ubiqfs-error", "ubiqfs", str(error)], check=False)
            for path in entry.changes:
                self.states.forget(path)
                _post(lambda path=path: _invalidate(path))
        threading.Thread(target=body, daemon=True).start()
