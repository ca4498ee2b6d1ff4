import CloudFileSystem
import ContainerStore
import Foundation
import Glibc
import ItemModel
import MetadataStore
import Testing

/// Three devices change one container offline, then sync in a random order, round after
/// round. The scenarios in `SyncTests` check each conflict rule alone; this test looks for
/// the combinations no one wrote down. Every choice comes from one seed, named in each
/// failure: `UBIQFS_RANDOM_SEED=<seed> UBIQFS_RANDOM_ROUNDS=<round>` replays it.
@Suite struct RandomizedSyncTests {
    /// One item of a device's tree, for choosing targets and comparing modes.
    private struct Entry {
        var path: String
        var ino: Int64
        var kind: ItemKind
        var mode: UInt32
    }

    private static let environment = ProcessInfo.processInfo.environment
    static let seed = environment["UBIQFS_RANDOM_SEED"].flatMap { UInt64($0) } ?? 20_250_601
    static let rounds = environment["UBIQFS_RANDOM_ROUNDS"].flatMap { Int($0) } ?? 8

    /// Few names, so devices often pick the same one.
    private static let fileNames = ["a.txt", "b.txt", "c.md", "notes"]
    private static let folderNames = ["d0", "d1", "d2"]
    private static let modes: [UInt32] = [0o600, 0o640, 0o644, 0o700, 0o755]
    /// Refusals a random operation may meet (a folder not empty, a move into itself...).
    private static let expectedRefusals: Set<FileSystemErrorCode> = [.notEmpty, .invalid, .exists, .isDirectory, .notDirectory]

    @Test func devicesConvergeWithoutLosingWrites() async throws {
        let seed = Self.seed
        print("RandomizedSyncTests: UBIQFS_RANDOM_SEED=\(seed) UBIQFS_RANDOM_ROUNDS=\(Self.rounds)")
        var rng = SplitMix64(seed: seed)
        let store = InMemoryStore()
        var devices: [TestDevice] = []
        for name in ["a", "b", "c"] { devices.append(try await TestDevice(store: store, name: name)) }
        var history: [String] = []
        for round in 1...max(1, Self.rounds) {
            var log: [String] = ["round \(round)"]
            var failures: [String] = []
            do {
                failures = try await playRound(round, devices: devices, store: store, rng: &rng, log: &log)
            } catch {
                failures = ["round \(round) threw \(error)"]
            }
            history += log
            let replay = "UBIQFS_RANDOM_SEED=\(seed) UBIQFS_RANDOM_ROUNDS=\(round)"
            for failure in failures { Issue.record("\(failure)\nreplay with \(replay)\n\(history.joined(separator: "\n"))") }
            if !failures.isEmpty { break }
        }
        for device in devices { await device.shutdown() }
    }

    /// Every device changes its tree, then all sync; returns the invariants that do not hold.
    private func playRound(
        _ round: Int, devices: [TestDevice], store: InMemoryStore, rng: inout SplitMix64, log: inout [String]
    ) async throws -> [String] {
        // Content each device wrote and kept this round, and where it was then.
        var written: [(content: String, origin: String)] = []
        for device in devices {
            var touched: Set<Int64> = []
            for op in 1...(1 + rng.below(12)) {
                let token = "dev-\(device.name) round \(round) op \(op) \(String(rng.next(), radix: 16))"
                log.append("  \(device.name): " + (try await randomOperation(on: device, token: token, rng: &rng, touched: &touched)))
            }
            for entry in try entries(device) where entry.kind == .file && touched.contains(entry.ino) {
                written.append((try await device.read(entry.path), "\(device.name):\(entry.path)"))
            }
        }

        for pass in 1...3 {
            let order = rng.shuffled(devices)
            log.append("  sync pass \(pass): " + order.map(\.name).joined(separator: " "))
            for device in order { try await device.sync() }
        }
        let journal = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        for device in rng.shuffled(devices) { try await device.sync() }
        let journalAfter = try await store.listAll(prefix: ContainerLayout.journalPrefix).count

        var failures: [String] = []
        func fail(_ message: String) { failures.append(message) }
        // 1. One tree everywhere, with the same modes.
        let reference = try await devices[0].tree()
        let referenceModes = try modes(devices[0])
        for device in devices.dropFirst() {
            let tree = try await device.tree()
            if tree != reference {
                fail("trees differ after round \(round):\n" + difference(reference, devices[0].name, tree, device.name))
            }
            let modes = try modes(device)
            if modes != referenceModes {
                let described = { (modes: [String: UInt32]) in modes.mapValues { String($0, radix: 8) } }
                fail("modes differ after round \(round):\n" + difference(described(referenceModes), devices[0].name, described(modes), device.name))
            }
        }
        // 2. No lost writes: what a device wrote and kept is somewhere in the tree.
        let contents = Set(reference.values)
        for (content, origin) in written where !contents.contains(content) {
            fail("lost write after round \(round): \(origin) had \(content.debugDescription)\ntree:\n" + describe(reference))
        }
        // 3. Quiet: a further sync commits nothing and leaves nothing pending.
        if journalAfter != journal {
            fail("a sync after quiescence committed \(journalAfter - journal) more journal records (round \(round))")
        }
        for device in devices {
            let pending = await device.engine.status().pendingItems
            if pending != 0 { fail("\(device.name) still has \(pending) pending items after round \(round)") }
        }
        return failures
    }

    // MARK: Operations

    /// One random local change; returns its log line. Refusals the kernel would also give
    /// (a folder not empty, a move into itself) are logged and skipped.
    private func randomOperation(on device: TestDevice, token: String, rng: inout SplitMix64, touched: inout Set<Int64>) async throws -> String {
        let all = try entries(device)
        let files = all.filter { $0.kind == .file }
        let folders = all.filter { $0.kind == .directory }
        let folderPaths = [""] + folders.map(\.path)
        func inside(_ folder: String, _ name: String) -> String { folder.isEmpty ? name : folder + "/" + name }
        func name(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }
        func folder(_ path: String) -> String { path.split(separator: "/").dropLast().joined(separator: "/") }

        var line = ""
        do {
            switch rng.below(18) {
            case 0..<3:
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.fileNames)!)
                line = "create \(path) = \(token.debugDescription)"
                let parent = try #require(device.inode(folder(path)))
                let (attributes, handle) = try device.core.create(parent: parent, name: Array(name(path).utf8), mode: 0o644, flags: O_WRONLY, caller: TestDevice.caller)
                defer { device.core.release(handle: handle) }
                _ = try Array(token.utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 0) }
                touched.insert(attributes.ino)
            case 3..<6:
                guard let file = rng.pick(files) else { return "overwrite: no file" }
                line = "overwrite \(file.path) = \(token.debugDescription)"
                try await device.write(file.path, token)
                touched.insert(file.ino)
            case 6..<8:
                guard let file = rng.pick(files) else { return "append: no file" }
                line = "append \(file.path) += \(token.debugDescription)"
                let handle = try await device.open(file.ino, flags: O_WRONLY | O_APPEND)
                defer { device.core.release(handle: handle) }
                _ = try Array(token.utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 0) }
                touched.insert(file.ino)
            case 8:
                guard let file = rng.pick(files) else { return "truncate: no file" }
                let size = try device.core.attributes(file.ino).size
                let newSize = Int64(rng.below(Int(max(size, 1))))
                line = "truncate \(file.path) to \(newSize)"
                try await truncate(device, file.ino, to: newSize)
                touched.insert(file.ino)
            case 9..<11:
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.folderNames)!)
                line = "mkdir \(path)"
                try device.mkdir(path)
            case 11..<14:
                guard let source = rng.pick(all) else { return "rename: nothing" }
                let destination = rng.pick(folderPaths)!
                let taken = all.filter { $0.path != source.path && folder($0.path) == destination }.map { name($0.path) }
                let newName: String = switch rng.below(4) {
                case 0: name(source.path)
                case 1: rng.pick(taken) ?? name(source.path)
                default: rng.pick(source.kind == .directory ? Self.folderNames : Self.fileNames)!
                }
                let target = inside(destination, newName)
                line = "rename \(source.path) -> \(target)"
                try device.rename(source.path, target)
            case 14..<16:
                guard let file = rng.pick(files) else { return "delete: no file" }
                line = "delete \(file.path)"
                try device.remove(file.path)
            case 16:
                guard let folder = rng.pick(folders) else { return "rmdir: no folder" }
                line = "rmdir \(folder.path)"
                try device.remove(folder.path)
            default:
                guard let item = rng.pick(all) else { return "chmod: nothing" }
                let mode = rng.pick(Self.modes)!
                line = "chmod \(item.path) \(String(mode, radix: 8))"
                _ = try device.core.setAttributes(item.ino, AttributeChanges(mode: mode), handle: nil)
            }
        } catch let error as FileSystemError where Self.expectedRefusals.contains(error.code) {
            return "\(line) (refused: \(error.code))"
        }
        return line
    }

    /// Truncates like the FUSE adapter: a placeholder is downloaded first.
    private func truncate(_ device: TestDevice, _ ino: Int64, to size: Int64) async throws {
        if try device.core.attributes(ino).blocks == 0 && size > 0 { try await device.core.materialize(ino) }
        _ = try device.core.setAttributes(ino, AttributeChanges(size: size), handle: nil)
    }

    // MARK: Trees

    private func entries(_ device: TestDevice) throws -> [Entry] {
        var result: [Entry] = []
        func walk(_ ino: Int64, _ prefix: String) throws {
            for child in try device.core.list(ino, after: 2, limit: 100_000) {
                let path = prefix + String(decoding: child.name, as: UTF8.self)
                result.append(Entry(path: path, ino: child.attributes.ino, kind: child.attributes.kind, mode: child.attributes.permissions))
                if child.attributes.kind == .directory { try walk(child.attributes.ino, path + "/") }
            }
        }
        try walk(ItemRow.rootIno, "")
        return result.sorted { $0.path < $1.path }
    }

    private func modes(_ device: TestDevice) throws -> [String: UInt32] {
        Dictionary(uniqueKeysWithValues: try entries(device).map { ($0.path, $0.mode) })
    }

    private func difference(_ left: [String: String], _ leftName: String, _ right: [String: String], _ rightName: String) -> String {
        Set(left.keys).union(right.keys).sorted().compactMap { path in
            left[path] == right[path] ? nil : "  \(path): \(leftName)=\(left[path]?.debugDescription ?? "-") \(rightName)=\(right[path]?.debugDescription ?? "-")"
        }.joined(separator: "\n")
    }

    private func describe(_ tree: [String: String]) -> String {
        tree.keys.sorted().map { "  \($0): \(tree[$0]!.debugDescription)" }.joined(separator: "\n")
    }
}
