import ContainerStore
import Foundation
import S3Store
import SyncEngine

/// Turns `--store` into a store: `s3://BUCKET/PREFIX` is an S3-compatible service
/// (credentials, region and endpoint from the AWS environment and files), anything else
/// a local folder. Before a mount relies on it, the store is verified (S3: conditional
/// writes honoured); a state dir remembers that its store passed, so a device that is
/// offline at mount can still start and work locally.
enum StoreOpener {
    /// Always behind a `FaultyStore`, without faults unless asked: `ubiqfs faults` can add
    /// them to a running mount (a wrapper with nothing to inject only passes calls on).
    static func open(_ address: String, container: String, faults: String?, allowPlainHTTP: Bool = false, warn: (String) -> Void = { _ in }) throws -> FaultyStore {
        var store: any ContainerStore
        do {
            if S3Location.isS3(address) {
                let settings = try S3Settings.resolve(S3Location(parsing: address), allowPlainHTTP: allowPlainHTTP)
                if let warning = settings.plainHTTPWarning { warn(warning) }
                store = try S3Store(settings: settings, container: container)
            } else {
                store = try LocalFolderStore(root: address, container: container)
            }
        } catch {
            throw CommandFailure("the store \(address) is unusable: \(error.message)")
        }
        do { return FaultyStore(store, faults: try StoreFaults(parsing: faults ?? "")) } catch {
            throw CommandFailure("--store-faults: \(error.message)")
        }
    }

    static func verify(_ store: any ContainerStore, stateDir: String, timeout: Duration) throws {
        let marker = stateDir + "/store-verified"
        let name = store.displayName
        do {
            try Blocking.wait { try await StoreDeadline.run(timeout) { () throws(StoreError) in try await store.verify() } }
            // Like everything in the state dir, private to its owner.
            _ = FileManager.default.createFile(atPath: marker, contents: Data(name.utf8), attributes: [.posixPermissions: 0o600])
        } catch let error as StoreError where error.code == .unreachable {
            guard (try? String(contentsOfFile: marker, encoding: .utf8)) == name else {
                throw CommandFailure("cannot reach \(name) to check it: \(error.message)")
            }
        } catch let error as StoreError {
            throw CommandFailure("\(name): \(error.message)")
        }
    }
}
