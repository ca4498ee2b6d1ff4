import Foundation
import Testing

/// Several mounts of one container on this machine, each its own daemon and device,
/// driven by real programs: what one does, the others see live; nothing is lost.
@Suite(.serialized) struct MultiDeviceMountTests {
    /// Bash helpers: `waitfor CONDITION` retries for up to 15 s.
    static let helpers = """
        waitfor() { for _ in $(seq 1 150); do if eval "$1"; then return 0; fi; sleep 0.1; done; echo "timed out waiting for: $1" >&2; return 1; }
        """

    @Test func threeMountsSeeEachOthersChangesLive() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let c = try await fixture.mount("c")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            \(bin) watch \(c) > watch.log 2>&1 &
            watcher=$!
            trap 'kill $watcher 2>/dev/null || true' EXIT
            sleep 0.3
            mkdir \(a)/project && echo "draft" > \(a)/project/plan.txt
            head -c 3000000 /dev/urandom > big.bin && cp big.bin \(a)/project/big.bin
            setfattr -n user.status -v review \(a)/project/plan.txt
            waitfor '[ "$(cat \(b)/project/plan.txt 2>/dev/null)" = draft ]'
            waitfor '[ "$(getfattr --only-values -n user.status \(c)/project/plan.txt 2>/dev/null)" = review ]'
            # Edited on b, seen on a and c.
            echo "final" > \(b)/project/plan.txt
            waitfor '[ "$(cat \(a)/project/plan.txt)" = final ]'
            waitfor '[ "$(cat \(c)/project/plan.txt)" = final ]'
            # c never read big.bin: a move by a keeps it a placeholder on c (nothing downloaded).
            test "$(getfattr --only-values -n user.ubiqfs.state \(c)/project/big.bin)" = placeholder
            mkdir \(a)/archive && mv \(a)/project/big.bin \(a)/archive/big.bin
            waitfor '[ -e \(c)/archive/big.bin ] && [ ! -e \(c)/project/big.bin ]'
            test "$(getfattr --only-values -n user.ubiqfs.state \(c)/archive/big.bin)" = placeholder
            test "$(stat -c %b \(c)/archive/big.bin)" = 0
            cmp big.bin \(c)/archive/big.bin
            # The read made it local; that is recorded (and watched) just after the last block.
            waitfor '[ "$(getfattr --only-values -n user.ubiqfs.state \(c)/archive/big.bin 2>/dev/null)" = local ]'
            # Deleted on c, gone on a and b.
            rm -r \(c)/archive
            waitfor '[ ! -e \(a)/archive ] && [ ! -e \(b)/archive ]'
            diff -r \(a) \(b)
            diff -r \(a) \(c)
            kill $watcher
            grep -q '"event":"created".*"origin":"remote","path":"/project/plan.txt"' watch.log
            grep -q '"event":"modified".*"origin":"remote","path":"/project/plan.txt"' watch.log
            grep -q '"event":"moved","from":"/project/big.bin","origin":"remote","path":"/archive/big.bin"' watch.log
            grep -q '"event":"downloaded".*"path":"/archive/big.bin"' watch.log
            grep -q '"event":"deleted","origin":"local","path":"/archive"' watch.log
            """)
    }

    /// A file a program keeps open for writing (a database, a logger) holds back only its
    /// own change: another device's edit of it waits, while the two mounts go on exchanging
    /// other files both ways; once the program closes it, both versions are there.
    @Test func aFileHeldOpenForWritingHoldsBackOnlyItsOwnChange() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            echo "first" > \(a)/app.db
            \(bin) sync \(a) --wait
            waitfor '[ "$(cat \(b)/app.db 2>/dev/null)" = first ]'
            exec 3<>\(b)/app.db
            echo "edited on a" > \(a)/app.db
            \(bin) sync \(a) --wait
            \(bin) sync \(b) --wait
            \(bin) status \(b) | grep -q 'held: */app.db: '
            test "$(cat \(b)/app.db)" = first
            # Held for two minutes while both ways go on, each round through the store.
            start=$(date +%s)
            round=0
            while [ $(( $(date +%s) - start )) -lt 120 ]; do
                round=$((round + 1))
                echo "a $round" > \(a)/a-$round.txt
                echo "b $round" > \(b)/b-$round.txt
                waitfor '[ "$(cat \(b)/a-$round.txt 2>/dev/null)" = "a $round" ]'
                waitfor '[ "$(cat \(a)/b-$round.txt 2>/dev/null)" = "b $round" ]'
                sleep 1
            done
            test "$(cat \(b)/app.db)" = first
            # The program writes and closes: its version is kept beside the other one.
            echo "written on b" >&3
            exec 3>&-
            waitfor '[ -z "$(\(bin) status \(b) | grep held)" ]'
            \(bin) sync \(b) --wait
            \(bin) sync \(a) --wait
            for mount in \(a) \(b); do
                test "$(cat $mount/app.db)" = "edited on a"
                copies=$(ls $mount | grep -c '^app (conflict from b ')
                test "$copies" = 1
                test "$(cat "$(find $mount -maxdepth 1 -name 'app (conflict from b *')")" = "written on b"
            done
            diff -r \(a) \(b)
            """)
    }

    /// Listings stay in the kernel's cache across opens; a remote create, delete or rename
    /// must drop a cached listing, even for a name the kernel never looked up.
    @Test func cachedListingsFollowRemoteChanges() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            \(Self.helpers)
            mkdir \(a)/docs && echo one > \(a)/docs/one.txt && echo two > \(a)/docs/two.txt
            waitfor '[ "$(ls \(b)/docs 2>/dev/null | tr "\\n" " ")" = "one.txt two.txt " ]'
            ls -l \(b)/docs > /dev/null
            echo three > \(a)/docs/three.txt
            waitfor '[ "$(ls \(b)/docs | tr "\\n" " ")" = "one.txt three.txt two.txt " ]'
            rm \(a)/docs/one.txt
            waitfor '[ "$(ls \(b)/docs | tr "\\n" " ")" = "three.txt two.txt " ]'
            mv \(a)/docs/two.txt \(a)/docs/zwei.txt
            waitfor '[ "$(ls \(b)/docs | tr "\\n" " ")" = "three.txt zwei.txt " ]'
            mkdir \(a)/docs/sub && mv \(a)/docs/three.txt \(a)/docs/sub/
            waitfor '[ "$(ls \(b)/docs | tr "\\n" " ")" = "sub zwei.txt " ]'
            test "$(ls \(b)/docs/sub)" = three.txt
            # And local changes on b show at once, as always.
            touch \(b)/docs/local.txt
            test "$(ls \(b)/docs | tr "\\n" " ")" = "local.txt sub zwei.txt "
            """)
    }

    /// A folder's time, moved by a create, rename or delete in it, is the same on every
    /// mount (what `make`, `rsync -a` and `find -newer` compare); so are the root's own
    /// time and mode, and nothing is left pending.
    @Test func folderTimesAreTheSameOnEveryMount() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            mkdir \(a)/docs && echo one > \(a)/docs/one.txt
            for change in "echo two > \(a)/docs/two.txt" "mv \(a)/docs/two.txt \(a)/docs/three.txt" "rm \(a)/docs/three.txt"; do
                before=$(stat -c %y \(a)/docs)
                sleep 0.01
                eval "$change"
                test "$(stat -c %y \(a)/docs)" != "$before"
                \(bin) sync --wait \(a)
                waitfor '[ "$(stat -c %y \(b)/docs)" = "$(stat -c %y \(a)/docs)" ]'
            done
            # An empty file that is a placeholder there keeps its time when read.
            : > \(a)/docs/empty && touch -d 2021-05-05 \(a)/docs/empty && \(bin) sync --wait \(a)
            # (A push between the create and the touch sends the time in a second record.)
            waitfor '[ "$(stat -c %y \(b)/docs/empty 2>/dev/null)" = "$(stat -c %y \(a)/docs/empty)" ]'
            cat \(b)/docs/empty
            test "$(stat -c %y \(b)/docs/empty)" = "$(stat -c %y \(a)/docs/empty)"
            # The root's own mode and times travel too, and nothing stays pending.
            touch -d 2020-01-01 \(a) && chmod 700 \(a)
            \(bin) sync --wait \(a)
            \(bin) status \(a) | grep -q 'pending uploads: 0'
            test "$(stat -c %a:%Y \(a))" = "700:$(date -d 2020-01-01 +%s)"
            waitfor '[ "$(stat -c %a:%Y \(b))" = "$(stat -c %a:%Y \(a))" ]'
            \(bin) status \(b) | grep -q 'pending uploads: 0'
            \(bin) unmount \(a) > out 2>&1
            ! grep -q "could not be pushed" out
            """)
    }

    @Test func offlineEditsOnBothSidesConvergeWithBothVersionsKept() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a", device: "laptop")
        let b = try await fixture.mount("b", device: "desktop")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            echo "base" > \(a)/report.txt
            \(bin) sync --wait \(a)
            waitfor '[ "$(cat \(b)/report.txt 2>/dev/null)" = base ]'
            \(bin) pause \(a) && \(bin) pause \(b)
            echo "laptop's edit" > \(a)/report.txt && echo "only on laptop" > \(a)/laptop.txt
            echo "desktop's edit" > \(b)/report.txt && mkdir \(b)/desk && echo "only on desktop" > \(b)/desk/notes.txt
            # The edit, the new file, and the root's time the create moved.
            \(bin) status \(a) | grep -q 'pending uploads: 3'
            \(bin) resume \(b) && \(bin) sync --wait \(b)
            \(bin) resume \(a) && \(bin) sync --wait \(a)
            \(bin) sync --wait \(b)
            waitfor 'diff -r \(a) \(b) >/dev/null'
            # The committed version (desktop's, first) keeps the name; laptop's is the copy beside it.
            test "$(cat \(a)/report.txt)" = "desktop's edit"
            copy=$(getfattr --only-values -n user.ubiqfs.conflicts \(b)/report.txt)
            case "$copy" in "report (conflict from laptop "*").txt") ;; *) echo "unexpected copy name: $copy"; exit 1 ;; esac
            test "$(cat "\(b)/$copy")" = "laptop's edit"
            test "$(cat \(b)/laptop.txt)" = "only on laptop"
            test "$(cat \(a)/desk/notes.txt)" = "only on desktop"
            \(bin) status \(a) | grep -q 'conflict: .*report.txt'
            \(bin) status \(b) | grep -q 'pending uploads: 0'
            """)
    }

    @Test func aReaderNeverSeesAMixOfTwoVersions() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let bin = MountFixture.binary
        // Several blocks per version (the leading two, then chunks of up to 4 MiB): a torn
        // read would mix letters within one read pass.
        try await fixture.sh("""
            \(Self.helpers)
            python3 -c "open('\(a)/doc.bin','wb').write(b'a' * (8 << 20))"
            \(bin) sync --wait \(a)
            waitfor '[ -e \(b)/doc.bin ]'
            cat > reader.py <<'PY'
            import sys, time
            path, seconds = sys.argv[1], float(sys.argv[2])
            end, passes, versions = time.time() + seconds, 0, set()
            while time.time() < end:
                with open(path, 'rb') as f:
                    seen = set()
                    while True:
                        chunk = f.read(1 << 20)
                        if not chunk:
                            break
                        seen |= set(chunk)
                        time.sleep(0.01)
                    if len(seen) != 1:
                        sys.exit(f"one open read a mix of versions: {sorted(seen)}")
                    versions |= seen
                    passes += 1
            print(passes, len(versions))
            PY
            python3 reader.py \(b)/doc.bin 8 > reader.out &
            reader=$!
            for letter in b c d e f g; do
                python3 -c "open('\(a)/doc.bin','wb').write(b'$letter' * (8 << 20))"
                \(bin) sync --wait \(a)
                sleep 0.6
            done
            wait $reader
            read passes versions < reader.out
            test "$passes" -gt 3
            # The reader saw the file change while it read (several versions, none mixed).
            test "$versions" -gt 1
            waitfor '[ "$(head -c 1 \(b)/doc.bin)" = g ]'
            """, timeout: 120)
    }

    /// tar fails with "file changed as we read it" when a file's ctime moves while it reads:
    /// downloads and uploads finishing underneath must not touch it.
    @Test func tarReadsPlaceholdersWhileTheyDownload() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            tar -C /usr/include -cf - linux | tar -C \(a) -xf -
            \(MountFixture.binary) sync --wait \(a)
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/linux/types.h)" = placeholder
            tar -C \(b) -cf b.tar linux
            mkdir out && tar -C out -xf b.tar && diff -r /usr/include/linux out/linux
            """)
    }

    @Test func versionsAndRestoreFromTheCommandLine() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            echo "first" > \(a)/essay.txt && \(bin) sync --wait \(a)
            # A safe save, as editors do: the history continues.
            echo "second" > \(a)/.essay.txt.swp && mv \(a)/.essay.txt.swp \(a)/essay.txt && \(bin) sync --wait \(a)
            \(bin) versions \(a)/essay.txt > versions.txt
            test "$(grep -c '^[0-9]' versions.txt)" = 2
            grep -q '(current)' versions.txt
            first=$(tail -n 1 versions.txt | cut -d' ' -f1)
            \(bin) restore \(b)/essay.txt --version "$first"
            test "$(cat \(b)/essay.txt)" = first
            \(bin) sync --wait \(b)
            waitfor '[ "$(cat \(a)/essay.txt)" = first ]'
            test "$(\(bin) versions \(a)/essay.txt | grep -c '^[0-9]')" = 3
            fails \(bin) restore \(a)/essay.txt --version 999999 2>err.txt
            grep -q 'no version 999999' err.txt
            fails \(bin) restore \(a)/essay.txt --version 1.2.3 2>err.txt
            grep -q 'takes N or N.K' err.txt
            # A merge another device committed (format 4, a record written by hand): the edit
            # it took in is version N.1, listed after it and restorable.
            id=$(getfattr --only-values -n user.ubiqfs.id \(a)/essay.txt)
            read with base <<< "$(\(bin) versions \(a)/essay.txt | grep '^[0-9]' | head -n 2 | cut -d' ' -f1 | tr '\\n' ' ')"
            python3 - "\(fixture.store)/default/journal" "$id" "$base" "$with" <<'EOF'
            import base64, hashlib, json, os, sys, time
            journal, item, base, with_ = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
            last = max(os.listdir(journal))
            previous = open(os.path.join(journal, last), "rb").read()
            def blocks(text):
                data = text.encode()
                return [{"h": hashlib.sha256(data).hexdigest(), "n": len(data), "d": base64.b64encode(data).decode()}]
            merged, mine = "first\\nmerged\\n", "first\\nfrom the laptop\\n"
            now = time.time_ns()
            record = {"format": 4, "device": "laptopid", "deviceName": "laptop", "commit": os.urandom(16).hex(), "time": now,
                      "ops": [{"op": "upsert", "item": {"id": item, "parent": "root", "name": "essay.txt", "kind": "file", "mode": 420,
                                                        "mtime": now, "size": len(merged), "blocks": blocks(merged)}}],
                      "merges": [{"id": item, "base": base, "with": with_, "kind": "text",
                                  "inputs": [{"device": "laptop", "time": now, "size": len(mine), "mtime": now, "blocks": blocks(mine)}]}],
                      "prev": hashlib.sha256(previous).hexdigest()}
            # Whole or not at all, as a store's put-if-absent: a reader never sees half of it.
            with open("record.tmp", "w") as out:
                json.dump(record, out)
            os.link("record.tmp", os.path.join(journal, "%020d" % (int(last) + 1)))
            EOF
            \(bin) sync --wait \(a)
            waitfor '[ "$(cat \(a)/essay.txt)" = "$(printf "first\\nmerged")" ]'
            \(bin) versions \(a)/essay.txt > merged.txt
            grep -q "(current; merged: text of $with and the edits below)" merged.txt
            grep -E "^[0-9]+\\.1 .*laptop  \\(an edit merged into [0-9]+\\)" merged.txt
            input=$(grep -oE '^[0-9]+\\.1' merged.txt)
            \(bin) restore \(a)/essay.txt --version "$input"
            test "$(cat \(a)/essay.txt)" = "$(printf "first\\nfrom the laptop")"
            \(bin) sync --wait \(a)
            \(bin) versions \(a)/essay.txt --json | python3 -c 'import json, sys; v = json.load(sys.stdin); assert [e.get("input") for e in v][:3] == [None, None, 1], v'
            # A name that is not UTF-8 (Latin-1 "café"), given relative to the folder.
            latin1=$(printf 'caf\\351.txt')
            echo one > "\(a)/$latin1" && \(bin) sync --wait \(a)
            echo two > "\(a)/$latin1" && \(bin) sync --wait \(a)
            test "$(cd \(a) && \(bin) versions "./$latin1" | grep -c '^[0-9]')" = 2
            """)
    }

    @Test func trashAndRetentionFromTheCommandLine() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        // The deprecated per-device option still mounts (and is ignored).
        let b = try await fixture.mount("b", extra: ["--keep-versions", "5"])
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            mkdir -p \(a)/proj/src && echo 'int main(void) { return 0; }' > \(a)/proj/src/main.c && echo notes > \(a)/proj/notes.txt
            \(bin) sync --wait \(a)
            rm -rf \(a)/proj
            \(bin) sync --wait \(a)
            waitfor '\(bin) trash \(b) | grep -q "/proj (folder, 3 items inside)"'
            \(bin) trash \(b) --json > trash.json
            python3 -c 'import json; [e] = json.load(open("trash.json")); assert e["path"] == "/proj" and e["device"] == "a" and e["items"] == 4, e'
            # One file from inside the deleted folder, on the other device.
            \(bin) trash restore \(b)/proj/src/main.c | grep -q "restored \(b)/proj/src/main.c"
            grep -q 'int main' \(b)/proj/src/main.c
            test ! -e \(b)/proj/notes.txt
            \(bin) sync --wait \(b)
            waitfor 'grep -q "int main" \(a)/proj/src/main.c'
            \(bin) trash restore \(a)/proj && test "$(cat \(a)/proj/notes.txt)" = notes
            fails \(bin) trash restore \(a)/never/there 2>err.txt
            grep -q 'not in the trash' err.txt
            # Retention is the container's: set on a, b follows.
            \(bin) retention \(b) > before.txt && grep -q 'versions: 30 days' before.txt && grep -q 'trash: 30 days' before.txt
            \(bin) retention \(a) --versions 7 --trash 14 | grep -q 'trash: 14 days'
            waitfor '\(bin) retention \(b) | grep -q "versions: 7 days"'
            fails \(bin) retention \(a) --versions=-1 2>err.txt
            grep -q '0 to 36525 days' err.txt
            # So is what merges.
            \(bin) merge \(b) > kinds.txt
            test "$(cat kinds.txt)" = "$(printf 'text: on\\nsqlite: off\\njson: off')"
            \(bin) merge \(a) --json on --text off | grep -q 'json: on'
            waitfor '\(bin) merge \(b) | grep -q "text: off"'
            \(bin) merge \(b) | grep -q 'json: on'
            fails \(bin) merge \(a) --json maybe 2>err.txt
            """)
    }

    @Test func collectionFromTheCommandLineInAFormatTwoContainer() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        let container = fixture.store + "/default"
        try await fixture.sh("""
            for i in $(seq 1 8); do head -c 1048576 /dev/urandom > \(a)/big.bin && \(bin) sync --wait \(a); done
            head -c 1048576 /dev/urandom > \(a)/gone.bin && \(bin) sync --wait \(a) && rm \(a)/gone.bin && \(bin) sync --wait \(a)
            test "$(cat \(container)/packs/* | wc -c)" -ge 9437184
            # Within the retention nothing goes; with none, all but the live file.
            \(bin) gc \(a) --grace 100ms | grep -q 'deleted 0 objects'
            \(bin) retention \(a) --versions 0 --trash 0 > /dev/null
            \(bin) gc \(a) --grace 1s > gc.txt
            grep -q 'deleted 8 objects (8.0 MiB)' gc.txt
            test "$(cat \(container)/packs/* | wc -c)" = 1048576
            # The first run left a checkpoint at the head; the grace also shortened the
            # horizon, so this one compacted the journal up to it.
            grep -q 'compacted the journal through record' gc.txt
            grep -q '"compacted":' \(container)/journal/00000000000000000001
            test "$(ls \(container)/history | wc -l)" = 1
            \(bin) status \(a) | grep -q 'store use: *1.0 MiB live'
            cp \(a)/big.bin big.copy
            """)
        let b = try await fixture.mount("b")
        // A device of the previous release makes a format-1 container.
        let plain = try await fixture.mount("plain", store: fixture.root + "/plain-store", environment: ["UBIQFS_FORMAT": "1"])
        try await fixture.sh("""
            \(Self.helpers)
            cmp big.copy \(b)/big.bin
            # b joined from the checkpoint with the history before it: it may collect too.
            \(bin) gc \(b) --grace 100ms | grep -q 'deleted 0 objects'
            fails \(bin) gc \(plain) 2>err.txt
            grep -q 'needs a format-2 container' err.txt
            # 40 small files in one push (one pack), 30 of them deleted: the pack is a
            # quarter named, so it is repacked, and b reads the rest from the new pack.
            \(bin) pause \(a)
            mkdir \(a)/small && for i in $(seq 1 40); do head -c 4096 /dev/urandom > \(a)/small/f$i; done
            \(bin) resume \(a) && \(bin) sync --wait \(a)
            # Beside big.bin's pack (1 MiB), the one pack of the small files.
            test "$(ls \(container)/packs | wc -l)" = 2
            pack=$(find \(container)/packs -type f -size -1000k -printf '%f')
            for i in $(seq 1 40); do [ $((i % 4)) = 0 ] || rm \(a)/small/f$i; done
            \(bin) sync --wait \(a)
            waitfor 'test "$(ls \(b)/small | wc -l)" = 10'
            \(bin) gc \(a) --grace 1s > gc.txt
            grep -q 'repacked 1 packs that were mostly garbage: 10 blobs moved, 40.0 KiB copied' gc.txt
            test ! -e \(container)/packs/$pack
            test "$(cat \(container)/packs/* | wc -c)" = $((1048576 + 40960))
            \(bin) sync --wait \(b)
            for i in 4 8 12 16 20 24 28 32 36 40; do cmp \(a)/small/f$i \(b)/small/f$i; done
            """)
    }

    /// A container made by the previous release (format 1) is upgraded in place by a mount of this one,
    /// and a device away (with work not pushed) while the journal is compacted past it
    /// rejoins at its next mount with nothing lost either way.
    @Test func aFormatOneContainerIsUpgradedAndADeviceAwayPastACompactionRejoins() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let container = fixture.store + "/default"
        let formatOne = ["UBIQFS_FORMAT": "1"]
        let a = try await fixture.mount("a", environment: formatOne)
        let b = try await fixture.mount("b", environment: formatOne)
        try await fixture.sh("""
            \(Self.helpers)
            echo one > \(a)/kept.txt && mkdir \(a)/docs && echo draft > \(a)/docs/plan.txt
            \(bin) sync --wait \(a)
            waitfor '[ -e \(b)/docs/plan.txt ]'
            grep -q '"format":1' \(container)/container.json
            # b goes away with a change it has not pushed.
            \(bin) pause \(b)
            echo "offline work" > \(b)/offline.txt
            """)
        try await fixture.unmount(b)
        try await fixture.unmount(a)
        let upgraded = try await fixture.mount("a")
        try await fixture.sh("""
            grep -q '"format":5' \(container)/container.json
            test "$(cat \(upgraded)/kept.txt)" = one
            echo two > \(upgraded)/kept.txt && mv \(upgraded)/docs \(upgraded)/papers
            \(bin) sync --wait \(upgraded)
            # The first run leaves a checkpoint at the head; the next compacts up to it.
            \(bin) gc \(upgraded) --grace 1s > /dev/null
            sleep 1.5
            \(bin) gc \(upgraded) --grace 1s > gc.txt
            grep -q 'compacted the journal through record' gc.txt
            grep -q '"compacted":' \(container)/journal/00000000000000000001
            """)
        let back = try await fixture.mount("b")
        try await fixture.sh("""
            \(Self.helpers)
            waitfor '[ "$(cat \(back)/kept.txt 2>/dev/null)" = two ]'
            test "$(cat \(back)/papers/plan.txt)" = draft && test ! -e \(back)/docs
            waitfor '[ "$(cat \(upgraded)/offline.txt 2>/dev/null)" = "offline work" ]'
            diff -r \(upgraded) \(back)
            """)
    }

    @Test func anUnreachableStoreIsNeverMistakenForDeletions() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            # Past the inline limit (1 KiB): its content is in the store, not in its record.
            head -c 3000 /dev/urandom > remote.copy && cp remote.copy \(a)/remote.txt && \(bin) sync --wait \(a)
            waitfor '[ -e \(b)/remote.txt ]'
            # The store's disk goes away.
            mv \(fixture.store) \(fixture.store).away
            fails \(bin) sync --wait \(b) 2>/dev/null
            \(bin) status \(b) | grep -q offline
            fails cat \(b)/remote.txt 2>err.txt
            grep -q 'Network is unreachable' err.txt
            # Local work goes on, nothing disappears.
            echo "written offline" > \(b)/offline.txt
            test "$(cat \(b)/offline.txt)" = "written offline"
            test -e \(b)/remote.txt
            test ! -e \(fixture.store)
            mv \(fixture.store).away \(fixture.store)
            \(bin) sync --wait \(b)
            cmp remote.copy \(b)/remote.txt
            waitfor '[ "$(cat \(a)/offline.txt 2>/dev/null)" = "written offline" ]'
            """)
    }
}
