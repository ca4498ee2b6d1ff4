#!/usr/bin/env bash
# Runs xfstests against ubiqfs, by hand (not in CI: xfstests is not packaged and a quick
# run takes most of an hour). Build nothing of it into this repository: check it out
# elsewhere (git clone https://github.com/kdave/xfstests), this script builds it there.
# As root (xfstests mounts, switches users and drops caches).
#
#   Packaging/xfstests.sh XFSTESTS_DIR [CHECK ARGUMENTS...]     (default: -g quick)
#
# Installs xfstests' build and run dependencies (apt-get), builds it, writes its
# local.config (FSTYP=fuse, FUSE_SUBTYP=.ubiqfs, TEST_DEV and SCRATCH_DEV as names), and
# installs /sbin/mount.fuse.ubiqfs for the run only: it maps a device name to a store and
# a state dir on a 3 GiB tmpfs of the device's own and mounts them the mount.fuse way. Everything is
# unmounted and the helper removed at the end, also on failure or Ctrl-C. Prints
# xfstests' summary; docs/SEMANTICS.md ("POSIX conformance (xfstests)") lists the
# failures expected and why.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
xfstests="$(cd "${1:?usage: $0 XFSTESTS_DIR [CHECK ARGUMENTS...]}" && pwd)"
shift
[ "$#" -gt 0 ] || set -- -g quick
[ "$(id -u)" = 0 ] || { echo "xfstests.sh: run as root" >&2; exit 1; }
bin="${UBIQFS_BIN:-$repo/.build/release/ubiqfs}"
[ -x "$bin" ] || { echo "xfstests.sh: no $bin (swift build -c release --product ubiqfs, or set UBIQFS_BIN)" >&2; exit 1; }
helper=/sbin/mount.fuse.ubiqfs
[ -e "$helper" ] && { echo "xfstests.sh: $helper exists already; remove it first" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq acl attr automake bc dbench e2fsprogs fio gawk gcc libacl1-dev libaio-dev \
    libcap-dev libgdbm-dev libgdbm-compat-dev libtool libtool-bin liburing-dev libuuid1 make psmisc \
    python3 quota sed uuid-dev uuid-runtime xfsprogs xfslibs-dev sqlite3 >/dev/null || exit 1
if [ ! -x "$xfstests/ltp/fsstress" ]; then
    make -C "$xfstests" -j"$(nproc)" >"$xfstests/ubiqfs-build.log" 2>&1 \
        || { echo "xfstests.sh: the build failed, see $xfstests/ubiqfs-build.log" >&2; exit 1; }
fi
# xfstests runs tests as these users, with homes (su warns without one, and the warning
# makes a test's output differ).
for user in fsgqa fsgqa2 123456-fsgqa; do id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null; done
for user in fsgqa fsgqa2 123456-fsgqa; do home="$(getent passwd "$user" | cut -d: -f6)"; [ -z "$home" ] || mkdir -p "$home"; done
getent group fsgqa >/dev/null || groupadd fsgqa

root="$(mktemp -d /tmp/ubiqfs-xfstests-XXXX)"
chmod 755 "$root"
mkdir -p "$root/test" "$root/scratch" "$root/disk-test" "$root/disk-scratch"
cleanup() {
    for mnt in "$root/test" "$root/scratch"; do
        "$bin" unmount "$mnt" >/dev/null 2>&1 || umount -l "$mnt" 2>/dev/null
    done
    for disk in test scratch; do
        cp "$root/disk-$disk/state-$disk/ubiqfs.log" "$root/ubiqfs-$disk.log" 2>/dev/null
        umount -l "$root/disk-$disk" 2>/dev/null
    done
    rm -f "$helper"
    echo "xfstests.sh: results and daemon logs kept in $root"
}
trap cleanup EXIT
# Each device's state dir and store on a filesystem of its own, as TEST_DEV and
# SCRATCH_DEV are partitions of their own: tests that fill the disk (generic/103
# fallocates all free space and leaves it for the next mkfs) fill that one only.
for disk in test scratch; do
    mount -t tmpfs -o size=3g,mode=0755 "ubiqfs-xfstests-$disk" "$root/disk-$disk" || exit 1
done

# mount.fuse.ubiqfs ubiqfs:NAME MOUNTPOINT -o OPTIONS: NAME picks a store, a state dir
# and the container, so the mount's source in /proc/mounts is the device name xfstests
# looks for (ubiqfs:CONTAINER), and its type plain fuse (subtype=); options ubiqfs has no
# use for are dropped.
cat >"$helper" <<EOF
#!/bin/sh
device="\$1"; mountpoint="\$2"; shift 2
options=""
while [ "\$#" -gt 0 ]; do
    case "\$1" in
        -o) options="\$2"; shift 2 ;;
        -o*) options="\${1#-o}"; shift ;;
        *) shift ;;
    esac
done
name="\${device#ubiqfs:}"
kept="state-dir=$root/disk-\$name/state-\$name,container=\$name,device=\$name,subtype="
for option in \$(echo "\$options" | tr , ' '); do
    case "\$option" in
        source=*|context=*|fscontext=*|rootcontext=*|defcontext=*) ;;
        *) kept="\$kept,\$option" ;;
    esac
done
exec "$bin" "$root/disk-\$name/store-\$name" "\$mountpoint" -o "\$kept"
EOF
chmod 755 "$helper"

cat >"$xfstests/local.config" <<EOF
export FSTYP=fuse
export FUSE_SUBTYP=.ubiqfs
export TEST_DEV=ubiqfs:test
export TEST_DIR=$root/test
export SCRATCH_DEV=ubiqfs:scratch
export SCRATCH_MNT=$root/scratch
export MOUNT_OPTIONS="-oallow_other"
export TEST_FS_MOUNT_OPTS="-oallow_other"
export RESULT_BASE=$root/results
EOF

cd "$xfstests"
./check "$@" 2>&1 | tee "$root/check.log"
grep -E "^(Ran|Not run|Failures|Passed all)" "$root/check.log"
