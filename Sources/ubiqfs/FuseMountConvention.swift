import S3Store

/// `mount -t fuse.ubiqfs STORE MOUNTPOINT -o OPTIONS` and /etc/fstab lines reach us through
/// mount.fuse3, which runs `ubiqfs STORE MOUNTPOINT -o OPTIONS` with `dev,suid` appended
/// and `_netdev`, `nofail`, `auto`, `noauto`, `user`, `users` and `x-*` already removed (by
/// it or by mount(8)). This turns that call into `ubiqfs mount MOUNTPOINT --store STORE
/// ...`; mount(8) waits for us, and `ubiqfs mount` returns once the mount is usable.
enum FuseMountConvention {
    /// `-o` keys that set an option of `ubiqfs mount` (both spellings, as fstab users write both).
    static let valueOptions: [String: String] = [
        "state-dir": "--state-dir", "state_dir": "--state-dir",
        "container": "--container",
        "device": "--device",
        "cache-size": "--cache-size", "cache_size": "--cache-size",
        "keep-versions": "--keep-versions", "keep_versions": "--keep-versions",
        "log-level": "--log-level", "log_level": "--log-level",
        "transfers": "--transfers",
        "bwlimit": "--bwlimit",
        "passphrase-file": "--passphrase-file", "passphrase_file": "--passphrase-file",
        "ignore-file": "--ignore-file", "ignore_file": "--ignore-file",
        "thumbnails": "--thumbnails",
        "thumbnail-cache": "--thumbnail-cache", "thumbnail_cache": "--thumbnail-cache",
        "lookers": "--lookers",
        "metrics": "--metrics",
    ]
    static let flagOptions: [String: String] = [
        "allow_other": "--allow-other", "allow-other": "--allow-other", "noexec": "--noexec", "ro": "--read-only",
        "no-notify": "--no-notify", "no_notify": "--no-notify",
        "allow-plain-http": "--allow-plain-http", "allow_plain_http": "--allow-plain-http",
        "nodiratime": "--no-dir-atime",
    ]
    /// The access-time rules, as `--atime`; the last one given wins, as for mount(8).
    static let atimeOptions: [String: String] = [
        "relatime": "relatime", "atime": "relatime", "strictatime": "strictatime", "noatime": "noatime",
    ]

    /// Generic mount options with nothing to do here: ubiqfs always mounts nodev,nosuid
    /// with default_permissions, keeps access times in memory between batches anyway
    /// (lazytime), and the rest are for mount(8) or systemd.
    static let ignoredOptions: Set<String> = [
        "rw", "defaults", "dev", "nodev", "suid", "nosuid", "exec", "norelatime", "nostrictatime",
        "diratime", "lazytime", "nolazytime", "async", "auto", "noauto", "user", "nouser",
        "users", "_netdev", "nofail", "default_permissions", "owner", "group", "silent", "loud",
    ]

    /// Options that change what a program can rely on; refused rather than half-kept.
    static let refusedOptions: [String: String] = [
        "sync": "synchronous writes are not supported (fsync works as usual)",
        "dirsync": "synchronous directory updates are not supported",
        "mand": "mandatory locks are not supported",
    ]

    /// The arguments for ArgumentParser, or nil when these are not a mount.fuse call: two
    /// words then `-o` (mount.fuse3 always passes options, at least `dev,suid`), so a
    /// mistyped subcommand (`ubiqfs unmout ~/Work`) never becomes a mount.
    static func translate(_ arguments: [String], subcommands: Set<String>) throws -> [String]? {
        guard arguments.count >= 3, let source = arguments.first, !source.hasPrefix("-"), !subcommands.contains(source),
            !arguments[1].hasPrefix("-"), arguments[2].hasPrefix("-o")
        else { return nil }
        let mountpoint = arguments[1]
        var options: [String] = []
        var rest = arguments.dropFirst(2)[...]
        while let flag = rest.popFirst() {
            if flag == "-o", let list = rest.popFirst() {
                options += list.split(separator: ",").map(String.init)
            } else if flag.hasPrefix("-o"), flag.count > 2 {
                options += flag.dropFirst(2).split(separator: ",").map(String.init)
            } else {
                throw CommandFailure("unexpected argument '\(flag)': the mount.fuse form is ubiqfs STORE MOUNTPOINT -o OPTIONS")
            }
        }
        // `mount -o remount,ro|rw` (the source is then the mount's name): the same mount,
        // read-only or read-write from now on.
        if options.contains("remount") {
            return ["remount", mountpoint, options.contains("ro") ? "--read-only" : "--read-write"]
        }
        guard source.hasPrefix("/") || S3Location.isS3(source) else {
            throw CommandFailure("the store '\(source)' must be an absolute path or s3://BUCKET/PREFIX in mount -t fuse.ubiqfs and fstab")
        }
        var translated = ["mount", mountpoint, "--store", source]
        for option in options where !option.isEmpty {
            let parts = option.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let key = parts[0]
            if let flag = valueOptions[key] {
                guard parts.count == 2, !parts[1].isEmpty else { throw CommandFailure("mount option '\(key)' needs a value: \(key)=VALUE") }
                translated += [flag, parts[1]]
            } else if option == "subtype=" {
                // FUSE's subtype option, emptied: the type is plain fuse.
                translated.append("--plain-fuse-type")
            } else if let flag = flagOptions[key], parts.count == 1 {
                translated.append(flag)
            } else if let rule = atimeOptions[key], parts.count == 1 {
                translated.append("--atime=" + rule)
            } else if let reason = refusedOptions[key] {
                throw CommandFailure("mount option '\(key)': \(reason)")
            } else if ignoredOptions.contains(key) || key.hasPrefix("x-") || key == "comment" {
                continue
            } else {
                let known = Set(valueOptions.keys.filter { !$0.contains("_") }.map { $0 + "=" }).union(["allow_other", "noexec", "ro", "no-notify", "allow-plain-http", "relatime", "strictatime", "noatime", "nodiratime"]).sorted()
                throw CommandFailure("unknown mount option '\(option)' (ubiqfs takes \(known.joined(separator: ", ")))")
            }
        }
        return translated
    }
}
