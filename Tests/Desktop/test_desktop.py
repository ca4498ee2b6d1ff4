"""GNOME Files under Xvfb on a real mount, and desktop notifications through a real
notification server (dunst) on a private session bus."""

import os
import shutil
import subprocess
import sys
import tempfile
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


def hue(degrees, saturation=0.8, value=0.8):
    """An sRGB colour of the HSV wheel, in 0...255."""
    import colorsys
    return tuple(round(c * 255) for c in colorsys.hsv_to_rgb(degrees / 360, saturation, value))


# Twelve photos, each one colour with noise (real photo sizes, a few MB): their pictures
# are on screen when these colours are. Hues halfway between the wheel's twelfths keep off
# GTK's and Adwaita's blues; the control shows the generic icons have no picture's worth
# of any of them.
PHOTO_COLOURS = [hue(15 + 30 * i) for i in range(12)]
TOLERANCE = 24  # per channel
# Pixels of a colour that make a picture: half of one in the grid (96 x 64). The generic
# image icon's gradient has a few dozen pixels near some of the colours.
ENOUGH = 3000


def photo_pixels(png):
    """How many pixels of the screenshot are within TOLERANCE of each photo's colour."""
    import collections
    data = subprocess.run(["/usr/bin/convert", png, "-depth", "8", "rgb:-"], capture_output=True, check=True).stdout
    histogram = collections.Counter(data[offset:offset + 3] for offset in range(0, len(data) - 2, 3))
    counts = [0] * len(PHOTO_COLOURS)
    for pixel, count in histogram.items():
        for index, colour in enumerate(PHOTO_COLOURS):
            if all(abs(p - c) <= TOLERANCE for p, c in zip(pixel, colour)):
                counts[index] += count
    return counts


def gio_thumbnail(paths, env):
    """GLib's view of each file's thumbnail (`gio info -a thumbnail::*` in the desktop's
    environment): {path: {"thumbnail::is-valid": "TRUE", ...}}."""
    output = subprocess.run(["gio", "info", "-a", "thumbnail::*", *paths], capture_output=True, text=True, env=env).stdout
    found, current = {}, None
    for line in output.splitlines():
        if line.startswith("local path: "):
            current = found.setdefault(line[len("local path: "):], {})
        elif line.startswith("  thumbnail::") and current is not None:
            key, _, value = line.strip().partition(": ")
            current[key] = value
    return found


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


class ThumbnailTests(unittest.TestCase):
    """Issue 39 on a desktop: GNOME Files opens a folder of photos that are placeholders on
    device B. The pictures device A made are in B's desktop cache before the folder is
    opened, so they are on screen (the photos' own colours, which no generic icon has) and
    nothing is downloaded. The control mounts B with `--thumbnails off`: generic icons, and
    still no download (the thumbnailer GNOME Files runs is refused the files)."""

    @classmethod
    def setUpClass(cls):
        cls.photos = tempfile.mkdtemp(prefix="ubiqfs-desktop-photos-")
        for index, colour in enumerate(PHOTO_COLOURS):
            subprocess.run(["/usr/bin/convert", "-size", "3000x2000", "xc:#%02x%02x%02x" % colour, "-attenuate", "1",
                            "+noise", "Gaussian", "-quality", "92", os.path.join(cls.photos, f"IMG_{index + 1:04}.jpg")],
                           check=True)
        os.makedirs(ARTEFACTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.photos, ignore_errors=True)

    def photos_on_b(self, b_options=()):
        """A desktop session whose cache B fills, and the photos written on A and listed
        on B; (desktop, devices, paths on B)."""
        desktop = session.Session()
        self.addCleanup(desktop.close)
        cache = os.path.join(desktop.env["XDG_CACHE_HOME"], "thumbnails")
        devices = fixture.Devices(b_options=("--thumbnail-cache", cache, *b_options))
        self.addCleanup(devices.close)
        a, b = devices.a, devices.b
        os.mkdir(a.file("Photos"))
        names = sorted(os.listdir(self.photos))
        for name in names:
            shutil.copyfile(os.path.join(self.photos, name), os.path.join(a.file("Photos"), name))
        a.sync()
        paths = [os.path.join(b.file("Photos"), name) for name in names]
        devices.wait(lambda: all(os.path.exists(p) for p in paths), timeout=60, what="B to list the photos")
        return desktop, devices, paths

    def assert_placeholders(self, devices, paths):
        for path in paths:
            name = os.path.relpath(path, devices.b.path)
            self.assertEqual(devices.b.state_of(name), "placeholder", f"{name} was downloaded")
            self.assertEqual(os.stat(path).st_blocks, 0, f"{name} has blocks here")

    def show(self, desktop, folder, name, settled):
        """GNOME Files showing `folder` until `settled(counts)` holds and two screenshots in
        a row agree; returns (screenshot, counts)."""
        desktop.files(folder, os.path.join(ARTEFACTS, name + ".log"))
        shot = os.path.join(ARTEFACTS, name + ".png")
        deadline = time.monotonic() + 180
        counts = None
        while time.monotonic() < deadline:
            time.sleep(2)
            desktop.screenshot(shot)
            latest = photo_pixels(shot)
            if latest == counts and settled(latest):
                break
            counts = latest
        return shot, photo_pixels(shot)

    def test_photos_show_their_thumbnails_without_being_downloaded(self):
        desktop, devices, paths = self.photos_on_b()

        # GLib, in the desktop's environment, finds a valid large picture of every photo.
        def installed():
            info = gio_thumbnail(paths, desktop.env)
            return all(info.get(p, {}).get("thumbnail::is-valid") == "TRUE" for p in paths)
        devices.wait(installed, timeout=300, what="B to install the pictures A made")
        cache = os.path.join(desktop.env["XDG_CACHE_HOME"], "thumbnails")
        for path, info in gio_thumbnail(paths, desktop.env).items():
            self.assertTrue(info["thumbnail::path"].startswith(os.path.join(cache, "large") + "/"), f"{path}: {info}")
        self.assert_placeholders(devices, paths)

        shot, counts = self.show(desktop, devices.b.file("Photos"), "desktop-thumbnails",
                                 lambda counts: all(c >= ENOUGH for c in counts))
        for path, colour, count in zip(paths, PHOTO_COLOURS, counts):
            self.assertGreaterEqual(count, ENOUGH, f"{os.path.basename(path)}'s colour {colour} is not on screen in {shot}: {counts}")
        self.assert_placeholders(devices, paths)
        # The pictures were there before GNOME Files asked: it never ran a thumbnailer, so
        # it recorded no failure either.
        failures = os.path.join(cache, "fail")
        self.assertEqual([f for _, _, files in os.walk(failures) for f in files], [], "GNOME Files tried to make pictures")

    def test_without_installed_pictures_there_are_generic_icons_and_no_download(self):
        desktop, devices, paths = self.photos_on_b(("--thumbnails", "off", "--log-level", "trace"))
        time.sleep(3)  # past the 3 s GNOME Files waits before making a picture of a file just changed

        # GNOME Files tries to make the pictures itself, and fails: the thumbnailer it runs
        # is refused the files (EAGAIN) and GLib records the failures.
        def failed():
            info = gio_thumbnail(paths, desktop.env)
            return all(info.get(p, {}).get("thumbnail::failed") == "TRUE" for p in paths)
        shot, counts = self.show(desktop, devices.b.file("Photos"), "desktop-no-thumbnails", lambda counts: failed())
        self.assertTrue(failed(), f"GNOME Files did not try to make every picture: {gio_thumbnail(paths, desktop.env)}")
        for path, colour, count in zip(paths, PHOTO_COLOURS, counts):
            self.assertLess(count, ENOUGH, f"{os.path.basename(path)}'s colour {colour} is on screen without a picture in {shot}: {counts}")
        self.assert_placeholders(devices, paths)
        with open(os.path.join(devices.b.state, "ubiqfs.log")) as f:
            log = f.read()
        for path in paths:
            self.assertIn(f"open: {os.path.basename(path)} is not on this device", log, "the thumbnailer was not refused")


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

    def test_a_merge_is_told_as_a_merge(self):
        devices = self.devices()
        a, b = devices.a, devices.b
        lines = [f"line {i}\n" for i in range(1, 21)]
        with open(a.file("notes.md"), "w") as f:
            f.writelines(lines)
        a.sync()
        devices.wait(lambda: os.path.exists(b.file("notes.md")), what="notes.md on B")
        fixture.ubiqfs("pause", b.path)
        with open(a.file("notes.md"), "w") as f:
            f.writelines(lines[:2] + ["line 3 from A\n"] + lines[3:])
        a.sync()
        with open(b.file("notes.md"), "w") as f:
            f.writelines(lines[:16] + ["line 17 from B\n"] + lines[17:])
        fixture.ubiqfs("resume", b.path)
        b.sync()
        summary, body = self.wait_for(devices, "merged")
        self.assertIn("both edits", summary)
        self.assertIn("notes.md", body)
        self.assertEqual(os.listdir(b.path), ["notes.md"])
        self.assertEqual([n for n in session.notifications(self.desktop) if "conflict" in n[0].lower()], [])

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
