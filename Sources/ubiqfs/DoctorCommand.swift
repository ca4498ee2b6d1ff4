import ArgumentParser
import ContainerStore
import Foundation
import Glibc
import ItemModel
import S3Store
import SyncEngine

/// `ubiqfs doctor`: checks everything a mount needs, in the order a mount needs it, and
/// says how to fix what is wrong. Exits 1 if any check failed.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the setup for a mount (FUSE, permissions, state dir, store) and say how to fix what is wrong.",
        discussion: "Takes the same arguments as `ubiqfs mount` (or a mount's name in ~/.config/ubiqfs/mounts.conf) and mounts nothing. Exits 1 if a check failed."
    )

    @OptionGroup var options: MountOptions

    @Option(help: "Seconds to wait for the store.")
    var timeout: Double = 15

    func run() throws {
        let (options, profile) = try self.options.resolvingProfile()
        var report = DoctorReport()
        print("ubiqfs \(UbiqFS.version): checking the mount of \(options.resolvedMountpoint)")
        print("  store \(options.resolvedStore), container \(options.resolvedContainer), state dir \(options.resolvedStateDir)")
        checkFuse(&report, allowOther: options.allowOther)
        checkMountpoint(&report, options.resolvedMountpoint, createdByMount: profile != nil)
        checkStateDir(&report, options.resolvedStateDir)
        checkStore(&report, options)
        print(report.failures == 0 ? "all checks passed" : "\(report.failures) check(s) failed")
        if report.failures > 0 { throw ExitCode(1) }
    }

    private func checkFuse(_ report: inout DoctorReport, allowOther: Bool) {
        let candidates: [String] = ["/usr/bin/fusermount3", "/bin/fusermount3"]
        let helper = candidates.first { access($0, X_OK) == 0 }
        if let helper {
            var info = stat()
            if stat(helper, &info) != 0 {
                report.fail("fuse3", "cannot stat \(helper): \(String(cString: strerror(errno)))", fix: "reinstall fuse3")
            } else if getuid() != 0 && info.st_mode & S_ISUID == 0 {
                report.fail("fuse3", "\(helper) is not setuid root, so users cannot mount", fix: "sudo chmod u+s \(helper) (or reinstall fuse3)")
            } else {
                report.pass("fuse3", helper)
            }
        } else {
            report.fail("fuse3", "fusermount3 is missing", fix: "sudo apt-get install fuse3")
        }
        let fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        if fd >= 0 {
            close(fd)
            report.pass("/dev/fuse", "usable")
        } else {
            let reason = String(cString: strerror(errno))
            let fix = errno == ENOENT
                ? "sudo modprobe fuse; in a container, pass the device (docker run --device /dev/fuse --cap-add SYS_ADMIN)"
                : "make /dev/fuse readable and writable by \(Self.userName) (mode 0666 is the default)"
            report.fail("/dev/fuse", reason, fix: fix)
        }
        guard allowOther else { return }
        if getuid() == 0 {
            report.pass("allow_other", "root may use it")
        } else if Self.fuseConfAllowsOther() {
            report.pass("allow_other", "user_allow_other is set in /etc/fuse.conf")
        } else {
            report.fail("allow_other", "users may not use allow_other", fix: "add the line user_allow_other to /etc/fuse.conf (as root)")
        }
    }

    private func checkMountpoint(_ report: inout DoctorReport, _ path: String, createdByMount: Bool) {
        guard DeadMount.isAlive(path) else {
            report.fail("mountpoint", "\(path) is a dead mount (its daemon stopped)", fix: "ubiqfs mount on it again detaches it and mounts")
            return
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 {
            switch errno {
            case ENOENT where createdByMount && access(Self.nearestExisting(path), W_OK | X_OK) == 0:
                report.pass("mountpoint", "\(path) will be created by ubiqfs mount")
            case ENOENT:
                report.fail("mountpoint", "\(path) does not exist", fix: "mkdir -p \(path)")
            case ENOTDIR:
                report.fail("mountpoint", "\(path) is not a folder", fix: "choose a folder")
            default:
                report.fail("mountpoint", "\(path): \(String(cString: strerror(errno)))", fix: "choose a folder you can open")
            }
            return
        }
        close(fd)
        if ItemXattrs.get(path, "user.ubiqfs.control") != nil {
            report.pass("mountpoint", "\(path) is mounted now (ubiqfs status \(path))")
        } else if access(path, W_OK) != 0 {
            report.fail("mountpoint", "\(path) is not writable by \(Self.userName)", fix: "mount on a folder you own")
        } else if let entries = try? FileManager.default.contentsOfDirectory(atPath: path), !entries.isEmpty {
            report.warn("mountpoint", "\(path) is not empty: its \(entries.count) entries would be hidden while mounted")
        } else {
            report.pass("mountpoint", "\(path) is an empty folder")
        }
    }

    private func checkStateDir(_ report: inout DoctorReport, _ path: String) {
        let existing = Self.nearestExisting(path)
        guard access(existing, W_OK | X_OK) == 0 else {
            report.fail("state dir", "\(existing) is not writable by \(Self.userName), so \(path) cannot be used", fix: "choose a state dir you own (--state-dir)")
            return
        }
        if existing == path {
            var info = stat()
            stat(path, &info)
            if info.st_uid != getuid() {
                report.fail("state dir", "\(path) belongs to uid \(info.st_uid), not to \(Self.userName)", fix: "use your own state dir (--state-dir)")
                return
            }
            switch StateDirLock.take(path, create: false) {
            case .taken(let lock):
                close(lock)
                report.pass("state dir", "\(path) (this device has joined before)")
            case .held:
                report.pass("state dir", "\(path) is in use by a running daemon")
            case .absent:
                report.pass("state dir", "\(path)")
            }
        } else {
            report.pass("state dir", "\(path) will be created")
        }
        var disk = statvfs()
        guard statvfs(existing, &disk) == 0 else { return }
        let free = Int64(disk.f_bavail) * Int64(disk.f_frsize)
        let text = "\(free / (1 << 20)) MiB free on the state dir's disk"
        if free < 64 << 20 {
            report.fail("free space", text, fix: "free space there or move the state dir (--state-dir); writes fail with ENOSPC when it is full")
        } else if free < 1 << 30 {
            report.warn("free space", text + ": little room for downloaded and new content")
        } else {
            report.pass("free space", text)
        }
    }

    private func checkStore(_ report: inout DoctorReport, _ options: MountOptions) {
        let address = options.resolvedStore
        let containerFolder = address + "/" + options.resolvedContainer
        if !S3Location.isS3(address), access(containerFolder, F_OK) != 0 {
            // Doctor changes nothing: a local store or container not made yet is only checked for room to make it.
            let parent = Self.nearestExisting(containerFolder)
            if access(parent, W_OK | X_OK) == 0 {
                let what = access(address, F_OK) == 0 ? "the container \(options.resolvedContainer) in \(address)" : "the local folder \(address)"
                report.pass("store", "\(what) will be created at the first mount")
            } else {
                report.fail("store", "\(containerFolder) does not exist and \(parent) is not writable by \(Self.userName)", fix: "create the store folder, or choose one you can write (--store)")
            }
            return
        }
        let store: any ContainerStore
        do {
            var warning: String?
            store = try StoreOpener.open(
                options.resolvedStore, container: options.resolvedContainer, faults: nil, allowPlainHTTP: options.allowPlainHTTP,
                warn: { warning = $0 })
            if let warning { report.warn("store", warning + " (use an https:// endpoint)") }
        } catch {
            report.fail("store", "\(error)", fix: Self.storeFix(options.resolvedStore))
            return
        }
        let timeout = Duration.milliseconds(Int(max(1, timeout) * 1000))
        let info: Result<[UInt8]?, StoreError> = Self.wait(timeout) { () throws(StoreError) -> [UInt8]? in
            do throws(StoreError) { return try await store.get(ContainerLayout.infoKey) } catch where error.code == .notFound { return nil }
        }
        switch info {
        case .failure(let error):
            report.fail("store", "\(store.displayName): \(error.message)", fix: Self.storeFix(options.resolvedStore))
            return
        case .success(nil):
            report.pass("store", "\(store.displayName) is reachable; the container \(options.resolvedContainer) will be created at the first mount")
        case .success(let bytes?):
            if let container = try? RecordCodec.decode(ContainerInfo.self, from: bytes) {
                let sealed = container.encryption.map { "encrypted (\($0.scheme))" } ?? "not encrypted"
                report.pass("store", "\(store.displayName) is reachable; container \(options.resolvedContainer) (id \(container.id), format \(container.format), \(sealed))")
            } else {
                report.fail("store", "\(store.displayName): \(ContainerLayout.infoKey) of \(options.resolvedContainer) is not a ubiqfs container description", fix: "use another --container name, or check what wrote there")
                return
            }
        }
        switch Self.wait(timeout, { () throws(StoreError) in try await store.verify() }) {
        case .success:
            let what = S3Location.isS3(options.resolvedStore) ? "the service honours conditional writes (If-None-Match: *)" : "a local folder: create-if-absent is atomic"
            report.pass("conditional writes", what)
        case .failure(let error):
            report.fail("conditional writes", error.message, fix: "use a service that honours If-None-Match: * on PUT (AWS S3, SeaweedFS, Ceph RGW, MinIO; docs/S3.md)")
        }
    }

    /// Runs a store call off the cooperative pool's callers, bounded by `timeout`.
    private static func wait<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws(StoreError) -> T) -> Result<T, StoreError> {
        do {
            return .success(try Blocking.wait { try await StoreDeadline.run(timeout, body) })
        } catch let error as StoreError {
            return .failure(error)
        } catch {
            return .failure(StoreError(code: .unreachable, message: "\(error)"))
        }
    }

    private static func storeFix(_ address: String) -> String {
        S3Location.isS3(address)
            ? "check the bucket name, AWS_ENDPOINT_URL and AWS_REGION, and the credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws); docs/S3.md"
            : "make sure the folder's disk is mounted and writable by \(userName)"
    }

    /// The path itself, or its nearest ancestor that exists.
    static func nearestExisting(_ path: String) -> String {
        var existing = path
        while access(existing, F_OK) != 0, existing != "/" {
            existing = (existing as NSString).deletingLastPathComponent
        }
        return existing
    }

    static func fuseConfAllowsOther(_ path: String = "/etc/fuse.conf") -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "user_allow_other" }
    }

    static var userName: String {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return "uid \(getuid())" }
        return String(cString: name)
    }
}
