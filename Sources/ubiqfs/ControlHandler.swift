import CloudFileSystem
import ContainerCrypto
import ContainerStore
import FileCoordinator
import Foundation
import Glibc
import Inodes
import ItemModel
import MetadataStore
import SyncEngine

/// Answers one control request of a running mount (`ControlServer`): the commands of
/// `ubiqfs status`, `sync`, `versions`, `trash`, `retention` and the rest.
struct ControlHandler {
    let sync: SyncEngine
    let core: FileSystemCore
    let budget: CacheBudget
    let coordinator: FileCoordinator
    let store: FaultyStore
    let kernelRequests: KernelRequestCounts
    let mountpoint: String
    let stateDir: String
    let exit: @Sendable () -> Void

    func handle(_ request: ControlRequest) async -> ControlResponse {
        var response = ControlResponse(ok: true, mountpoint: mountpoint, stateDir: stateDir, pid: getpid())
        do {
            try await answer(request, into: &response)
        } catch {
            response.ok = false
            response.error = error.message
        }
        return response
    }

    private func answer(_ request: ControlRequest, into response: inout ControlResponse) async throws(ControlFailure) {
        switch request.command {
        case "status":
            response.status = await sync.status()
            let usage = core.cacheBytes()
            response.cacheBytes = usage
            response.cacheBudget = budget.effectiveLimit(usage: usage)
            response.storeFaults = store.faults.description
            response.kernelRequests = kernelRequests.snapshot
        case "sync":
            if request.wait ?? false {
                do { try await sync.syncNow() } catch {
                    response.ok = false
                    response.error = "\(error)"
                }
            } else {
                sync.localChange()
            }
            response.status = await sync.status()
        case "faults":
            if let spec = request.faults {
                do {
                    store.faults = try StoreFaults(parsing: ["none", "off"].contains(spec) ? "" : spec)
                } catch {
                    throw ControlFailure(error.message)
                }
            }
            response.storeFaults = store.faults.description
        case "remount":
            await sync.setReadOnly(request.readOnly ?? false)
        case "pause":
            await sync.pause()
        case "resume":
            await sync.resume()
        case "locks":
            response.locks = coordinator.snapshot().map { entry in
                LockEntry(inode: entry.key, path: core.path(of: entry.key), holders: entry.holders, waiters: entry.waiters)
            }
        case "versions", "restore":
            try await versions(request, into: &response)
        case "states":
            do throws(FileSystemError) {
                response.states = try core.childStates(item(request), names: request.names)
            } catch {
                throw ControlFailure(error.message)
            }
        case "trash", "trash-restore":
            try trash(request, into: &response)
        case "retention":
            try await retention(request, into: &response)
        case "merge":
            do throws(SyncError) {
                let settings = if let kinds = request.merge { try await sync.setMerge(kinds) } else { try await sync.settings() }
                let kinds = settings.merging
                response.merge = ["text": kinds.text, "sqlite": kinds.sqlite, "json": kinds.json]
            } catch {
                throw ControlFailure(error.message)
            }
        case "gc":
            do throws(SyncError) {
                let grace = request.graceSeconds.map { Duration.milliseconds(Int64(min(max($0, 0), 7 * 86400) * 1000)) }
                // Whoever shortens the grace knows no device is far behind: the horizon too.
                response.collection = try await sync.collect(grace: grace, horizon: grace)
            } catch {
                throw ControlFailure(error.message)
            }
        case "passphrase":
            try await passphrase(request)
        case "unmount":
            exit()
        default:
            throw ControlFailure("unknown command \(request.command)")
        }
    }

    /// The item a request names: by its path's bytes when given, else by its path.
    private func item(_ request: ControlRequest) throws(FileSystemError) -> Inode {
        guard let encoded = request.pathBytes else { return try core.resolve(request.path ?? "/") }
        guard let bytes = Data(base64Encoded: encoded) else { throw FileSystemError(.invalid, "pathBytes is not base64") }
        return try core.resolve(bytes: Array(bytes))
    }

    private func versions(_ request: ControlRequest, into response: inout ControlResponse) async throws(ControlFailure) {
        do throws(FileSystemError) {
            let ino = try item(request)
            if request.command == "restore" {
                guard let version = request.version else { throw FileSystemError(.invalid, "restore needs a version") }
                return try await core.restore(ino, version: version, input: request.input ?? 0)
            }
            let (versions, current) = try core.versions(ino)
            response.versions = versions.map {
                VersionEntry(
                    version: $0.seq, device: $0.device, time: Double($0.time) / 1e9, size: $0.size, current: $0.input == 0 && $0.seq == current,
                    input: $0.input > 0 ? $0.input : nil, mergedWith: $0.mergedWith, mergeKind: $0.mergeKind
                )
            }
        } catch {
            throw ControlFailure(error.message)
        }
    }

    private func trash(_ request: ControlRequest, into response: inout ControlResponse) throws(ControlFailure) {
        do throws(FileSystemError) {
            if request.command == "trash-restore" {
                response.path = try core.restoreFromTrash(path: request.path ?? "/", seq: request.version)
                return
            }
            response.trash = try core.trash().map {
                TrashListing(
                    path: $0.path, kind: $0.top.kind.rawValue, deleted: Double($0.time) / 1e9, device: $0.device, seq: $0.seq,
                    size: $0.size, items: $0.items.count
                )
            }
        } catch {
            throw ControlFailure(error.message)
        }
    }

    private func retention(_ request: ControlRequest, into response: inout ControlResponse) async throws(ControlFailure) {
        do throws(SyncError) {
            let settings: ContainerSettings
            if request.versionsDays != nil || request.trashDays != nil {
                settings = try await sync.setRetention(
                    versions: request.versionsDays.map { Int64(($0 * 86400).rounded()) }, trash: request.trashDays.map { Int64(($0 * 86400).rounded()) }
                )
            } else {
                settings = try await sync.settings()
            }
            response.retention = RetentionListing(versionsDays: Double(settings.retention.versions) / 86400, trashDays: Double(settings.retention.trash) / 86400)
        } catch {
            throw ControlFailure(error.message)
        }
    }

    /// Adds, changes or removes a passphrase (`Keyring`): each needs one that opens the container now.
    private func passphrase(_ request: ControlRequest) async throws(ControlFailure) {
        guard sync.info.encryption != nil else { throw ControlFailure("the container is not encrypted: it has no passphrase") }
        guard let current = request.passphrase else { throw ControlFailure("a passphrase that opens the container is needed") }
        let action = request.action ?? ""
        guard ["add", "change", "remove"].contains(action) else { throw ControlFailure("unknown passphrase action \(action)") }
        guard action == "remove" || request.newPassphrase != nil else { throw ControlFailure("\(action) needs the new passphrase") }
        let keyring = Keyring(store: store, container: sync.info.id)
        do throws(CryptoError) {
            switch action {
            case "add": _ = try await keyring.add(passphrase: request.newPassphrase!, master: try await keyring.unlock(passphrase: current).master)
            case "change": try await keyring.change(from: current, to: request.newPassphrase!)
            default: try await keyring.remove(passphrase: current)
            }
        } catch {
            throw ControlFailure(error.message)
        }
    }
}

/// Why a control request failed: the line the command prints.
struct ControlFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
