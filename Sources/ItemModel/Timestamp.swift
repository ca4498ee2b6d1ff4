import Glibc

/// Wall-clock time in nanoseconds since the epoch: the unit of every time ubiqfs stores.
public enum Timestamp {
    public static func now() -> Int64 {
        var ts = Glibc.timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Nanoseconds as a timespec, with floor division so times before 1970 stay valid.
    public static func timespec(_ nanoseconds: Int64) -> Glibc.timespec {
        var seconds = nanoseconds / 1_000_000_000
        var rest = nanoseconds % 1_000_000_000
        if rest < 0 {
            seconds -= 1
            rest += 1_000_000_000
        }
        return Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int(rest))
    }

    /// `YYYY-MM-DD HHMMSS` in UTC, for conflict copy names.
    public static func conflictStamp(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))"
    }
}
