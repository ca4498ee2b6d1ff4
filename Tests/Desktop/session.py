"""A desktop session for the tests: Xvfb, a D-Bus session bus, and GNOME Files with
the extension installed in a staging folder (Packaging/install-desktop.sh)."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

from fixture import ROOT


def stage_desktop():
    """Installs the desktop files under a temporary root; returns its usr/share."""
    root = tempfile.mkdtemp(prefix="ubiqfs-desktop-stage-")
    subprocess.run([os.path.join(ROOT, "Packaging", "install-desktop.sh"), root], check=True)
    share = os.path.join(root, "usr", "share")
    subprocess.run(["gtk-update-icon-cache", "-q", "-t", "-f", os.path.join(share, "icons", "hicolor")], check=False)
    return root, share


def _free_display():
    for number in range(90, 190):
        if not os.path.exists(f"/tmp/.X11-unix/X{number}") and not os.path.exists(f"/tmp/.X{number}-lock"):
            return number
    raise RuntimeError("no free X display number")


class Session:
    def __init__(self, share=None):
        self.home = tempfile.mkdtemp(prefix="ubiqfs-desktop-home-")
        self.processes = []
        self.display = f":{_free_display()}"
        self.env = dict(os.environ)
        runtime = os.path.join(self.home, "run")
        os.makedirs(runtime, mode=0o700)
        self.env.update({
            "HOME": self.home, "DISPLAY": self.display, "XDG_RUNTIME_DIR": runtime,
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"), "XDG_DATA_HOME": os.path.join(self.home, ".local/share"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"), "GTK_A11Y": "none", "NO_AT_BRIDGE": "1",
            "GSETTINGS_BACKEND": "memory", "LANG": "C.UTF-8",
            # Xvfb has no GPU: GTK's software OpenGL renderer draws so slowly on a loaded
            # machine that its frame clock starves the idle callbacks that hand listed files
            # to the view (GNOME Files stays at "Loading..."). Cairo draws at once.
            "GSK_RENDERER": "cairo",
        })
        self.env.pop("WAYLAND_DISPLAY", None)
        # GNOME Files' embedded Python finds its home from python3 on PATH: Debian's, which
        # has python3-gi, not one of a Python version manager.
        self.env["PATH"] = ":".join(p for p in self.env.get("PATH", "/usr/bin:/bin").split(":") if ".pyenv" not in p and "/venv" not in p)
        if share:
            self.env["XDG_DATA_DIRS"] = share + ":/usr/local/share:/usr/share"
        try:
            self._start(["Xvfb", self.display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            self._wait(lambda: os.path.exists(f"/tmp/.X11-unix/X{self.display[1:]}"), "Xvfb")
            bus = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
                                 capture_output=True, text=True, check=True, env=self.env).stdout.split()
            self.env["DBUS_SESSION_BUS_ADDRESS"], self.bus_pid = bus[0], int(bus[1])
        except Exception:
            self.close()
            raise

    def _start(self, argv, log=None):
        process = subprocess.Popen(argv, env=self.env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def _wait(self, condition, what, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def notification_server(self):
        """dunst, a freedesktop notification server whose history the tests read."""
        config = os.path.join(self.home, "dunstrc")
        with open(config, "w") as f:
            f.write("[global]\n    sticky_history = yes\n    history_length = 100\n")
        self._start(["dunst", "-config", config])
        self._wait(lambda: subprocess.run(["dunstctl", "is-paused"], env=self.env, capture_output=True).returncode == 0,
                   "dunst on the session bus")

    def files(self, folder, log_path):
        """GNOME Files showing `folder` (its log in `log_path`)."""
        log = open(log_path, "w")
        return self._start(["nautilus", "--new-window", folder], log)

    def window_titles(self):
        """The titles of the display's top-level windows (there is no window manager)."""
        tree = subprocess.run(["xwininfo", "-root", "-children"], capture_output=True, text=True, env=self.env).stdout
        return [line.split('"')[1] for line in tree.splitlines() if line.count('"') >= 2]

    def screenshot(self, path):
        subprocess.run(["import", "-display", self.display, "-window", "root", path], check=True, env=self.env)

    def close(self):
        for process in reversed(self.processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in self.processes:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        if getattr(self, "bus_pid", None):
            try:
                os.kill(self.bus_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        # Services the bus started (gvfsd, tracker...) run in the home: end them too.
        subprocess.run(["pkill", "-f", "--", self.home], check=False)
        shutil.rmtree(self.home, ignore_errors=True)


def notifications(session):
    """The summaries and bodies dunst (the session's notification server) has shown."""
    import json
    subprocess.run(["dunstctl", "close-all"], env=session.env, check=False)
    result = subprocess.run(["dunstctl", "history"], capture_output=True, text=True, env=session.env)
    if result.returncode != 0:
        return []
    data = json.loads(result.stdout).get("data") or [[]]
    return [(n["summary"]["data"], n["body"]["data"]) for n in data[0]]
