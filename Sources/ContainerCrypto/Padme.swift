/// Padmé padding (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
/// Communication with PURBs", 2019): a length rounded up so that at most about log2 of its
/// bits vary. The overhead is at most 12%, and an object's size tells only its order of
/// magnitude and a few leading bits.
public enum Padme {
    public static func paddedLength(_ length: Int) -> Int {
        guard length > 2 else { return length }
        let exponent = Int.bitWidth - 1 - length.leadingZeroBitCount
        let bitsOfExponent = Int.bitWidth - exponent.leadingZeroBitCount
        let mask = (1 << (exponent - bitsOfExponent)) - 1
        return (length + mask) & ~mask
    }

    /// The bytes, a 0x80 marker and zeros up to the padded length of `count + 1`.
    public static func pad(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        out.reserveCapacity(paddedLength(bytes.count + 1))
        out.append(0x80)
        out += [UInt8](repeating: 0, count: paddedLength(bytes.count + 1) - out.count)
        return out
    }
}
