import Glibc

/// Nanoseconds of CLOCK_MONOTONIC: cheap (vDSO) and safe to call on any thread.
public enum MonotonicClock {
    public static var nanoseconds: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
