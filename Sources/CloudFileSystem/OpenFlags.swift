import CSystemShims

/// Open flags that Swift's Glibc module does not name (GNU extensions).
enum OpenFlags {
    /// `O_DIRECT`: the program asks for I/O around the page cache.
    static let direct = CSystemShims_o_direct()
}
