#!/usr/bin/env python3
"""Writes ubiqfs.1 (roff) from the command's own help: `ubiqfs --experimental-dump-help`
gives every subcommand, argument and option with its text, so the man page cannot drift
from `ubiqfs help`. The sections the help has no place for (fstab, files, environment,
examples) are written here.

Usage: manpage.py UBIQFS_BINARY OUTPUT_FILE
"""
import datetime
import json
import os
import subprocess
import sys


def roff(text):
    """Escapes text for roff: backslashes, and lines that would start with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def displayed(command):
    return [argument for argument in command.get("arguments", []) if argument.get("shouldDisplay", True)]


def usage(argument, names):
    """How an argument is written: the given flag names, then its value."""
    value = argument.get("valueName", "value").upper()
    if argument["kind"] == "positional":
        return f"\\fI{value}\\fR"
    flags = ", ".join(f"\\fB{roff(('--' if n['kind'] == 'long' else '-') + n['name'])}\\fR" for n in names)
    return flags + ("" if argument["kind"] == "flag" else f" \\fI{value}\\fR")


def synopsis(command, path):
    parts = [f"\\fB{' '.join(path)}\\fR"]
    for argument in displayed(command):
        word = usage(argument, [argument.get("preferredName", {})] if argument["kind"] != "positional" else [])
        parts.append(f"[{word}]" if argument.get("isOptional") else word)
    return " ".join(parts)


def arguments(command):
    out = []
    for argument in displayed(command):
        text = roff(argument.get("abstract", ""))
        if "defaultValue" in argument and argument["kind"] == "option":
            text += f" (default: {roff(argument['defaultValue'])})"
        out.append(f".TP\n{usage(argument, argument.get('names', []))}\n{text}")
    return "\n".join(out)


EXTRA = r"""
.SH MOUNT.FUSE AND FSTAB
\fBmount \-t fuse.ubiqfs\fR \fISTORE\fR \fIMOUNTPOINT\fR \fB\-o\fR \fIOPTIONS\fR runs
\fBubiqfs\fR \fISTORE\fR \fIMOUNTPOINT\fR \fB\-o\fR \fIOPTIONS\fR through mount.fuse3, which is
the same as \fBubiqfs mount\fR \fIMOUNTPOINT\fR \fB\-\-store\fR \fISTORE\fR with these options:
\fBstate\-dir=\fR, \fBcontainer=\fR, \fBdevice=\fR, \fBcache\-size=\fR, \fBkeep\-versions=\fR (deprecated, ignored),
\fBlog\-level=\fR (or with underscores), \fBallow_other\fR, \fBnoexec\fR and \fBro\fR. Generic options (\fBrw\fR,
\fBnodev\fR, \fBnosuid\fR, \fBnoatime\fR, \fB_netdev\fR, \fBnofail\fR, \fBx\-systemd.*\fR...) are
accepted; \fBnoexec\fR and \fBro\fR are honoured; \fBsync\fR, \fBdirsync\fR and \fBmand\fR are
refused. ubiqfs always mounts nodev,nosuid with default_permissions. \fISTORE\fR is an
absolute path or s3://BUCKET/PREFIX. \fBumount\fR \fIMOUNTPOINT\fR unmounts; the daemon then pushes what is
pending and exits. An /etc/fstab line:
.PP
.nf
/srv/ubiqfs-store  /srv/team  fuse.ubiqfs  state\-dir=/var/lib/ubiqfs/team,device=server,_netdev,nofail,x\-systemd.automount  0  0
.fi
.PP
\fB_netdev\fR tells systemd the mount needs the network (ubiqfs is not on its list of network
filesystems); \fBx\-systemd.automount\fR mounts at first access instead of at boot.
.SH MOUNT PROFILES
\fB~/.config/ubiqfs/mounts.conf\fR names mounts, so that \fBubiqfs mount\fR \fINAME\fR and
the systemd user unit \fBubiqfs@\fR\fINAME\fR\fB.service\fR need no options:
.PP
.nf
[work]
mountpoint = ~/Work
store = s3://team\-bucket/work
cache\-size = 20G
.fi
.PP
Keys are the long options of \fBubiqfs mount\fR; options on the command line win. A
profile's state dir defaults to ~/.local/state/ubiqfs/\fINAME\fR. Paths must be absolute or
start with ~/. The commands that take a mountpoint also take a profile's name; write
./\fINAME\fR for a folder of the same name. With \fB\-\-profile\fR, a name that is not in the
file is an error.
.SH SYSTEMD
\fBsystemctl \-\-user enable \-\-now ubiqfs@work\fR mounts the profile \fBwork\fR now and at
every login; \fBsystemctl \-\-user stop ubiqfs@work\fR unmounts after pushing what is
pending; the service restarts on failure. Logs go to the journal:
\fBjournalctl \-\-user \-u ubiqfs@work\fR.
.SH FILES
.TP
\fB~/.config/ubiqfs/mounts.conf\fR
Mount profiles.
.TP
\fB~/.local/state/ubiqfs/\fR\fICONTAINER\fR (a profile's: \fINAME\fR)
A device's state dir: state.db (SQLite), cache/ (content), ubiqfs.log, control.sock.
.TP
\fB~/.local/share/ubiqfs/store\fR
The default store, a local folder.
.SH ENVIRONMENT
\fBAWS_ACCESS_KEY_ID\fR, \fBAWS_SECRET_ACCESS_KEY\fR, \fBAWS_SESSION_TOKEN\fR, \fBAWS_REGION\fR,
\fBAWS_PROFILE\fR, \fBAWS_ENDPOINT_URL\fR and ~/.aws configure S3 stores.
\fBXDG_CONFIG_HOME\fR, \fBXDG_STATE_HOME\fR and \fBXDG_DATA_HOME\fR move the defaults above.
\fBUBIQFS_PASSPHRASE_FILE\fR names a file whose first line is the passphrase of an encrypted
container (also the systemd credential \fBubiqfs-passphrase\fR).
\fBDBUS_SESSION_BUS_ADDRESS\fR (or \fBXDG_RUNTIME_DIR\fR/bus) is the desktop session the daemon
sends its notifications to, with \fBnotify\-send\fR; \fBUBIQFS_NOTIFY_UNREACHABLE_AFTER\fR (seconds,
default 300) is how long the store must stay unreachable before it is told.
.SH EXIT STATUS
0 on success; non-zero when a command failed (one line on standard error says why: 1 for
most failures, 64 for wrong arguments), or when \fBubiqfs doctor\fR found a problem (1).
.SH EXAMPLES
.nf
ubiqfs mount ~/Cloud
ubiqfs status ~/Cloud
ubiqfs pin ~/Cloud/photos
getfattr \-n user.ubiqfs.state ~/Cloud/notes.txt
ubiqfs doctor ~/Cloud \-\-store s3://bucket/team
ubiqfs unmount ~/Cloud
.fi
.SH SEE ALSO
\fBmount.fuse3\fR(8), \fBfusermount3\fR(1), \fBgetfattr\fR(1), \fBsetfattr\fR(1),
\fBsystemd.mount\fR(5). The documentation in /usr/share/doc/ubiqfs: INSTALL.md, SEMANTICS.md,
XATTRS.md, S3.md, WATCH.md, DESKTOP.md, CONTAINER\-FORMAT.md.
"""


def main():
    binary, output = sys.argv[1], sys.argv[2]
    info = json.loads(subprocess.run([binary, "--experimental-dump-help"], check=True, capture_output=True, text=True).stdout)
    root = info["command"]
    version = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout.strip()
    # Reproducible builds set SOURCE_DATE_EPOCH; otherwise today.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date() if epoch else datetime.date.today()).isoformat()
    page = [
        f'.TH UBIQFS 1 "{date}" "ubiqfs {version}" "User Commands"',
        ".SH NAME",
        f"ubiqfs \\- {roff(root.get('abstract', ''))}",
        ".SH SYNOPSIS",
        "\\fBubiqfs\\fR \\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".br",
        "\\fBubiqfs\\fR \\fISTORE\\fR \\fIMOUNTPOINT\\fR \\fB\\-o\\fR \\fIOPTIONS\\fR",
        ".SH DESCRIPTION",
        roff(root.get("discussion", root.get("abstract", ""))),
        ".SH COMMANDS",
    ]
    for command in root.get("subcommands", []):
        if command["commandName"] == "help" or not command.get("shouldDisplay", True):
            continue
        path = ["ubiqfs", command["commandName"]]
        page.append(f".SS {command['commandName']}")
        page.append(synopsis(command, path))
        page.append(".PP")
        page.append(roff(command.get("abstract", "")))
        if command.get("discussion"):
            page.append(".PP")
            page.append(roff(command["discussion"]))
        body = arguments(command)
        if body:
            page.append(".RS")
            page.append(body)
            page.append(".RE")
    page.append(EXTRA.strip())
    with open(output, "w") as out:
        out.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
