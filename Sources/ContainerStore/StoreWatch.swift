/// A running watch on a store's keys (see `ContainerStore.watch`): stopping it ends the
/// callbacks. Stores that cannot watch return none, and the sync engine polls.
public protocol StoreWatch: Sendable {
    func stop()
}
