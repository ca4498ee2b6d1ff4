"""A container in a local folder store, read the way CONTAINER-FORMAT.md says ("LocalFolderStore")."""

import errno
import os
import stat

from basics import *  # noqa: F401,F403

# ---------------------------------------------------------------- the store

class LocalFolderStore:
    """CF "LocalFolderStore": the container is a folder; keys are paths."""

    def __init__(self, folder):
        self.folder = os.path.abspath(folder)
        # GUESS: only a running mount tells a missing store from a new one;
        # opening the store creates `.tmp` (CF).  A reader does not create it,
        # so a folder without it is read, and only a folder (or `.tmp`) that
        # goes away while reading makes the store unreachable.
        self.had_tmp = os.path.isdir(os.path.join(self.folder, ".tmp"))

    def _path(self, key):
        # CF "LocalFolderStore": keys with an empty component, ./.., a
        # component starting with '.', a leading '/' or a NUL are refused.
        parts = key.split("/")
        if key.startswith("/") or "\0" in key or any(
                p == "" or p.startswith(".") for p in parts):
            raise Damaged("key %r refused" % key)
        return os.path.join(self.folder, *parts)

    def _check_reachable(self):
        # CF: a missing object is notFound only while `.tmp` is there.
        probe = ".tmp" if self.had_tmp else ""
        if not os.path.isdir(os.path.join(self.folder, probe)):
            raise Fatal("the store is unreachable: %s is missing (not a "
                        "container folder, or its disk is gone)"
                        % os.path.join(self.folder, probe))

    def get(self, key, limit, start=0, end=None):
        """The object's bytes (or [start, end), clamped to its size)."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(self._path(key), flags)
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.ENOTDIR):
                self._check_reachable()
                raise NotFound(key)
            raise Damaged("%s cannot be opened: %s" % (key, err.strerror))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Damaged("%s is not a regular file" % key)
            if info.st_size > limit:      # CF "Encoding": checked before reading
                raise Damaged("%s is larger than may be read" % key)
            end = info.st_size if end is None else min(end, info.st_size)
            return self._pread_all(fd, start, max(0, end - start))
        finally:
            os.close(fd)

    @staticmethod
    def _pread_all(fd, offset, length):
        chunks = []
        while length > 0:
            chunk = os.pread(fd, min(length, 16 * MIB), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            length -= len(chunk)
        return b"".join(chunks)

    def list(self, prefix):
        """CF: readdir of the prefix's folder, skipping '.' names, by bytes."""
        folder, _, start = prefix.rpartition("/")
        self._check_reachable()
        try:
            names = os.listdir(os.fsencode(self._path(folder)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as err:
            raise Fatal("cannot list %s: %s" % (prefix, err.strerror))
        keys = [folder.encode() + b"/" + n for n in names
                if not n.startswith(b".") and n.startswith(start.encode())]
        return [k.decode("utf-8", "surrogateescape") for k in sorted(keys)]
