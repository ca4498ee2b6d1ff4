"""The extension's state mapping, mount table and dialog rows, without a display or a mount."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "Desktop"))

from ubiqfs_desktop import dialogs, emblems  # noqa: E402
from ubiqfs_desktop.mounts import parse_mountinfo  # noqa: E402


def summary(state, pinned=False, conflicts=False, copy=False, progress=0):
    return {"state": state, "pinned": pinned, "conflicts": conflicts, "conflictCopy": copy, "progress": progress}


class EmblemTests(unittest.TestCase):
    def test_each_file_state_has_its_emblem(self):
        expected = {
            "placeholder": emblems.CLOUD, "partial": emblems.PARTIAL, "local": emblems.LOCAL,
            "downloading": emblems.DOWNLOADING, "uploading": emblems.UPLOADING, "pending": emblems.PENDING,
            "error": emblems.ERROR, "ignored": emblems.IGNORED,
        }
        for state, emblem in expected.items():
            self.assertEqual(emblems.emblems(summary(state)), [emblem], state)

    def test_pinned_shows_only_once_the_content_is_here(self):
        self.assertEqual(emblems.emblems(summary("local", pinned=True)), [emblems.PINNED])
        # A pinned placeholder is waiting for its download: that is what it shows.
        self.assertEqual(emblems.emblems(summary("placeholder", pinned=True)), [emblems.CLOUD])
        self.assertEqual(emblems.emblems(summary("downloading", pinned=True)), [emblems.DOWNLOADING])

    def test_conflicts_add_their_emblem_to_both_sides(self):
        self.assertEqual(emblems.emblems(summary("placeholder", conflicts=True)), [emblems.CLOUD, emblems.CONFLICT])
        self.assertEqual(emblems.emblems(summary("local", copy=True)), [emblems.LOCAL, emblems.CONFLICT])

    def test_folders_show_only_what_needs_a_look(self):
        self.assertEqual(emblems.emblems(summary("local"), is_folder=True), [])
        self.assertEqual(emblems.emblems(summary("local", pinned=True), is_folder=True), [emblems.PINNED])
        self.assertEqual(emblems.emblems(summary("pending"), is_folder=True), [emblems.PENDING])
        self.assertEqual(emblems.emblems(summary("error"), is_folder=True), [emblems.ERROR])
        self.assertEqual(emblems.emblems(summary("ignored"), is_folder=True), [emblems.IGNORED])
        self.assertEqual(emblems.emblems(summary("ignored", pinned=True), is_folder=True), [emblems.IGNORED])

    def test_ignored_is_stable_and_wins_over_pinned(self):
        self.assertNotIn("ignored", emblems.TRANSIENT)
        self.assertEqual(emblems.emblems(summary("ignored", pinned=True)), [emblems.IGNORED])
        self.assertEqual(emblems.emblems(summary("ignored", conflicts=True)), [emblems.IGNORED, emblems.CONFLICT])

    def test_every_emblem_has_an_icon(self):
        icons = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "Desktop", "icons")
        for emblem in emblems.ALL:
            self.assertTrue(os.path.exists(os.path.join(icons, emblem + ".svg")), emblem)

    def test_descriptions(self):
        self.assertEqual(emblems.describe(summary("partial", progress=40)), "Partly on this device (40%)")
        self.assertEqual(emblems.describe(summary("local", pinned=True, conflicts=True)),
                         "On this device, always kept on this device; has conflict copies")
        self.assertEqual(emblems.describe(summary("ignored")), "Only on this device; never synced")
        self.assertEqual(emblems.describe(summary("ignored", pinned=True)), "Only on this device; never synced")


class MountTableTests(unittest.TestCase):
    def test_only_ubiqfs_mounts_with_escaped_names(self):
        text = "\n".join([
            "36 25 0:32 / /home/me/My\\040Cloud rw,nosuid,nodev shared:1 - fuse.ubiqfs ubiqfs:default rw,user_id=0",
            "37 25 0:33 / /mnt/plain rw - fuse ubiqfs:work rw",
            "38 25 0:34 / /mnt/other rw - fuse.sshfs host:/ rw",
            "39 25 0:35 / /home/me/My\\040Cloud/inner rw - fuse.ubiqfs ubiqfs:inner rw",
            "garbage line",
        ])
        self.assertEqual(parse_mountinfo(text), ["/home/me/My Cloud/inner", "/home/me/My Cloud", "/mnt/plain"])

    def test_locate_inside_mounts_only(self):
        import tempfile
        from ubiqfs_desktop.mounts import MountTable
        with tempfile.NamedTemporaryFile("w", suffix=".mountinfo") as f:
            f.write("36 25 0:32 / /home/me/Cloud rw - fuse.ubiqfs ubiqfs:default rw\n")
            f.flush()
            table = MountTable(path=f.name)
            self.assertEqual(table.locate("/home/me/Cloud"), ("/home/me/Cloud", "/"))
            self.assertEqual(table.locate("/home/me/Cloud/"), ("/home/me/Cloud", "/"))
            self.assertEqual(table.locate("/home/me/Cloud/a/b"), ("/home/me/Cloud", "/a/b"))
            self.assertEqual(table.locate("/home/me/Cloud/./a//b"), ("/home/me/Cloud", "/a/b"))
            self.assertIsNone(table.locate("/home/me/Cloudy/x"))
            self.assertIsNone(table.locate("/home/me"))


class MenuEntryTests(unittest.TestCase):
    """Which item entries show, with the items' attributes faked (no mount)."""

    def labels(self, ignored, pinned=()):
        import tempfile
        from unittest import mock
        from ubiqfs_desktop import actions, menus
        from ubiqfs_desktop.mounts import MountTable
        with tempfile.TemporaryDirectory() as folder, tempfile.NamedTemporaryFile("w") as info:
            info.write(f"36 25 0:32 / {folder} rw - fuse.ubiqfs ubiqfs:default rw\n")
            info.flush()
            names = sorted(set(ignored) | set(pinned) | {"plain.txt"})
            for name in names:
                open(os.path.join(folder, name), "w").close()
            paths = [os.path.join(folder, n) for n in (sorted(ignored) + sorted(pinned) or ["plain.txt"])]
            with mock.patch.object(actions, "is_ignored", lambda p: os.path.basename(p) in ignored), \
                    mock.patch.object(actions, "is_pinned", lambda p: os.path.basename(p) in pinned), \
                    mock.patch.object(actions, "conflicts", lambda p: []):
                return [e.label for e in menus.file_entries(paths, MountTable(path=info.name))]

    def test_a_synced_file_can_be_kept_only_here(self):
        self.assertEqual(self.labels(ignored=()), ["Always keep on this device", "Free up space", "Download now",
                                                   "Keep only on this device", "Versions…"])

    def test_an_ignored_file_can_only_sync_again(self):
        self.assertEqual(self.labels(ignored={"draft.nosync"}), ["Sync again"])
        self.assertEqual(self.labels(ignored={"a.nosync", "b.nosync"}), ["Sync again"])

    def test_free_up_space_is_not_offered_when_any_item_is_ignored(self):
        labels = self.labels(ignored={"draft.nosync"}, pinned={"kept.txt"})
        self.assertNotIn("Free up space", labels)
        self.assertNotIn("Sync again", labels)
        self.assertIn("Keep only on this device", labels)


class DialogRowTests(unittest.TestCase):
    def test_versions_newest_first_with_the_current_one_not_restorable(self):
        rows = dialogs.version_rows([
            {"version": 9, "device": "laptop", "time": 1767225600, "size": 2048, "current": True},
            {"version": 4, "device": "desk", "time": 1767139200, "size": 10, "current": False},
        ])
        self.assertIn("laptop", rows[0][0])
        self.assertIn("(current)", rows[0][0])
        self.assertIsNone(rows[0][1])
        self.assertEqual(rows[1][1], (4, 0))
        self.assertIn("10 bytes", rows[1][0])
        self.assertIn("2.0 KiB", rows[0][0])

    def test_a_merges_inputs_are_restorable_by_number_and_input(self):
        rows = dialogs.version_rows([
            {"version": 9, "device": "laptop", "time": 1767225600, "size": 20, "current": False, "mergedWith": 8, "mergeKind": "text"},
            {"version": 9, "device": "laptop", "time": 1767225500, "size": 12, "current": False, "input": 1},
            {"version": 8, "device": "desk", "time": 1767225400, "size": 10, "current": True},
        ])
        self.assertEqual([row[1] for row in rows], [(9, 0), (9, 1), None])
        self.assertIn("(merged)", rows[0][0])
        self.assertIn("an edit merged into", rows[1][0])
        self.assertNotIn("merged", rows[2][0])

    def test_trash_rows_name_what_to_restore(self):
        rows = dialogs.trash_rows([
            {"path": "/old", "kind": "directory", "deleted": 100, "device": "a", "seq": 3, "size": 5, "items": 2},
            {"path": "/new.txt", "kind": "file", "deleted": 200, "device": "b", "seq": 7, "size": 1, "items": 1},
        ])
        self.assertEqual([value for _, value in rows], [("/new.txt", 7), ("/old", 3)])
        self.assertIn("folder", rows[1][0])


if __name__ == "__main__":
    unittest.main()


class DolphinMenuTests(unittest.TestCase):
    def test_each_action_runs_a_real_command(self):
        import configparser
        import subprocess
        import fixture
        menu = configparser.ConfigParser(interpolation=None)
        menu.optionxform = str
        menu.read(os.path.join(fixture.ROOT, "Sources", "Desktop", "dolphin", "ubiqfs.desktop"))
        actions = [a for a in menu["Desktop Entry"]["Actions"].split(";") if a]
        self.assertEqual(len(actions), 5)
        for action in actions:
            command = menu[f"Desktop Action {action}"]["Exec"].split()
            if command[0] == "ubiqfs":
                help = subprocess.run([fixture.BINARY, command[1], "--help"], capture_output=True, text=True)
                self.assertEqual(help.returncode, 0, command)
            else:
                self.assertEqual(command[0], "/usr/share/ubiqfs/desktop/ubiqfs-dialog")
                self.assertIn(command[1], ("versions", "conflicts", "trash"))


class UnreachableDaemonTests(unittest.TestCase):
    def test_a_mount_whose_daemon_does_not_answer_gets_no_emblem_and_is_not_asked_per_item(self):
        import tempfile
        from ubiqfs_desktop.mounts import MountTable
        from ubiqfs_desktop.states import StateCache
        with tempfile.TemporaryDirectory() as folder, tempfile.NamedTemporaryFile("w") as info:
            info.write(f"36 25 0:32 / {folder} rw - fuse.ubiqfs ubiqfs:default rw\n")
            info.flush()
            cache = StateCache(mounts=MountTable(path=info.name))
            self.addCleanup(cache.close)
            start = time.monotonic()
            answers = [cache.lookup(os.path.join(folder, "docs", name)) for name in ("a", "b", "c")]
            self.assertEqual(answers, [None, None, None])
            self.assertEqual(cache.requests, 1)
            self.assertLess(time.monotonic() - start, 5)
            self.assertIsNone(cache.watch(folder))
