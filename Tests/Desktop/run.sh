#!/usr/bin/env bash
# The desktop tests (docs/DESKTOP.md): the extension's state mapping without a display;
# states and menu actions on real mounts; GNOME Files under Xvfb showing the emblems (its
# screenshots kept in $UBIQFS_ARTEFACTS, default .build/artefacts); notifications through
# dunst on a private session bus. Prints `desktop: N passed, M failed`.
# UBIQFS_BINARY: the binary (default .build/debug/ubiqfs).
set -uo pipefail
cd "$(dirname "$0")/../.."

Packaging/install-deps.sh --no-recommends nautilus python3-nautilus python3-gi gir1.2-gtk-4.0 xvfb dbus dunst \
    libnotify-bin imagemagick gtk-update-icon-cache adwaita-icon-theme x11-utils

cleanup() {
    awk '$3 == "fuse.ubiqfs" && $2 ~ /^\/tmp\/ubiqfs-test-desktop-/ {print $2}' /proc/mounts | while read -r m; do
        fusermount3 -uz "$m" || true
    done
}
trap cleanup EXIT
log="$(mktemp)"
# Debian's python3: python3-gi and python3-nautilus are its modules.
/usr/bin/python3 -m unittest discover -s Tests/Desktop -p 'test_*.py' -v 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in.*/\1/p' "$log")
bad=$(grep -cE '^(FAIL|ERROR): ' "$log")
rm -f "$log"
echo "desktop: $(( ${ran:-0} - bad )) passed, $bad failed"
if [ "${ran:-0}" -eq 0 ]; then exit 1; fi
exit "$status"
