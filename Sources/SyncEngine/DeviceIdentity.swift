/// This device in the container: a random id kept in the state database (so two state
/// dirs on one host are two devices) and a name people read in conflict copies.
public struct DeviceIdentity: Sendable, Hashable {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}
