/// How this device takes part in thumbnails (issue 39): whether it makes pictures of
/// content it has, and whose desktop cache it fills with other devices' pictures.
public struct ThumbnailSettings: Sendable {
    /// Make pictures of content this device uploads or downloads, for the other devices.
    public var making: Bool
    /// The freedesktop cache to fill (`$XDG_CACHE_HOME/thumbnails`); nil installs nothing.
    public var cacheRoot: String?
    /// The mountpoint as viewers name it (the files' URIs start with it).
    public var mountpoint: String
    /// The size fetched from the container: the largest it holds up to this, else the
    /// smallest above (GNOME Files asks for 256, "large", at a screen scale of 1).
    public var preferredSize: Int
    /// Files larger than this are not thumbnailed here (a thumbnailer reads them whole).
    public var largestSource: Int64

    public init(making: Bool = true, cacheRoot: String?, mountpoint: String, preferredSize: Int = 256, largestSource: Int64 = 1 << 30) {
        self.making = making
        self.cacheRoot = cacheRoot
        self.mountpoint = mountpoint
        self.preferredSize = preferredSize
        self.largestSource = largestSource
    }

    /// The sizes a device makes: 256 for every viewer at scale 1, 512 for HiDPI ones;
    /// receivers derive 128 from them.
    public static let madeSizes = [512, 256]

    /// `$XDG_CACHE_HOME/thumbnails`, else `$HOME/.cache/thumbnails` (as GLib finds it).
    public static func userCacheRoot(environment: [String: String]) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/thumbnails" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.cache/thumbnails"
    }
}
