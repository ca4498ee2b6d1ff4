/// A time `setattr` asks for: the daemon's current time (`touch`), or an explicit one (`touch -d`).
public enum FuseTimeChange: Sendable, Hashable {
    case now
    case time(FuseTimespec)
}
