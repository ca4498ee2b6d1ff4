import Foundation
import Logging

/// Log lines for the systemd journal: `<priority>[source] message` on stderr, so
/// `journalctl --user -u ubiqfs@NAME -p warning` filters by level and the journal adds
/// its own time stamps.
struct JournalLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = "<\(Self.priority(event.level))>[\(event.source)] \(event.message)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// syslog(3) priorities, which the journal reads from the prefix.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
