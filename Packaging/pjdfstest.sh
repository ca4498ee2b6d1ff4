#!/usr/bin/env bash
# Runs pjdfstest against a fresh ubiqfs mount, by hand (not in CI: pjdfstest is not
# packaged; build it outside this repository from github.com/pjd/pjdfstest with
# `autoreconf -ifs && ./configure && make pjdfstest`). As root (pjdfstest switches users).
#
#   Packaging/pjdfstest.sh PJDFSTEST_DIR [--evicted]
#
# --evicted: the working folder is created, uploaded and evicted first, so the tests run
# on a folder that came back as a placeholder tree. Prints one line per failing test
# file and the totals; docs/SEMANTICS.md lists the expected failures.
set -uo pipefail
cd "$(dirname "$0")/.."
pjd="$(cd "${1:?usage: $0 PJDFSTEST_DIR [--evicted]}" && pwd)"
evicted="${2:-}"
bin="${UBIQFS_BIN:-$(pwd)/.build/debug/ubiqfs}"
root="$(mktemp -d /tmp/ubiqfs-test-pjdfstest-XXXX)"
mnt="$root/mnt"
logs="$root/logs"
mkdir -p "$mnt" "$logs"
chmod 755 "$root"
trap '"$bin" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -uz "$mnt"; echo "logs kept in $logs"' EXIT
"$bin" mount "$mnt" --store "$root/store" --state-dir "$root/state" --allow-other || exit 1
mkdir "$mnt/work"
if [ "$evicted" = "--evicted" ]; then
    "$bin" sync "$mnt" --wait && "$bin" unmount "$mnt" \
        && "$bin" mount "$mnt" --store "$root/store" --state-dir "$root/state" --allow-other \
        && "$bin" evict "$mnt" || exit 1
fi
cd "$mnt/work"
for test in $(find "$pjd/tests" -name '*.t' | sort); do
    name="${test#"$pjd"/tests/}"
    timeout 600 prove -v "$test" > "$logs/${name//\//_}.log" 2>&1
done
cd "$logs"
awk '
FNR == 1 { file = FILENAME }
/^ok [0-9]+/ && !/# *(SKIP|TODO)/ { ok++ }
/^not ok [0-9]+/ && !/# *TODO/ { failed++; failures[file]++ }
END {
    for (f in failures) printf "%-28s %d failed\n", f, failures[f] | "sort"
    close("sort")
    printf "pjdfstest: %d passed, %d failed (%.2f%%)\n", ok, failed, 100 * ok / (ok + failed)
}' ./*.log
