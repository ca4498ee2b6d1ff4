#!/usr/bin/env bash
# Installs what ubiqfs needs, builds it, installs the command in /usr/local/bin (and the
# desktop integration in /usr/local/share: docs/DESKTOP.md), and mounts the default
# container on MOUNTPOINT (default ~/Cloud), backed by the default local store
# ~/.local/share/ubiqfs/store.
set -euo pipefail
cd "$(dirname "$0")/.."

mountpoint="${1:-$HOME/Cloud}"
Packaging/install-deps.sh
swift build -c release --product ubiqfs
bin="$(swift build -c release --show-bin-path)/ubiqfs"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo install -m 0755 "$bin" /usr/local/bin/ubiqfs
$sudo Packaging/install-desktop.sh / /usr/local
mkdir -p "$mountpoint"
/usr/local/bin/ubiqfs mount "$mountpoint"

cat <<TRY
ubiqfs is mounted on $mountpoint (/usr/local/bin/ubiqfs). Things to try:
  cp -r /usr/share/doc/git $mountpoint/ && ls -l $mountpoint
  ubiqfs status $mountpoint            # online/paused, pending uploads, cache use
  ubiqfs sync $mountpoint --wait       # push now; returns when nothing is pending
  getfattr -n user.ubiqfs.state $mountpoint/git/copyright
  ubiqfs mount /tmp/second --state-dir /tmp/second-state --device second   # a second device on the same store
  ubiqfs unmount $mountpoint
GNOME Files shows each item's state once restarted (nautilus -q), with python3-nautilus installed.
TRY
