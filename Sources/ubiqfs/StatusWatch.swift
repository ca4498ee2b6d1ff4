import Foundation
import Glibc
import SyncEngine

/// `ubiqfs status --watch`: the mount's transfers, redrawn every `interval` until Ctrl-C:
/// each direction's totals and rate, and every whole file uploading or downloading with a
/// progress bar. On a terminal each frame replaces the last; otherwise frames follow one
/// another, a blank line apart (for a log or a test).
enum StatusWatch {
    static func run(mountpoint: String, interval: Double, frames: Int?) throws {
        let terminal = isatty(1) == 1
        var shown = 0
        while true {
            let response = try ControlClient.send(ControlRequest(command: "status"), mountpoint: mountpoint)
            let frame = render(response, mountpoint: mountpoint, width: terminal ? columns() : 80)
            // Written at once, unbuffered: a frame never waits for the next one.
            FileHandle.standardOutput.write(Data(((terminal ? "\u{1B}[H\u{1B}[2J" : "") + frame + (terminal ? "" : "\n")).utf8))
            shown += 1
            if let frames, shown >= frames { return }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    static func render(_ response: ControlResponse, mountpoint: String, width: Int) -> String {
        guard let status = response.status else { return "\(mountpoint): no status\n" }
        var lines = ["\(response.mountpoint ?? mountpoint): \(status.state), journal \(status.lastSeq), \(status.pendingItems) changes to push"]
        for (name, gate) in [("uploads", status.uploads), ("downloads", status.downloads)] {
            guard let gate else { continue }
            lines.append("\(name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(StatusCommand.size(gate.rate))/s, "
                + "\(gate.running) in flight, \(gate.queued) queued, \(gate.done) done (\(StatusCommand.size(gate.doneBytes)))")
        }
        let transfers = status.transfers ?? []
        if transfers.isEmpty { lines.append("no file is uploading or downloading") }
        for transfer in transfers {
            let arrow = transfer.direction == "upload" ? "up  " : "down"
            let amount = "\(StatusCommand.size(transfer.done)) of \(StatusCommand.size(transfer.total))"
            lines.append("\(arrow) \(bar(transfer.done, of: transfer.total, width: 20)) \(amount.padding(toLength: 22, withPad: " ", startingAt: 0)) \(transfer.path)")
        }
        if let error = status.lastError { lines.append("last error: \(error)") }
        return lines.map { String($0.prefix(max(20, width))) }.joined(separator: "\n") + "\n"
    }

    /// `[#######.............]  35%`
    static func bar(_ done: Int64, of total: Int64, width: Int) -> String {
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 0
        let filled = Int(fraction * Double(width))
        let percent = String(Int(fraction * 100))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + String(repeating: " ", count: 3 - percent.count) + percent + "%"
    }

    private static func columns() -> Int {
        var size = winsize()
        return ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }
}
