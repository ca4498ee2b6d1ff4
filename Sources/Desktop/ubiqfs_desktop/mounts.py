"""Which paths are inside a ubiqfs mount, from /proc/self/mountinfo."""

import os
import threading
import time


def _unescape(field):
    """mountinfo writes space, tab, newline and backslash as \\ooo."""
    out = bytearray()
    raw = field.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(raw):
        if raw[i] == 92 and i + 3 < len(raw) and raw[i + 1:i + 4].isdigit():
            out.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_mountinfo(text):
    """The mountpoints of ubiqfs mounts in a mountinfo text, longest first."""
    points = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(" "), right.split(" ")
        if len(fields) < 5 or len(tail) < 2:
            continue
        fstype, source = tail[0], tail[1]
        if fstype == "fuse.ubiqfs" or (fstype == "fuse" and source.startswith("ubiqfs:")):
            points.append(_unescape(fields[4]))
    return sorted(points, key=len, reverse=True)


class MountTable:
    """The ubiqfs mounts of this machine, read again at most every `ttl` seconds: a
    file manager asks about every file it shows, and most are in no mount at all."""

    def __init__(self, ttl=2.0, path="/proc/self/mountinfo"):
        self._ttl = ttl
        self._path = path
        self._lock = threading.Lock()
        self._points = ()
        self._read_at = -1e9

    def mountpoints(self):
        """Longest first. Read without the lock while fresh: a view asks for every item."""
        if time.monotonic() - self._read_at > self._ttl:
            with self._lock:
                now = time.monotonic()
                if now - self._read_at > self._ttl:
                    try:
                        with open(self._path, encoding="utf-8", errors="surrogateescape") as f:
                            self._points = tuple(parse_mountinfo(f.read()))
                    except OSError:
                        self._points = ()
                    self._read_at = now
        return self._points

    def locate(self, path):
        """(mountpoint, path inside the mount starting with "/") or None."""
        points = self.mountpoints()
        if not points:
            return None
        if "/." in path or "//" in path or (path.endswith("/") and path != "/"):
            path = os.path.normpath(path)
        for point in points:
            if path.startswith(point):
                rest = path[len(point):]
                if not rest:
                    return point, "/"
                if rest[0] == "/" or point == "/":
                    return point, rest if rest[0] == "/" else "/" + rest
        return None
