#!/usr/bin/env bash
# The Debian package, tested as a user gets it: build it with Packaging/build-deb.sh,
# inspect its control fields and contents, extract it and run the extracted binary (no
# Swift libraries needed, man page, completions), check the systemd user unit with
# systemd-analyze verify, mount through `mount -t fuse.ubiqfs` with the packaged binary
# and unmount with umount, and install it with apt into a fresh Debian (debootstrap
# minbase chroot) where `ubiqfs --version` and `ubiqfs doctor` must work.
# Run by Packaging/test.sh; leaves nothing mounted or running.
set -euo pipefail
cd "$(dirname "$0")/../.."

Packaging/install-deps.sh systemd man-db debootstrap

work="$(mktemp -d /tmp/ubiqfs-deb-XXXXXX)"
chroot_dir="$work/chroot"
cleanup() {
    pkill -9 -f -- "--state-dir[= ]$work" 2>/dev/null || true
    # Whatever still runs inside the chroot (a daemon of a failed step there).
    for proc in /proc/[0-9]*; do
        [ "$(readlink "$proc/root" 2>/dev/null)" = "$chroot_dir" ] && kill -9 "${proc#/proc/}" 2>/dev/null
    done
    for m in $(awk -v w="$work" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    # Never recurse into a mount that stayed (the chroot's /dev is the host's).
    if awk -v w="$work" 'index($2, w) == 1 {found=1} END {exit !found}' /proc/mounts; then
        echo "packaging: left $work in place: something is still mounted under it" >&2
    else
        rm -rf --one-file-system "$work"
    fi
}
trap cleanup EXIT
fail() { echo "packaging: FAILED: $*" >&2; exit 1; }
step() { echo "packaging: $*"; }

step "building the package"
deb="$(Packaging/build-deb.sh "$work/out" | tail -1)"
[ -f "$deb" ] || fail "build-deb.sh made no package"
case "$(basename "$deb")" in ubiqfs_*_"$(dpkg --print-architecture)".deb) ;; *) fail "unexpected name $deb" ;; esac

step "control fields"
dpkg-deb -f "$deb" Package | grep -qx ubiqfs || fail "Package"
depends="$(dpkg-deb -f "$deb" Depends)"
for dep in fuse3 libfuse3-3 libsqlite3-0 libc6; do
    grep -qE "(^|, )$dep( |,|$)" <<<"$depends" || fail "Depends lacks $dep: $depends"
done
grep -qi swift <<<"$depends" && fail "Depends names a Swift package: $depends"
dpkg-deb -f "$deb" Recommends | grep -q python3-nautilus || fail "Recommends lacks python3-nautilus"

step "contents"
dpkg-deb -c "$deb" | awk '{print $6}' > "$work/contents"
for path in ./usr/bin/ubiqfs ./usr/share/man/man1/ubiqfs.1.gz ./usr/share/bash-completion/completions/ubiqfs \
    ./usr/share/zsh/vendor-completions/_ubiqfs ./usr/share/fish/vendor_completions.d/ubiqfs.fish \
    ./usr/lib/systemd/user/ubiqfs@.service ./usr/share/doc/ubiqfs/copyright ./usr/share/doc/ubiqfs/INSTALL.md \
    ./usr/share/doc/ubiqfs/README.md ./usr/share/doc/ubiqfs/SEMANTICS.md ./usr/share/doc/ubiqfs/DESKTOP.md \
    ./usr/share/nautilus-python/extensions/ubiqfs-nautilus.py ./usr/share/ubiqfs/desktop/ubiqfs_desktop/states.py \
    ./usr/share/ubiqfs/desktop/ubiqfs-dialog ./usr/share/icons/hicolor/scalable/emblems/emblem-ubiqfs-cloud.svg \
    ./usr/share/kio/servicemenus/ubiqfs.desktop ./usr/share/ubiqfs/grafana/ubiqfs-dashboard.json \
    ./usr/share/ubiqfs/prometheus/ubiqfs-alerts.yml; do
    grep -qx "$path" "$work/contents" || fail "missing $path"
done
dpkg-deb -c "$deb" | awk '$2 != "root/root" {bad=1} END {exit bad}' || fail "files not owned by root"

step "the extracted binary"
dpkg-deb -x "$deb" "$work/x"
bin="$work/x/usr/bin/ubiqfs"
[ "$("$bin" --version)" = "$(dpkg-deb -f "$deb" Version)" ] || fail "--version differs from the package version"
# Into a file: `grep -q` quits at the first match, and the help (over 4 KiB) would then
# die of SIGPIPE, which pipefail counts as a failure.
"$bin" help mount > "$work/help" || fail "help mount"
grep -q "mounts.conf" "$work/help" || fail "help mount"
grep -q -- "--metrics" "$work/help" || fail "help mount: no --metrics"
# The dashboard Grafana imports is JSON, and its queries name metrics the daemon serves.
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/x/usr/share/ubiqfs/grafana/ubiqfs-dashboard.json" || fail "the dashboard is not JSON"
ldd "$bin" > "$work/ldd"
grep -q "not found" "$work/ldd" && fail "missing libraries: $(cat "$work/ldd")"
grep -qiE "libswift|libFoundation|libdispatch" "$work/ldd" && fail "links Swift's shared runtime: $(cat "$work/ldd")"
MANWIDTH=100 man -l "$work/x/usr/share/man/man1/ubiqfs.1.gz" > "$work/man.txt" 2>/dev/null
for heading in "MOUNT.FUSE AND FSTAB" "MOUNT PROFILES" SYSTEMD "   doctor" "   reset" "--state-dir"; do
    grep -q -- "$heading" "$work/man.txt" || fail "the man page lacks '$heading'"
done
bash -c "source '$work/x/usr/share/bash-completion/completions/ubiqfs' && complete -p ubiqfs" | grep -q ubiqfs \
    || fail "bash completion does not register"

step "systemd-analyze verify"
mkdir -p "$work/xdg" && chmod 700 "$work/xdg"
unit="$work/x/usr/lib/systemd/user/ubiqfs@.service"
grep -q '^ExecStart=/usr/bin/ubiqfs mount %i --profile --foreground$' "$unit" || fail "ExecStart"
# Verified as installed: the package's /usr laid over the system's, in a private namespace.
verify() {
    unshare -m --propagation private bash -c '
        mount -t overlay overlay -o "lowerdir=$1/usr:/usr" /usr
        cd /usr/lib/systemd/user
        systemd-analyze verify "$2" && XDG_RUNTIME_DIR="$3" systemd-analyze --user verify "$2"' _ "$1" "$2" "$work/xdg"
}
verify "$work/x" ubiqfs@work.service 2> "$work/verify.err" || fail "systemd-analyze verify: $(cat "$work/verify.err")"
# The check can fail: a unit that runs a missing program does not pass.
cp -a "$work/x" "$work/broken"
sed -i 's|^ExecStart=/usr/bin/ubiqfs|ExecStart=/usr/bin/ubiqfs-missing|' "$work/broken/usr/lib/systemd/user/ubiqfs@.service"
verify "$work/broken" ubiqfs@work.service 2>/dev/null && fail "systemd-analyze verify passed a broken unit"

step "mount -t fuse.ubiqfs and umount with the packaged binary"
mkdir -p "$work/mnt" "$work/store"
unshare -m --propagation private bash -euo pipefail -c '
    work=$1
    mount --bind "$work/x/usr/bin" /usr/local/sbin
    trap "umount -l $work/mnt 2>/dev/null || true" EXIT
    mount -t fuse.ubiqfs "$work/store" "$work/mnt" -o "state-dir=$work/state,device=deb,_netdev,nofail"
    echo packaged > "$work/mnt/file"
    daemon=$(pgrep -f "[-]-state-dir=$work/state ")
    umount "$work/mnt"
    for _ in $(seq 1 300); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$daemon" 2>/dev/null
' _ "$work" || fail "mount -t fuse.ubiqfs / umount"
ls "$work/store/default/journal" | grep -q . || fail "nothing was pushed before the daemon stopped"

step "installing into a fresh Debian (debootstrap minbase)"
mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)"
mirror="${mirror:-http://deb.debian.org/debian}"
debootstrap --variant=minbase bookworm "$chroot_dir" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || fail "debootstrap: $(tail -5 "$work/debootstrap.log")"
cp "$deb" "$chroot_dir/tmp/"
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$chroot_dir/proc"
mount --bind /dev "$chroot_dir/dev"
chroot "$chroot_dir" bash -euo pipefail -c "
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb") >/dev/null
    ubiqfs --version
    mkdir -p /tmp/m
    ubiqfs doctor /tmp/m --store /tmp/store --state-dir /tmp/state | tail -1
    ubiqfs mount /tmp/m --store /tmp/store --state-dir /tmp/state
    echo fresh > /tmp/m/f
    test \"\$(cat /tmp/m/f)\" = fresh
    ubiqfs unmount /tmp/m
" > "$work/chroot.log" 2>&1 || fail "in a fresh Debian: $(tail -20 "$work/chroot.log")"
grep -qx "$(dpkg-deb -f "$deb" Version)" "$work/chroot.log" || fail "ubiqfs --version in the chroot: $(cat "$work/chroot.log")"
grep -q "all checks passed" "$work/chroot.log" || fail "ubiqfs doctor in the chroot: $(cat "$work/chroot.log")"
step "ok"
