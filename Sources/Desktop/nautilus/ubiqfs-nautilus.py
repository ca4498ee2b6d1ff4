"""ubiqfs in GNOME Files (nautilus-python 4): emblems on the items of a ubiqfs mount
and their context-menu actions (docs/DESKTOP.md).

Everything runs on GNOME Files' main loop: its Python runs other threads only while
the main thread runs Python, so a worker thread could starve. The daemon answers a
folder's states from its database in milliseconds; watches are sockets the loop reads.
"""

import os
import subprocess
import sys
from urllib.parse import unquote

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
    return unquote(uri[7:]) if uri.startswith("file:///") else None


def _invalidate(path):
    info = Nautilus.FileInfo.lookup_for_uri(GLib.filename_to_uri(path, None))
    if info is not None:
        info.invalidate_extension_info()


class UbiqfsExtension(GObject.GObject, Nautilus.InfoProvider, Nautilus.MenuProvider):
    def __init__(self):
        super().__init__()
        self.states = StateCache(on_watch=self._watch)
        GLib.timeout_add_seconds(2, self._poll)

    # Emblems

    def update_file_info(self, file_info):
        path = _path(file_info)
        summary = self.states.lookup(path) if path is not None else None
        if summary is not None:
            for emblem in emblems.emblems(summary, is_folder=file_info.is_directory()):
                file_info.add_emblem(emblem)

    def _watch(self, watch):
        GLib.io_add_watch(watch.fileno(), GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, self._read, watch)

    def _read(self, _fd, _condition, watch):
        for path in self.states.changed(watch):
            _invalidate(path)
        return watch.open

    def _poll(self):
        for path in self.states.poll_transient():
            _invalidate(path)
        return True

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
        """Each entry returns at once (an xattr, a short request, a dialog started); a
        failure is told in a notification. The changed items' emblems are asked again."""
        try:
            entry.run()
        except actions.ActionError as error:
            subprocess.Popen(["notify-send", "--app-name=ubiqfs", "--icon=emblem-ubiqfs-error", "ubiqfs", str(error)])
        for path in entry.changes:
            self.states.forget(path)
            _invalidate(path)
