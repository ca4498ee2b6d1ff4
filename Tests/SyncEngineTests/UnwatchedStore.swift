import ContainerStore

/// A store that gives no watch: a device on it pulls only when a test syncs it, so a
/// workload's view of the tree cannot change under it between two of its steps (a local
/// folder store's inotify would start pulls at any time).
struct UnwatchedStore: ForwardingStore {
    let base: any ContainerStore
}
