import ItemModel

/// Why an encryption step failed. `wrongPassphrase`: no key object opens with it;
/// `tampered`: an object does not open or is not bound to its place (the store changed it);
/// `locked`: the container is encrypted and no key was given.
public enum CryptoErrorCode: String, ErrorCode {
    case wrongPassphrase, tampered, locked, invalid, io, unreachable
}

public typealias CryptoError = CodedError<CryptoErrorCode>
