"""GNOME Files under Xvfb on a real mount, and desktop notifications through a real
notification server (dunst) on a private session bus."""

import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "Desktop"))

import fixture  # noqa: E402
import session  # noqa: E402

ARTEFACTS = os.environ.get("UBIQFS_ARTEFACTS") or os.path.join(fixture.ROOT, ".build", "artefacts")

# The emblems' own colours (Sources/Desktop/icons): pixels of exactly these are theirs.
COLOURS = {
    "placeholder": (0x1C, 0x71, 0xD8),
    "local": (0x2E, 0xC2, 0x7E),
    "pinned": (0x26, 0xA2, 0x69),
    "conflict": (0xF5, 0xC2, 0x11),
    "ignored": (0x77, 0x76, 0x7B),
}


def pixel_counts(png):
    """How many pixels of each emblem colour the screenshot has."""
    data = subprocess.run(["convert", png, "-depth", "8", "rgb:-"], capture_output=True, check=True).stdout
    wanted = {bytes(c): name for name, c in COLOURS.items()}
    counts = dict.fromkeys(COLOURS, 0)
    for offset in range(0, len(data) - 2, 3):
        name = wanted.get(data[offset:offset + 3])
        if name:
            counts[name] += 1
    return counts


class FilesTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.devices, cls.names = fixture.devices_with_states()
        cls.stage, cls.share = session.stage_desktop()
        os.makedirs(ARTEFACTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.devices.close()
        shutil.rmtree(cls.stage, ignore_errors=True)

    def show(self, share, name):
        """GNOME Files on device B until its view settles; returns the screenshot."""
        desktop = session.Session(share)
        self.addCleanup(desktop.close)
        desktop.files(self.devices.b.path, os.path.join(ARTEFACTS, name + ".log"))
        shot = os.path.join(ARTEFACTS, name + ".png")
        # Over as soon as the view settles; on a busy machine Files alone may take a minute.
        deadline = time.monotonic() + 150
        counts = None
        while time.monotonic() < deadline:
            time.sleep(2)
            desktop.screenshot(shot)
            latest = pixel_counts(shot)
            if latest == counts and any(latest.values()) == (share is not None):
                break
            counts = latest
        return shot, pixel_counts(shot)

    def test_emblems_in_gnome_files(self):
        shot, counts = self.show(self.share, "desktop-emblems")
        for state, count in counts.items():
            self.assertGreater(count, 3, f"no {state} emblem in {shot}: {counts}")
        # Showing the folder downloaded nothing.
        b = self.devices.b
        self.assertEqual(b.state_of(self.names["placeholder"]), "placeholder")
        self.assertEqual(b.state_of(self.names["conflict"]), "placeholder")
        self.assertFalse(os.path.exists(self.devices.a.file(self.names["ignored"])))

    def test_without_the_extension_there_are_no_emblems(self):
        shot, counts = self.show(None, "desktop-no-extension")
        self.assertEqual(sum(counts.values()), 0, f"emblem colours without the extension in {shot}: {counts}")


class DialogTests(unittest.TestCase):
    """The windows the menu opens, on a real mount under Xvfb: each shows what it lists."""

    @classmethod
    def setUpClass(cls):
        cls.devices, cls.names = fixture.devices_with_states()
        os.makedirs(ARTEFACTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.devices.close()

    def open(self, kind, path, title):
        desktop = session.Session()
        self.addCleanup(desktop.close)
        dialog = os.path.join(fixture.ROOT, "Sources", "Desktop", "ubiqfs-dialog")
        log = os.path.join(ARTEFACTS, f"dialog-{kind}.log")
        process = desktop._start(["/usr/bin/python3", dialog, kind, path], open(log, "w"))
        self.devices.wait(lambda: title in desktop.window_titles(), timeout=30, what=f"the window {title!r}")
        time.sleep(1)
        desktop.screenshot(os.path.join(ARTEFACTS, f"dialog-{kind}.png"))
        self.assertIsNone(process.poll(), f"ubiqfs-dialog {kind} ended; see {log}")
        with open(log) as f:
            self.assertNotIn("Traceback", f.read())

    def test_versions(self):
        b = self.devices.b
        for content in (b"one\n" * 400, b"two\n" * 400):
            with open(b.file("notes.txt"), "wb") as f:
                f.write(content)
            b.sync()
        self.open("versions", b.file("notes.txt"), "Versions of notes.txt")

    def test_conflicts(self):
        self.open("conflicts", self.devices.b.file(self.names["conflict"]), "Conflicts of report.txt")

    def test_trash(self):
        b = self.devices.b
        with open(b.file("old.txt"), "w") as f:
            f.write("old\n" * 400)
        b.sync()
        os.unlink(b.file("old.txt"))
        b.sync()
        self.open("trash", b.path, "ubiqfs trash")


class NotificationTests(unittest.TestCase):
    def setUp(self):
        self.desktop = session.Session()
        self.addCleanup(self.desktop.close)
        self.desktop.notification_server()

    def devices(self, b_options=(), **env):
        devices = fixture.Devices(env=dict(self.desktop.env, **env), b_options=b_options)
        self.addCleanup(devices.close)
        return devices

    def wait_for(self, devices, words):
        found = []

        def seen():
            found[:] = session.notifications(self.desktop)
            return any(words in summary.lower() for summary, _ in found)
        devices.wait(seen, timeout=30, what=f"a notification with {words!r}")
        return next((s, b) for s, b in found if words in s.lower())

    def test_a_conflict_copy_is_told(self):
        devices = self.devices()
        fixture.write(devices.a.file("plan.txt"), 64 * 1024)
        devices.a.sync()
        devices.wait(lambda: os.path.exists(devices.b.file("plan.txt")), what="plan.txt on B")
        fixture.make_conflict(devices, "plan.txt")
        summary, body = self.wait_for(devices, "conflict")
        self.assertIn("plan", body)

    def test_a_store_unreachable_for_a_while_and_back(self):
        devices = self.devices(UBIQFS_NOTIFY_UNREACHABLE_AFTER="1")
        fixture.ubiqfs("faults", devices.b.path, "errors=1")
        self.wait_for(devices, "cannot be reached")
        fixture.ubiqfs("faults", devices.b.path, "off")
        self.wait_for(devices, "reachable again")

    def test_evictions_of_files_used_lately(self):
        devices = self.devices(b_options=("--cache-size", "1M"))
        for i in range(3):
            fixture.write(devices.a.file(f"big{i}.bin"), 768 * 1024, bytes([65 + i]))
        devices.a.sync()
        for i in range(3):
            devices.wait(lambda: os.path.exists(devices.b.file(f"big{i}.bin")), what="the files on B")
            fixture.read(devices.b.file(f"big{i}.bin"))
        summary, body = self.wait_for(devices, "used lately")
        self.assertIn("big", body)

    def test_no_notify_turns_them_off(self):
        devices = self.devices(b_options=("--no-notify",))
        fixture.write(devices.a.file("plan.txt"), 64 * 1024)
        devices.a.sync()
        devices.wait(lambda: os.path.exists(devices.b.file("plan.txt")), what="plan.txt on B")
        fixture.make_conflict(devices, "plan.txt")
        time.sleep(4)  # past the 2 s a burst is gathered for
        self.assertEqual(session.notifications(self.desktop), [])


if __name__ == "__main__":
    unittest.main()
