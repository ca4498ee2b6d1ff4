@testable import CloudFileSystem
import FuseKit
import Glibc
import Testing

@Suite struct FuseRequestTimingsTests {
    @Test func timesByOperationAndSeesAMountThatNoLongerAnswers() {
        let timings = FuseRequestTimings(stuckAfter: 50_000_000)
        timings.started(.read)
        timings.finished(.read, nanoseconds: 120_000, error: 0)
        timings.started(.lookup)
        timings.finished(.lookup, nanoseconds: 3_000, error: ENOENT)
        #expect(timings.byOperation.map(\.operation) == ["lookup", "read"])
        #expect(timings.byOperation.first { $0.operation == "read" }?.histogram.snapshot.sum == 0.00012)
        #expect(timings.errorReplies == 1)
        // Nothing waits: never stuck, however quiet; and the first request after a quiet
        // spell is not stuck for the quiet before it.
        usleep(80_000)
        #expect(timings.stuck == nil)
        timings.started(.fsync)
        #expect(timings.stuck == nil)
        // It waits, and nothing is answered for longer than the limit; another request
        // arriving meanwhile is no progress.
        usleep(80_000)
        timings.started(.getattr)
        #expect(timings.stuck?.contains("2 kernel requests wait") == true)
        // A reply (any) is.
        timings.finished(.getattr, nanoseconds: 80_000_000, error: 0)
        #expect(timings.stuck == nil)
        timings.finished(.fsync, nanoseconds: 160_000_000, error: 0)
        #expect(timings.requestsInFlight == 0)
    }
}
