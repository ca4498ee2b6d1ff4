"""The small windows the context menu opens: a file's versions (with Restore), its
conflict copies (with Open and Show in Files), and the mount's shared trash (with
Restore). GTK 4, in a process of their own so a slow store never freezes the file
manager. The rows come from plain functions, tested without a display."""

import datetime
import os
import subprocess

from . import actions


def _when(seconds):
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")


def _size(count):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024


def version_rows(versions):
    """(text, (version number, input) or None for the current one) per version, newest
    first; a merge's inputs (input > 0, the edits it took in) follow it."""
    rows = []
    for v in versions:
        text = f"{_when(v['time'])}  ·  {v['device']}  ·  {_size(v['size'])}"
        if v.get("mergedWith"):
            text += "  (merged)"
        if v.get("input"):
            text += "  (an edit merged into the version above)"
        rows.append((text + ("  (current)" if v.get("current") else ""), None if v.get("current") else (v["version"], v.get("input") or 0)))
    return rows


def conflict_rows(path):
    """(text, full path) per conflict copy of `path`."""
    rows = []
    for copy in actions.conflicts(path):
        try:
            info = os.stat(copy)
            rows.append((f"{os.path.basename(copy)}  ·  {_when(info.st_mtime)}  ·  {_size(info.st_size)}", copy))
        except OSError:
            continue
    return rows


def trash_rows(entries):
    """(text, (path inside the mount, seq)) per trash entry, newest first."""
    rows = []
    for e in sorted(entries, key=lambda e: e["deleted"], reverse=True):
        what = "folder" if e["kind"] == "directory" else e["kind"]
        text = f"{e['path']}  ·  {what}, {_size(e['size'])}  ·  deleted {_when(e['deleted'])} on {e['device']}"
        rows.append((text, (e["path"], e["seq"])))
    return rows


def show_in_files(path):
    """Selects `path` in the file manager (org.freedesktop.FileManager1); the URI is
    escaped by GLib and sent as a typed value, so no name can break the call."""
    from gi.repository import Gio, GLib
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    bus.call("org.freedesktop.FileManager1", "/org/freedesktop/FileManager1", "org.freedesktop.FileManager1",
             "ShowItems", GLib.Variant("(ass)", ([GLib.filename_to_uri(os.path.abspath(path), None)], "")),
             None, Gio.DBusCallFlags.NONE, -1, None, None, None)


def run(kind, path):
    import gi
    gi.require_version("Gtk", "4.0")
    from gi.repository import GLib, Gtk

    app = Gtk.Application(application_id=None)

    def build(application):
        window = Gtk.ApplicationWindow(application=application, default_width=640, default_height=360)
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8, margin_top=12, margin_bottom=12,
                      margin_start=12, margin_end=12)
        window.set_child(box)
        message = Gtk.Label(xalign=0, wrap=True)
        listing = Gtk.ListBox(selection_mode=Gtk.SelectionMode.SINGLE)
        scroller = Gtk.ScrolledWindow(vexpand=True)
        scroller.set_child(listing)
        buttons = Gtk.Box(spacing=8, halign=Gtk.Align.END)
        box.append(message)
        box.append(scroller)
        box.append(buttons)
        values = []

        def fill(rows, empty):
            """Lists `rows`, the first that can be acted on selected; `empty` if none."""
            values.clear()
            while (child := listing.get_first_child()) is not None:
                listing.remove(child)
            for text, value in rows:
                listing.append(Gtk.Label(label=text, xalign=0, margin_top=4, margin_bottom=4))
                values.append(value)
            first = next((i for i, value in enumerate(values) if value is not None), None)
            listing.select_row(listing.get_row_at_index(first) if first is not None else None)
            if not rows:
                message.set_text(empty)

        def selected():
            row = listing.get_selected_row()
            return values[row.get_index()] if row is not None else None

        def button(label, act):
            b = Gtk.Button(label=label)
            b.connect("clicked", lambda *_: act())
            buttons.append(b)

        def attempt(function):
            try:
                function()
                return True
            except actions.ActionError as error:
                message.set_text(str(error))
                return False

        name = os.path.basename(path.rstrip("/")) or path
        if kind == "versions":
            window.set_title(f"Versions of {name}")
            message.set_text(f"Earlier versions of {name}. Restoring one makes it the current version; nothing is lost.")
            attempt(lambda: fill(version_rows(actions.versions(path)), "No versions are known for this file."))

            def restore():
                version = selected()
                if version is None:
                    message.set_text("Choose an earlier version: the selected one is the current one.")
                elif attempt(lambda: actions.restore(path, *version)):
                    attempt(lambda: fill(version_rows(actions.versions(path)), ""))
                    message.set_text(f"Restored; {name} has that content again.")
            button("Restore", restore)
        elif kind == "conflicts":
            window.set_title(f"Conflicts of {name}")
            message.set_text(f"{name} was changed on two devices at once. Both versions are kept: "
                             "the copies below are the other ones. Delete a copy to resolve it.")
            attempt(lambda: fill(conflict_rows(path), "No conflict copies are left."))
            button("Open", lambda: selected() and subprocess.Popen(["gio", "open", selected()]))
            button("Show in Files", lambda: selected() and show_in_files(selected()))
        elif kind == "trash":
            window.set_title("ubiqfs trash")
            message.set_text("Items deleted on any device, kept for the container's retention.")
            attempt(lambda: fill(trash_rows(actions.trash(path)), "The trash is empty."))

            def restore():
                chosen = selected()
                where = []
                if chosen is not None and attempt(lambda: where.append(actions.restore_from_trash(path, *chosen))):
                    attempt(lambda: fill(trash_rows(actions.trash(path)), ""))
                    message.set_text(f"Restored as {where[0]}")
            button("Restore", restore)
        button("Close", window.close)
        window.present()

    app.connect("activate", build)
    GLib.set_application_name("ubiqfs")
    return app.run([])
