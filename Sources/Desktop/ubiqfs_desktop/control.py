"""A mount's control socket (docs/ARCHITECTURE.md, "The control socket")."""

import json
import os
import socket


class ControlError(Exception):
    """A request the daemon refused, or a daemon that cannot be reached; `str` says why."""


def socket_path(mountpoint):
    try:
        return os.getxattr(mountpoint, "user.ubiqfs.control").decode()
    except OSError as error:
        raise ControlError(f"{mountpoint} is not a running ubiqfs mount: {error.strerror}") from error


def request(mountpoint, command, timeout=30.0, **fields):
    """Sends one request and returns the reply (a dict with "ok" true), else raises."""
    message = {"command": command}
    message.update({k: v for k, v in fields.items() if v is not None})
    path = socket_path(mountpoint)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(json.dumps(message).encode() + b"\n")
            chunks = []
            while True:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError as error:
        raise ControlError(f"the daemon of {mountpoint} does not answer: {error}") from error
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError as error:
        raise ControlError(f"the daemon of {mountpoint} sent a reply that is not JSON") from error
    if not reply.get("ok"):
        raise ControlError(reply.get("error") or "the daemon refused the request")
    return reply
