#!/usr/bin/env bash
# Installs what ubiqfs needs, builds it, and mounts the default container on MOUNTPOINT
# (default ~/Cloud), backed by the default local store ~/.local/share/ubiqfs/store.
set -euo pipefail
cd "$(dirname "$0")/.."

mountpoint="${1:-$HOME/Cloud}"
Packaging/install-deps.sh
swift build -c release --product ubiqfs
bin="$(swift build -c release --show-bin-path)/ubiqfs"
mkdir -p "$mountpoint"
"$bin" mount "$mountpoint"

cat <<TRY
ubiqfs is mounted on $mountpoint ($bin). Things to try:
  cp -r /usr/share/doc/git $mountpoint/ && ls -l $mountpoint
  $bin status $mountpoint            # online/paused, pending uploads, cache use
  $bin sync $mountpoint --wait       # push now; returns when nothing is pending
  getfattr -n user.ubiqfs.state $mountpoint/git/copyright
  $bin mount /tmp/second --state-dir /tmp/second-state   # a second device on the same store
  $bin unmount $mountpoint
TRY
