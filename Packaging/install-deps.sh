#!/usr/bin/env bash
# Installs the system packages ubiqfs needs to build, mount and test (Debian/Ubuntu), and
# any further packages named as arguments (Packaging/build-deb.sh and the packaging tests
# name theirs). The Swift 6 toolchain itself comes from swift.org and must be on PATH.
# --no-recommends first: install those further packages without their recommendations.
set -euo pipefail

recommends=()
if [ "${1:-}" = "--no-recommends" ]; then
    recommends=(--no-install-recommends)
    shift
fi
# libgdk-pixbuf2.0-bin, bubblewrap, shared-mime-info: pictures of photos for the other
# devices (the desktop's own thumbnailer, sandboxed as GNOME runs it; types by name).
packages=(fuse3 libfuse3-dev pkg-config libsqlite3-dev attr sqlite3 git python3 util-linux fiu-utils openssl file strace
    libgdk-pixbuf2.0-bin bubblewrap shared-mime-info "$@")
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${recommends[@]}" "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null; then
    echo "error: the Swift 6 toolchain is not on PATH (https://www.swift.org/install/linux/)" >&2
    exit 1
fi
if [ ! -c /dev/fuse ] || ! [ -r /dev/fuse ] || ! [ -w /dev/fuse ]; then
    echo "error: /dev/fuse is missing or not usable by $(id -un); FUSE cannot work here" >&2
    exit 1
fi
