/// What a mount brings for an encrypted container (`--encrypt`, `--passphrase-file`):
/// the passphrase, if it has one, whether to create the container encrypted, and where
/// this device keeps the master key once it has it, so remounts need no passphrase.
public struct ContainerUnlock: Sendable {
    public var passphrase: String?
    /// Create the container encrypted if it does not exist yet.
    public var encrypt = false
    /// The master key, kept in the state dir (mode 0600).
    public var keyFile: String?
    /// scrypt's cost (log2 N) of the key objects this device writes (tests lower it).
    public var cost = 17

    public init(passphrase: String? = nil, encrypt: Bool = false, keyFile: String? = nil) {
        self.passphrase = passphrase
        self.encrypt = encrypt
        self.keyFile = keyFile
    }
}
