"""Item states and menu actions through their code paths on real mounts (two devices)."""

import os
import select
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "Desktop"))

import fixture  # noqa: E402
from ubiqfs_desktop import actions, menus  # noqa: E402
from ubiqfs_desktop.states import StateCache  # noqa: E402


class StateTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.devices, cls.names = fixture.devices_with_states()

    @classmethod
    def tearDownClass(cls):
        cls.devices.close()

    def setUp(self):
        self.cache = StateCache()
        self.addCleanup(self.cache.close)

    def test_states_of_a_folder_come_in_one_request_and_download_nothing(self):
        b = self.devices.b
        states = {name: self.cache.lookup(b.file(name)) for name in sorted(os.listdir(b.path))}
        self.assertEqual(self.cache.requests, 1)
        self.assertEqual(states["cloud.txt"]["state"], "placeholder")
        self.assertEqual(states["local.txt"]["state"], "local")
        self.assertTrue(states["pinned.txt"]["pinned"])
        self.assertFalse(states["local.txt"]["pinned"])
        self.assertTrue(states["report.txt"]["conflicts"])
        copy = next(n for n in states if "conflict from" in n)
        self.assertTrue(states[copy]["conflictCopy"])
        self.assertFalse(states["report.txt"]["conflictCopy"])
        self.assertEqual(states["draft.nosync"]["state"], "ignored")
        # Asking changed nothing: the placeholder has no local blocks.
        self.assertEqual(b.state_of("cloud.txt"), "placeholder")
        self.assertEqual(os.stat(b.file("cloud.txt")).st_blocks, 0)
        # They agree with the xattrs.
        for name, item in states.items():
            self.assertEqual(item["state"], b.state_of(name), name)

    def test_outside_a_mount_and_the_root_have_no_state(self):
        self.assertIsNone(self.cache.lookup("/tmp"))
        self.assertIsNone(self.cache.lookup(self.devices.b.path))
        self.assertEqual(self.cache.requests, 0)

    def test_a_change_is_told_and_asked_again_by_name(self):
        b = self.devices.b
        self.assertEqual(self.cache.lookup(b.file("cloud.txt"))["state"], "placeholder")
        watch = self.cache.watch(b.path)
        self.assertIsNotNone(watch)
        fixture.read(b.file("cloud.txt"))
        changed = []
        deadline = time.monotonic() + 30
        while b.file("cloud.txt") not in changed and time.monotonic() < deadline:
            select.select([watch], [], [], 1)
            changed += self.cache.changed(watch)
        self.assertIn(b.file("cloud.txt"), changed)
        self.assertEqual(self.cache.lookup(b.file("cloud.txt"))["state"], "local")
        self.assertEqual(self.cache.requests, 2)
        # Unchanged items are still answered from memory.
        self.assertEqual(self.cache.lookup(b.file("local.txt"))["state"], "local")
        self.assertEqual(self.cache.requests, 2)
        actions.free_up_space(b.file("cloud.txt"))

    def test_a_partly_read_placeholder_is_partial(self):
        a, b = self.devices.a, self.devices.b
        fixture.write(a.file("large.bin"), 9 * 1024 * 1024)
        a.sync()
        self.devices.wait(lambda: b.state_of("large.bin") == "placeholder", what="large.bin on B")
        with open(b.file("large.bin"), "rb") as f:
            f.read(4096)
        self.assertEqual(b.state_of("large.bin"), "partial")
        item = self.cache.lookup(b.file("large.bin"))
        self.assertEqual(item["state"], "partial")
        self.assertLess(item["progress"], 100)

    def test_transient_states_are_polled(self):
        b = self.devices.b
        with open(b.file("new.txt"), "w") as f:
            f.write("new\n" * 500)
        self.assertEqual(self.cache.lookup(b.file("new.txt"))["state"], "pending")
        b.sync()
        self.assertEqual(self.cache.poll_transient(), [b.file("new.txt")])
        self.assertEqual(self.cache.lookup(b.file("new.txt"))["state"], "local")

    def test_a_large_folder_is_one_request(self):
        a = self.devices.a
        folder = a.file("many")
        os.mkdir(folder)
        for i in range(2000):
            with open(os.path.join(folder, f"f{i:05}.txt"), "w") as f:
                f.write("x")
        # Uploaded first: an upload is an event, which would have its item asked again.
        a.sync()
        states = [self.cache.lookup(os.path.join(folder, f"f{i:05}.txt")) for i in range(2000)]
        self.assertEqual(self.cache.requests, 1)
        self.assertTrue(all(s is not None for s in states))


class ActionTests(unittest.TestCase):
    """Each menu entry run as the extension runs it."""

    @classmethod
    def setUpClass(cls):
        cls.devices = fixture.Devices()

    @classmethod
    def tearDownClass(cls):
        cls.devices.close()

    def entry(self, paths, label):
        entries = menus.file_entries(paths)
        found = [e for e in entries if e.label == label]
        self.assertEqual(len(found), 1, f"{label} in {[e.label for e in entries]}")
        return found[0]

    def arrive(self, name, size=96 * 1024):
        a, b = self.devices.a, self.devices.b
        fixture.write(a.file(name), size)
        a.sync()
        self.devices.wait(lambda: b.state_of(name) == "placeholder", what=f"{name} on B")
        return b.file(name)

    def test_keep_free_up_space_and_download(self):
        b = self.devices.b
        path = self.arrive("doc.bin")
        self.entry([path], "Always keep on this device").run()
        self.devices.wait(lambda: b.state_of("doc.bin") == "local", what="the kept file to download")
        self.assertEqual(os.getxattr(path, "user.ubiqfs.pinned"), b"1")
        # A kept file cannot be freed: the menu says why, nothing changes.
        with self.assertRaisesRegex(actions.ActionError, "kept on this device"):
            self.entry([path], "Free up space").run()
        self.assertEqual(b.state_of("doc.bin"), "local")
        self.entry([path], "Stop keeping on this device").run()
        self.assertEqual(os.getxattr(path, "user.ubiqfs.pinned"), b"0")
        self.entry([path], "Free up space").run()
        self.assertEqual(b.state_of("doc.bin"), "placeholder")
        self.entry([path], "Download now").run()
        self.devices.wait(lambda: b.state_of("doc.bin") == "local", what="Download now")

    def test_keep_only_on_this_device_and_sync_again(self):
        a, b = self.devices.a, self.devices.b
        path = b.file("mine.txt")
        with open(path, "w") as f:
            f.write("mine\n" * 300)
        b.sync()
        self.devices.wait(lambda: os.path.exists(a.file("mine.txt")), what="mine.txt on A")
        self.entry([path], "Keep only on this device").run()
        self.assertEqual(b.state_of("mine.txt"), "ignored")
        self.assertEqual(os.getxattr(path, "user.ubiqfs.ignored"), b"1")
        b.sync()
        self.devices.wait(lambda: not os.path.exists(a.file("mine.txt")), what="mine.txt to leave A")
        # Its only copy is here: no Free up space, no versions; the attribute refuses too.
        self.assertEqual([e.label for e in menus.file_entries([path])], ["Sync again"])
        with self.assertRaisesRegex(actions.ActionError, "only on this device"):
            actions.free_up_space(path)
        self.entry([path], "Sync again").run()
        self.assertEqual(os.getxattr(path, "user.ubiqfs.ignored"), b"0")
        self.assertNotEqual(b.state_of("mine.txt"), "ignored")
        b.sync()
        self.devices.wait(lambda: fixture.read(a.file("mine.txt")) == b"mine\n" * 300, what="mine.txt back on A")

    def test_an_item_a_rule_ignores_cannot_sync_again(self):
        b = self.devices.b
        path = b.file("scratch.nosync")
        with open(path, "w") as f:
            f.write("scratch\n")
        self.assertEqual(b.state_of("scratch.nosync"), "ignored")
        with self.assertRaisesRegex(actions.ActionError, "ignore rule"):
            self.entry([path], "Sync again").run()
        self.assertEqual(b.state_of("scratch.nosync"), "ignored")

    def test_stop_keeping_an_item_of_a_kept_folder(self):
        b = self.devices.b
        os.mkdir(b.file("kept"))
        with open(b.file("kept/inside.txt"), "w") as f:
            f.write("inside\n" * 300)
        b.sync()
        self.entry([b.file("kept")], "Always keep on this device").run()
        self.assertEqual(os.getxattr(b.file("kept/inside.txt"), "user.ubiqfs.pinned"), b"1")
        self.entry([b.file("kept/inside.txt")], "Stop keeping on this device").run()
        self.assertEqual(os.getxattr(b.file("kept/inside.txt"), "user.ubiqfs.pinned"), b"0")
        self.assertIn("Always keep on this device", [e.label for e in menus.file_entries([b.file("kept/inside.txt")])])

    def test_entries_for_several_items_and_outside_mounts(self):
        first, second = self.arrive("one.bin"), self.arrive("two.bin")
        self.entry([first, second], "Free up space").run()
        labels = [e.label for e in menus.file_entries([first, second])]
        self.assertNotIn("Versions…", labels)
        self.assertEqual(menus.file_entries([first, "/tmp"]), [])
        self.assertEqual(menus.folder_entries("/tmp"), [])

    def test_versions_and_restore(self):
        a, b = self.devices.a, self.devices.b
        path = b.file("notes.txt")
        for content in (b"first version\n" * 200, b"second version\n" * 200):
            with open(path, "wb") as f:
                f.write(content)
            b.sync()
        self.assertIn("Versions…", [e.label for e in menus.file_entries([path])])
        versions = actions.versions(path)
        self.assertGreaterEqual(len(versions), 2)
        self.assertTrue(versions[0]["current"])
        old = next(v for v in versions if not v["current"])
        actions.restore(path, old["version"])
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"first version\n" * 200)
        b.sync()
        self.devices.wait(lambda: fixture.read(a.file("notes.txt")) == b"first version\n" * 200, what="the restore on A")

    def test_show_conflicts(self):
        b = self.devices.b
        fixture.write(self.devices.a.file("report.txt"), 64 * 1024)
        self.devices.a.sync()
        self.devices.wait(lambda: os.path.exists(b.file("report.txt")), what="report.txt on B")
        fixture.make_conflict(self.devices)
        copies = actions.conflicts(b.file("report.txt"))
        self.assertEqual(len(copies), 1)
        self.assertTrue(os.path.exists(copies[0]))
        self.assertIn("Show conflicts…", [e.label for e in menus.file_entries([b.file("report.txt")])])
        self.assertNotIn("Show conflicts…", [e.label for e in menus.file_entries([copies[0]])])

    def test_sync_pause_resume_and_trash(self):
        b = self.devices.b
        entries = {e.label: e for e in menus.folder_entries(b.path)}
        self.assertIn("Pause sync", entries)
        entries["Pause sync"].run()
        self.assertEqual(actions.status(b.path)["state"], "paused")
        entries = {e.label: e for e in menus.folder_entries(b.path)}
        entries["Resume sync"].run()
        self.assertNotEqual(actions.status(b.path)["state"], "paused")
        with open(b.file("gone.txt"), "w") as f:
            f.write("keep me\n" * 300)
        b.sync()
        os.unlink(b.file("gone.txt"))
        entries["Sync now"].run()
        b.sync()
        entry = next(e for e in actions.trash(b.path) if e["path"] == "/gone.txt")
        restored = actions.restore_from_trash(b.path, entry["path"], entry["seq"])
        with open(restored) as f:
            self.assertEqual(f.read(), "keep me\n" * 300)


if __name__ == "__main__":
    unittest.main()
