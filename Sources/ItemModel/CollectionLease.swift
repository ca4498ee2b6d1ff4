/// `gc/lease-<n>`: one collector at a time. The newest number is the lease; a collector
/// takes `n + 1` with put-if-absent once lease `n` has expired, so a killed collector
/// holds it only until `expires`. Safety never depends on it (two collectors delete
/// nothing a record names); it keeps them from doing the work twice.
public struct CollectionLease: Hashable, Sendable, Codable {
    public var run: String
    public var device: String
    public var deviceName: String
    /// Nanoseconds since 1970, by the holder's clock.
    public var expires: Int64

    public init(run: String, device: String, deviceName: String, expires: Int64) {
        self.run = run
        self.device = device
        self.deviceName = deviceName
        self.expires = expires
    }
}
