import Foundation
import Testing

/// An encrypted container on real mounts: the store's folder holds nothing readable, a
/// wrong or missing passphrase is refused before anything is mounted, a device keeps the
/// key across remounts, passphrases change while two devices stay mounted, and content
/// the store changed is refused while the rest is served.
@Suite(.serialized) struct EncryptedMountTests {
    @Test func anEncryptedContainerOnTwoMountsAndItsPassphrases() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        try await fixture.sh("""
            mkdir -p b c && echo 'first passphrase' > pw1 && echo 'second passphrase' > pw2 && echo 'third passphrase' > pw3 && echo 'not it at all' > wrong
            """)
        let a = try await fixture.mount("a", extra: ["--encrypt", "--passphrase-file", fixture.root + "/pw1"])
        let container = fixture.store + "/default"
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            mkdir \(a)/zanzibar-folder && printf 'PLAINTEXT-MARKER %.0s' $(seq 1 300) > \(a)/zanzibar-folder/quixotic.txt
            echo small-marker > \(a)/tiny.txt && head -c 2000000 /dev/urandom > \(a)/big.bin
            setfattr -n user.tag -v xattr-marker \(a)/tiny.txt
            \(bin) sync --wait \(a)
            test -n "$(ls \(container)/keys)"
            fails grep -r -l -a -e zanzibar -e quixotic -e PLAINTEXT-MARKER -e small-marker -e xattr-marker \(container)
            \(bin) doctor \(a) --store \(fixture.store) --state-dir \(fixture.root)/a.state | grep -q 'encrypted (ubiqfs-aes256gcm-1)'
            """)
        // A wrong passphrase, and none (no terminal to ask on): one line, nothing mounted.
        for (extra, line) in [(["--passphrase-file", fixture.root + "/wrong"], "wrong passphrase"), ([], "the container is encrypted: give its passphrase")] {
            let failed = try await MountFixture.run(
                [bin, "mount", fixture.root + "/b", "--store", fixture.store, "--state-dir", fixture.root + "/b.state"] + extra,
                timeout: 60
            )
            #expect(failed.status != 0 && failed.error.contains(line), "\(failed.error)")
        }
        try await fixture.sh("fails mountpoint -q \(fixture.root)/b")
        let b = try await fixture.mount("b", environment: ["UBIQFS_PASSPHRASE_FILE": fixture.root + "/pw1"])
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            waitfor 'test -e \(b)/big.bin'
            cmp \(a)/big.bin \(b)/big.bin && cmp \(a)/zanzibar-folder/quixotic.txt \(b)/zanzibar-folder/quixotic.txt
            test "$(getfattr --only-values -n user.tag \(b)/tiny.txt)" = xattr-marker
            stat -c %a \(fixture.root)/b.state/container.key | grep -qx 600
            # Passphrases change with both devices mounted; both go on syncing.
            \(bin) passphrase change \(a) --passphrase-file pw1 --new-passphrase-file pw2 | grep -q changed
            \(bin) passphrase add \(b) --passphrase-file pw2 --new-passphrase-file pw3 | grep -q added
            fails \(bin) passphrase add \(b) --passphrase-file pw1 --new-passphrase-file pw3 2>err.txt
            grep -q 'wrong passphrase' err.txt
            echo from-b > \(b)/after-change.txt && \(bin) sync --wait \(b)
            waitfor 'grep -q from-b \(a)/after-change.txt'
            \(bin) passphrase remove \(a) --passphrase-file pw3 | grep -q removed
            fails \(bin) passphrase remove \(a) --passphrase-file pw2 2>err.txt
            grep -q 'only passphrase' err.txt
            """)
        // b keeps the key: it remounts with no passphrase. A new device opens with the
        // passphrase that is left, and not with the ones changed or removed.
        try await fixture.unmount(b)
        try await fixture.mount("b")
        for old in ["pw1", "pw3"] {
            let refused = try await MountFixture.run(
                [bin, "mount", fixture.root + "/c", "--store", fixture.store, "--state-dir", fixture.root + "/c.state", "--passphrase-file", fixture.root + "/" + old],
                timeout: 60
            )
            #expect(refused.status != 0 && refused.error.contains("wrong passphrase"), "\(refused.error)")
        }
        // The systemd credential (LoadCredential=ubiqfs-passphrase:...) gives it too, written
        // with a Windows line ending. A key object planted in the store with parameters no
        // reader accepts is passed over, not a lock-out.
        try await fixture.sh(#"""
            mkdir -p credentials && printf 'second passphrase\r\nanother line\n' > credentials/ubiqfs-passphrase
            printf '{"id":"00000000000000000000000000000000","kdf":{"n":3,"p":1,"r":8,"salt":"AA=="},"sealed":"AA=="}' > \#(container)/keys/00000000000000000000000000000000
            """#)
        let c = try await fixture.mount("c", environment: ["CREDENTIALS_DIRECTORY": fixture.root + "/credentials"])
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            waitfor 'test -e \(c)/after-change.txt'
            cmp \(a)/big.bin \(c)/big.bin
            grep -q from-b \(c)/after-change.txt && grep -q from-b \(b)/after-change.txt
            # The store changes the large file's blocks: c refuses them (EIO, state error),
            # and serves everything else.
            big=$(find \(container)/packs -type f -size +1000k); test -n "$big"
            for pack in $big; do printf 'X' | dd of=$pack bs=1 seek=100 conv=notrunc status=none; done
            setfattr -n user.ubiqfs.evict -v 1 \(c)/big.bin
            fails cat \(c)/big.bin > /dev/null 2>err.txt
            grep -q 'Input/output error' err.txt
            test "$(getfattr --only-values -n user.ubiqfs.state \(c)/big.bin)" = error
            cmp \(a)/zanzibar-folder/quixotic.txt \(c)/zanzibar-folder/quixotic.txt
            """)
        // On a terminal (a pseudo-terminal here), a new container's passphrase is asked twice.
        try await fixture.sh("""
            mkdir -p asked
            trap 'fusermount3 -uz asked 2>/dev/null || true' EXIT
            printf 'typed passphrase\\ntyped passphrase\\n' | script -qec "\(bin) mount \(fixture.root)/asked --store \(fixture.root)/asked-store --state-dir \(fixture.root)/asked.state --encrypt" /dev/null > asked.out
            grep -q 'New passphrase' asked.out && grep -q 'The same again' asked.out
            mountpoint -q asked && echo secret > asked/f && \(bin) sync --wait asked
            \(bin) unmount asked
            fails grep -r -q secret asked-store
            """)
    }
}
