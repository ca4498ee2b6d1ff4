internal import Glibc

/// A point in time as the kernel stores it (seconds and nanoseconds since the epoch).
public struct FuseTimespec: Sendable, Hashable {
    public var seconds: Int64
    public var nanoseconds: Int64

    public init(seconds: Int64, nanoseconds: Int64) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// The wall clock (CLOCK_REALTIME), which is what file times are measured against.
    public static var now: FuseTimespec {
        var value = timespec()
        clock_gettime(CLOCK_REALTIME, &value)
        return FuseTimespec(value)
    }

    init(_ value: timespec) {
        self.init(seconds: Int64(value.tv_sec), nanoseconds: Int64(value.tv_nsec))
    }

    var timespecValue: timespec {
        timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))
    }
}
