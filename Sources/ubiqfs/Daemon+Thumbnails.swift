import CloudFileSystem
import Foundation
import ThumbnailService

extension Daemon {
    /// `--lookers`, `--thumbnails` and `--thumbnail-cache`: which programs only look, and
    /// whether this device makes pictures and whose cache it fills. A read-only mount
    /// makes none (it pushes nothing) but still installs other devices' pictures.
    func thumbnailSettings(mountpoint: String) throws -> (Lookers, ThumbnailSettings?) {
        let lookers: Lookers
        do { lookers = try options.lookers.map(Lookers.parse) ?? .defaults } catch { throw CommandFailure("--lookers: \(error)") }
        switch options.thumbnails ?? "on" {
        case "off": return (lookers, nil)
        case "on": break
        case let value: throw CommandFailure("--thumbnails \(value): expected on or off")
        }
        let cache = options.thumbnailCache ?? ThumbnailSettings.userCacheRoot(environment: ProcessInfo.processInfo.environment)
        return (lookers, ThumbnailSettings(making: !options.readOnly, cacheRoot: cache, mountpoint: mountpoint))
    }
}
