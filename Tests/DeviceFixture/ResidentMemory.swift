import Foundation

/// The test process's resident memory, the one measure a test has of what an operation
/// allocates. It is shared by every test running at once, so the tests that bound it and
/// the tests that hold hundreds of MiB (large files in memory) run one at a time through
/// `exclusive`; the others stay far below the bounds' slack.
public enum ResidentMemory {
    private static let gate = Gate()

    /// Runs `body` while no other `exclusive` body runs.
    public static func exclusive<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
        await gate.enter()
        do {
            let result = try await body()
            await gate.leave()
            return result
        } catch {
            await gate.leave()
            throw error
        }
    }

    /// VmRSS of this process, in bytes.
    public static func bytes() -> Int64 {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int64(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    /// A lock that suspends its waiters instead of blocking their threads.
    private actor Gate {
        private var held = false
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func enter() async {
            guard held else {
                held = true
                return
            }
            await withCheckedContinuation { waiters.append($0) }
        }

        func leave() {
            if waiters.isEmpty {
                held = false
            } else {
                waiters.removeFirst().resume()
            }
        }
    }
}
