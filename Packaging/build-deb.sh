#!/usr/bin/env bash
# Builds a release binary and the Debian package OUTDIR/ubiqfs_VERSION_ARCH.deb with
# dpkg-deb: /usr/bin/ubiqfs (the Swift runtime linked in statically, so the package needs
# no Swift toolchain), the man page ubiqfs.1 generated from the command's own help, bash,
# zsh and fish completions, the systemd user unit ubiqfs@.service, the desktop
# integration (GNOME Files extension, emblems, Dolphin menu: Packaging/install-desktop.sh),
# the Grafana dashboard and Prometheus alert rules for `ubiqfs mount --metrics`, and the
# docs. Depends are what the binary really links (dpkg-shlibdeps), plus fuse3 for
# fusermount3 and mount.fuse3; Recommends what the desktop integration uses (nautilus-python,
# GTK 4 for its dialogs, notify-send) and the thumbnails (the desktop's gdk-pixbuf thumbnailer,
# bubblewrap to sandbox it, the MIME database). Usage: Packaging/build-deb.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: Packaging/build-deb.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

Packaging/install-deps.sh dpkg-dev binutils gzip

log="$(mktemp)"
if ! swift build -c release --product ubiqfs --static-swift-stdlib > "$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "error: the release build failed" >&2
    exit 1
fi
rm -f "$log"
bin="$(swift build -c release --show-bin-path)/ubiqfs"
test -x "$bin"
version="$("$bin" --version)"
arch="$(dpkg --print-architecture)"
name="ubiqfs_${version}_${arch}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/doc/ubiqfs" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/lib/systemd/user" \
    "$root/usr/share/ubiqfs/grafana" "$root/usr/share/ubiqfs/prometheus"
install -m 0755 "$bin" "$root/usr/bin/ubiqfs"
strip --strip-unneeded "$root/usr/bin/ubiqfs"

python3 Packaging/manpage.py "$root/usr/bin/ubiqfs" "$stage/ubiqfs.1"
gzip -9n < "$stage/ubiqfs.1" > "$root/usr/share/man/man1/ubiqfs.1.gz"
"$root/usr/bin/ubiqfs" --generate-completion-script bash > "$root/usr/share/bash-completion/completions/ubiqfs"
"$root/usr/bin/ubiqfs" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_ubiqfs"
"$root/usr/bin/ubiqfs" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/ubiqfs.fish"
install -m 0644 Packaging/systemd/ubiqfs@.service "$root/usr/lib/systemd/user/ubiqfs@.service"
Packaging/install-desktop.sh "$root"
install -m 0644 Packaging/grafana/ubiqfs-dashboard.json "$root/usr/share/ubiqfs/grafana/ubiqfs-dashboard.json"
install -m 0644 Packaging/prometheus/ubiqfs-alerts.yml "$root/usr/share/ubiqfs/prometheus/ubiqfs-alerts.yml"
for doc in README.md docs/INSTALL.md docs/SEMANTICS.md docs/XATTRS.md docs/S3.md docs/WATCH.md docs/DESKTOP.md docs/CONTAINER-FORMAT.md docs/ARCHITECTURE.md; do
    install -m 0644 "$doc" "$root/usr/share/doc/ubiqfs/$(basename "$doc")"
done
cat > "$root/usr/share/doc/ubiqfs/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ubiqfs

Files: *
Copyright: 2026 the ubiqfs developers
License: none-yet
 The ubiqfs project has not chosen a license yet; no license is granted.
 The Swift runtime and Foundation linked into /usr/bin/ubiqfs are Apache-2.0 with the
 Runtime Library Exception (swift.org); GRDB.swift, swift-argument-parser, swift-log,
 swift-crypto (BoringSSL), swift-nio and async-http-client are MIT, Apache-2.0 or
 OpenSSL/ISC licensed, as stated by each project.
COPYRIGHT
printf 'ubiqfs (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- ubiqfs developers <ubiqfs@localhost>  %s\n' \
    "$version" "$(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree')" "$(date -R)" \
    | gzip -9n > "$root/usr/share/doc/ubiqfs/changelog.gz"

# The libraries the binary needs, with the versions dpkg knows for their symbols.
mkdir -p "$stage/debian"
printf 'Source: ubiqfs\n\nPackage: ubiqfs\nArchitecture: any\n' > "$stage/debian/control"
shlibs="$(cd "$stage" && dpkg-shlibdeps -O -e"$root/usr/bin/ubiqfs" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
test -n "$shlibs"
size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat > "$root/DEBIAN/control" <<CONTROL
Package: ubiqfs
Version: $version
Architecture: $arch
Maintainer: ubiqfs developers <ubiqfs@localhost>
Installed-Size: $size
Depends: fuse3, $shlibs
Recommends: python3-nautilus, python3-gi, gir1.2-gtk-4.0, libnotify-bin, libgdk-pixbuf2.0-bin, bubblewrap, shared-mime-info
Section: utils
Priority: optional
Description: cloud container mounted as an ordinary folder (FUSE)
 ubiqfs mounts a container shared by several machines, kept in a local folder
 or an S3-compatible bucket, as an ordinary folder. Items not on this machine
 are placeholders that download when opened; extended attributes pin or evict
 them; local changes upload in the background and other machines' changes
 appear live; conflicts keep both versions.
CONTROL
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$name.deb" >/dev/null
echo "$out/$name.deb"
