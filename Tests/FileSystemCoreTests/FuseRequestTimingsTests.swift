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
        // Nothing waits: never stuck, however quiet.
        usleep(80_000)
        #expect(timings.stuck == nil)
        // A request waits and nothing was answered for longer than the limit.
        timings.started(.fsync)
        #expect(timings.stuck?.contains("1 kernel requests wait") == true)
        // A reply (any) ends it.
        timings.finished(.fsync, nanoseconds: 90_000_000, error: 0)
        #expect(timings.stuck == nil)
        #expect(timings.requestsInFlight == 0)
    }
}
