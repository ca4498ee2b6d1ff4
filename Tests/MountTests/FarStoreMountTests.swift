import Foundation
import Testing

/// Small files and far stores on a real mount: a folder read file by file is fetched
/// ahead, and small files travel in packs (format 2).
@Suite struct FarStoreMountTests {
    /// `cat` of two small placeholders of a folder fetches the folder's next small files
    /// in the background (each costs a round trip of the slow store otherwise), and reading
    /// on reads them all right; a single `head` in another folder fetches only what it read.
    @Test func aFolderReadFileByFileIsFetchedAhead() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            mkdir \(a)/notes \(a)/other
            for i in $(seq -w 10 49); do head -c $((RANDOM % 4000 + 1)) /dev/urandom > \(a)/notes/n$i.txt; done
            for i in $(seq 1 6); do echo "other $i" > \(a)/other/o$i.txt; done
            \(bin) sync \(a) --wait
            """)
        let b = try await fixture.mount("b", extra: ["--store-faults", "latency=200ms,blocks"])
        try await fixture.sh("""
            state() { getfattr --only-values -n user.ubiqfs.state "$1"; }
            head -c 3 \(b)/other/o3.txt > /dev/null
            cat \(b)/notes/n10.txt \(b)/notes/n11.txt > /dev/null
            # The next 8 small files arrive without being read; the window grows only as
            # the reader goes on, so the rest of the folder stays in the cloud for now.
            for _ in $(seq 1 100); do [ "$(state \(b)/notes/n19.txt)" = local ] && break; sleep 0.1; done
            for i in $(seq 12 19); do test "$(state \(b)/notes/n$i.txt)" = local || { echo "n$i: $(state \(b)/notes/n$i.txt)" >&2; exit 1; }; done
            test "$(state \(b)/notes/n20.txt)" = placeholder
            \(bin) status \(b) | grep -q "downloads: .* [1-9][0-9]* done"
            # One open in a folder is a header read: its neighbours stay in the cloud.
            test "$(state \(b)/other/o4.txt)" = placeholder
            diff -r \(a)/notes \(b)/notes
            """)
    }

    /// A new container is format 5 (packs came with format 2): 300 small files are a pack
    /// or two in the store, a large file keeps its blocks, another device reads them all,
    /// and a device of an old release (format 1 only) refuses the container clearly.
    @Test func smallFilesTravelInPacksAndTinyOnesInRecords() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let a = try await fixture.mount("a")
        let container = fixture.store + "/default"
        try await fixture.sh("""
            grep -q '"format":5' \(container)/container.json
            mkdir \(a)/src
            for i in $(seq 1 300); do head -c $((i * 37 % 9000 + 1)) /dev/urandom > \(a)/src/f$i.c; done
            for i in $(seq 1 50); do echo "note $i" > \(a)/src/n$i.txt; done
            head -c 1048576 /dev/urandom > \(a)/big.bin
            \(bin) sync \(a) --wait
            # Files of 1 KiB or less travel inside their record.
            grep -q '"d":"bm90ZSAxNwo="' \(container)/journal/*
            packs=$(ls \(container)/packs | wc -l)
            # A pack per push: the mount pushes while the loop still writes.
            test "$packs" -ge 1 && test "$packs" -le 8 || { echo "$packs packs" >&2; exit 1; }
            # The large file's blocks (256 KiB and 768 KiB) are a pack of their own.
            test -n "$(find \(container)/packs -type f -size 1024k)" && test -z "$(ls \(container)/blocks 2>/dev/null)"
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            diff -r \(a)/src \(b)/src
            cmp \(a)/big.bin \(b)/big.bin
            """)
        try FileManager.default.createDirectory(atPath: fixture.root + "/c", withIntermediateDirectories: true)
        let refused = try await MountFixture.run(
            [bin, "mount", fixture.root + "/c", "--store", fixture.store, "--state-dir", fixture.root + "/c.state"],
            environment: ["UBIQFS_FORMAT": "1"], timeout: 60
        )
        #expect(refused.status != 0)
        #expect(refused.error.contains("the container has format 5; this ubiqfs supports 1; upgrade ubiqfs"), "\(refused.error)")
    }

    /// `ubiqfs status --watch` shows an upload in flight with its progress bar, frame
    /// after frame, and says so when nothing moves.
    @Test func statusWatchShowsTransfersLive() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let a = try await fixture.mount("a", extra: ["--store-faults", "bandwidth=2M,blocks"])
        try await fixture.sh("""
            head -c 16777216 /dev/urandom > \(a)/big.bin
            \(bin) sync \(a)
            for _ in $(seq 1 150); do \(bin) status \(a) --watch --frames 1 > frame.txt; grep -q '^up ' frame.txt && break; sleep 0.1; done
            grep '^up ' frame.txt | grep 'big.bin' | grep -q '\\[[#.]*\\] *[0-9]*% .* of 16.0 MiB'
            \(bin) status \(a) --watch --frames 3 --interval 0.2 > frames.txt
            test "$(grep -c '^uploads' frames.txt)" = 3
            \(bin) faults \(a) off > /dev/null
            \(bin) sync --wait \(a)
            \(bin) status \(a) --watch --frames 1 | grep -q 'no file is uploading or downloading'
            """)
    }
}
