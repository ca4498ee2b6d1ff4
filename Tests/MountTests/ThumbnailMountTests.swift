import Foundation
import Testing

/// Thumbnails on real mounts of two devices (issue 39): photos written on one device show
/// valid entries in the other's freedesktop cache, as GLib itself checks them (`gio info`),
/// while they stay placeholders; a thumbnailer there never downloads them, `file` reads
/// only their leading block, and a program that uses a file still reads it whole.
@Suite(.serialized) struct ThumbnailMountTests {
    @Test func photosShowThumbnailsOnTheOtherDeviceWithoutBeingDownloaded() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a", device: "camera")
        let cache = fixture.root + "/b-cache"
        let b = try await fixture.mount("b", device: "laptop", extra: ["--thumbnail-cache", cache + "/thumbnails"])
        let (bin, root) = (MountFixture.binary, fixture.root)
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            state() { getfattr --only-values -n user.ubiqfs.state "$1"; }
            valid() { [[ "$(XDG_CACHE_HOME=\(cache) gio info -a thumbnail::is-valid "$1")" == *"is-valid: TRUE"* ]]; }
            entry() { XDG_CACHE_HOME=\(cache) gio info -a thumbnail::path "$1" | sed -n "s/^  thumbnail::path: //p"; }
            waitlong() { for _ in $(seq 1 600); do if eval "$1"; then return 0; fi; sleep 0.1; done; echo "timed out waiting for: $1" >&2; return 1; }
            /usr/bin/convert -size 3000x2000 xc:"#3070c0" -attenuate 1 +noise Gaussian -quality 92 \(root)/photo.jpg
            mkdir \(a)/Photos
            for i in 1 2 3 4; do cp \(root)/photo.jpg \(a)/Photos/img$i.jpg; done
            \(bin) sync --wait \(a)
            waitlong 'valid \(b)/Photos/img4.jpg'
            for i in 1 2 3 4; do waitfor "valid \(b)/Photos/img$i.jpg"; test "$(state \(b)/Photos/img$i.jpg)" = placeholder; done
            waitfor '\(bin) status \(b) | grep -q "thumbnails:      4 from other devices in the thumbnail cache, 0 made here to send"'
            case "$(entry \(b)/Photos/img1.jpg)" in \(cache)/thumbnails/large/*.png) ;; *) echo "not in large/: $(entry \(b)/Photos/img1.jpg)" >&2; false;; esac

            # A thumbnailer is refused the file (EAGAIN): no download, and GLib still
            # finds the installed entry; the same thumbnailer reads a local file.
            fails gdk-pixbuf-thumbnailer -s 256 \(b)/Photos/img1.jpg \(root)/t1.png 2> err
            grep -q "Resource temporarily unavailable" err
            test "$(state \(b)/Photos/img1.jpg)" = placeholder
            gdk-pixbuf-thumbnailer -s 256 \(root)/photo.jpg \(root)/t0.png

            # file(1) reads the leading block (256 KiB) and no more.
            file \(b)/Photos/img2.jpg | grep -q "JPEG image data"
            test "$(stat -c %b \(b)/Photos/img2.jpg)" -le 520
            s=$(state \(b)/Photos/img2.jpg); case $s in partial|downloading) ;; *) echo "img2 is $s" >&2; false;; esac
            sleep 1; test "$(stat -c %b \(b)/Photos/img2.jpg)" -le 520

            # The control: the same thumbnailer under another name is a program like any.
            cp /usr/bin/gdk-pixbuf-thumbnailer \(root)/photo-viewer
            \(root)/photo-viewer -s 256 \(b)/Photos/img3.jpg \(root)/t3.png
            test "$(state \(b)/Photos/img3.jpg)" = local

            # A viewer that failed on a file before may try again once it is here.
            large=$(entry \(b)/Photos/img4.jpg)
            failed=\(cache)/thumbnails/fail/gnome-thumbnail-factory/$(basename $large)
            mkdir -p $(dirname $failed) && cp \(root)/t0.png $failed
            cat \(b)/Photos/img4.jpg > /dev/null
            waitfor '[ ! -e '$failed' ]'

            # An evicted file keeps its entry (its mtime and size stay).
            waitfor '[ "$(state \(b)/Photos/img4.jpg)" = local ]'
            \(bin) evict \(b)/Photos/img4.jpg
            test "$(state \(b)/Photos/img4.jpg)" = placeholder
            valid \(b)/Photos/img4.jpg

            # A new version there replaces the entry here, valid for the new mtime and size.
            old=$(md5sum < "$(entry \(b)/Photos/img2.jpg)")
            /usr/bin/convert -size 1200x800 xc:"#c04030" -attenuate 1 +noise Gaussian -quality 90 \(root)/new.jpg
            cp \(root)/new.jpg \(a)/Photos/img2.jpg
            \(bin) sync --wait \(a)
            waitlong '[ "$(stat -c %s \(b)/Photos/img2.jpg)" = "$(stat -c %s \(root)/new.jpg)" ] && valid \(b)/Photos/img2.jpg && [ "$(md5sum < "$(entry \(b)/Photos/img2.jpg)")" != "$old" ]'

            # Renames here and there keep the entries valid under the new names.
            mv \(b)/Photos/img1.jpg \(b)/Photos/renamed-here.jpg
            waitfor 'valid \(b)/Photos/renamed-here.jpg'
            mv \(a)/Photos \(a)/Album
            waitlong 'valid \(b)/Album/img2.jpg'
            test "$(stat -c %b \(b)/Album/renamed-here.jpg)" = 0
            """, timeout: 600)
    }
}
