#!/usr/bin/env bash
# Installs ubiqfs's desktop integration under ROOT (default /) with PREFIX (default /usr):
# the GNOME Files extension, its Python package and dialogs, the emblem icons and
# Dolphin's service menu (docs/DESKTOP.md). Used by build-deb.sh (ROOT = the package),
# the quick start (/ and /usr/local) and the desktop tests (a staging folder).
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-/}"
prefix="${2:-/usr}"
share="${root%/}$prefix/share"
install -d "$share/ubiqfs/desktop/ubiqfs_desktop" "$share/nautilus-python/extensions" \
    "$share/icons/hicolor/scalable/emblems" "$share/kio/servicemenus"
install -m 0644 Sources/Desktop/ubiqfs_desktop/*.py "$share/ubiqfs/desktop/ubiqfs_desktop/"
install -m 0755 Sources/Desktop/ubiqfs-dialog "$share/ubiqfs/desktop/ubiqfs-dialog"
install -m 0644 Sources/Desktop/nautilus/ubiqfs-nautilus.py "$share/nautilus-python/extensions/ubiqfs-nautilus.py"
install -m 0644 Sources/Desktop/icons/*.svg "$share/icons/hicolor/scalable/emblems/"
sed "s|/usr/share/ubiqfs/|$prefix/share/ubiqfs/|" Sources/Desktop/dolphin/ubiqfs.desktop > "$share/kio/servicemenus/ubiqfs.desktop"
chmod 0755 "$share/kio/servicemenus/ubiqfs.desktop"
if [ "$root" = "/" ] && command -v gtk-update-icon-cache >/dev/null; then
    gtk-update-icon-cache -q -t -f "$share/icons/hicolor" || true
fi
