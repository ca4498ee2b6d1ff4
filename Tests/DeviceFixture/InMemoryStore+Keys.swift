import ContainerStore

extension InMemoryStore {
    /// How many objects the store holds under `prefix` (journal records, blocks...).
    public func count(under prefix: String) -> Int {
        keys.filter { $0.hasPrefix(prefix) }.count
    }
}
