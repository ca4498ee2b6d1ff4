#!/usr/bin/env bash
# Conformance tests with programs from Debian and PyPI against real mounts: the
# hypothesis differential test (native folder vs mount), fio with crc32c verification,
# stress-ng's rename, dentry and xattr stressors, and the power-cut test (Tests/PowerCut).
# Prints `conformance: N passed, M failed`.
# UBIQFS_BIN: the binary (default .build/debug/ubiqfs).
set -uo pipefail
cd "$(dirname "$0")/../.."
export UBIQFS_BIN="${UBIQFS_BIN:-$(pwd)/.build/debug/ubiqfs}"

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
missing=()
for tool in fio stress-ng; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! python3 -c "import hypothesis" 2>/dev/null; then
    python3 -m pip install --quiet hypothesis 2>/dev/null || python3 -m pip install --quiet --break-system-packages hypothesis
fi

root="$(mktemp -d /tmp/ubiqfs-test-conformance-XXXX)"
mnt="$root/mnt"
cleanup() {
    "$UBIQFS_BIN" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -uz "$mnt" 2>/dev/null
    rm -rf "$root"
}
trap cleanup EXIT
passed=0
failed=0
check() {
    local name="$1"
    shift
    echo "--- $name"
    if "$@"; then
        passed=$((passed + 1))
        echo "--- $name: passed"
    else
        failed=$((failed + 1))
        echo "--- $name: FAILED"
    fi
}

check "differential test (native folder vs mount, remount, evicted)" python3 Tests/Conformance/differential_test.py

mkdir -p "$mnt"
"$UBIQFS_BIN" mount "$mnt" --store "$root/store" --state-dir "$root/state" --device conformance || exit 1
# Every byte written is read back and checked (crc32c) by fio itself; a mismatch fails the job.
fio_job() {
    (cd "$mnt" && fio --name="$1" --rw="$2" --bs="$3" --size="$4" --ioengine=psync --verify=crc32c \
        --do_verify=1 --verify_fatal=1 --fsync_on_close=1 --output-format=terse >/dev/null)
}
check "fio sequential write, verify" fio_job seq write 128k 64m
check "fio random write, verify" fio_job rand randwrite 4k 16m
check "fio random read/write mix, verify" fio_job mixed randrw 16k 16m
# The data survives an upload, an unmount, a mount and an eviction.
reread() {
    "$UBIQFS_BIN" sync "$mnt" --wait && sha256sum "$mnt"/seq.0.0 "$mnt"/rand.0.0 > "$root/sums" \
        && "$UBIQFS_BIN" unmount "$mnt" \
        && "$UBIQFS_BIN" mount "$mnt" --store "$root/store" --state-dir "$root/state" --device conformance \
        && "$UBIQFS_BIN" evict "$mnt" && sha256sum -c --quiet "$root/sums"
}
check "fio files intact after remount and eviction" reread
# stress-ng exits non-zero when a stressor fails; afterwards the mount must still work.
stress() {
    stress-ng --rename 2 --dentry 2 --xattr 2 --timeout 20s --temp-path "$mnt" --metrics-brief \
        && echo ok > "$mnt/after-stress" && test "$(cat "$mnt/after-stress")" = ok \
        && "$UBIQFS_BIN" status "$mnt" >/dev/null
}
check "stress-ng rename, dentry, xattr" stress

# Power cuts under the state dir (powercutfs), checked against every fsync promise; the
# control on a plain folder and the checker's self-test first. A fixed seed here (its rounds
# cut evictions, collections with repacking and compaction, and restores); unset it, or set
# another, to soak (Tests/PowerCut/power_cut_test.py says how).
check "power-cut test (control, self-test, seeded cuts through a real mount)" \
    env POWERCUTFS_BIN="${POWERCUTFS_BIN:-$(dirname "$UBIQFS_BIN")/powercutfs}" \
    UBIQFS_POWERCUT_SEED="${UBIQFS_POWERCUT_SEED:-2}" python3 Tests/PowerCut/power_cut_test.py --self-test

echo "conformance: $passed passed, $failed failed"
test "$failed" -eq 0
