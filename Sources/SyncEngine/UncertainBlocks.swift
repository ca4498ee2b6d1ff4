import Synchronization

/// Blocks whose put failed: perhaps stored, perhaps not (a lost reply). The next upload of
/// one asks the store first, so a link that keeps losing replies still gets each block
/// through once instead of failing the same blind put for ever. Bounded: past the bound
/// the oldest are forgotten (then put blindly once more).
final class UncertainBlocks: Sendable {
    private struct State {
        var hashes: Set<String> = []
        var order: [String] = []
    }

    private let state = Mutex(State())
    private static let bound = 10_000

    func contains(_ hash: String) -> Bool { state.withLock { $0.hashes.contains(hash) } }

    func insert(_ hash: String) {
        state.withLock { state in
            guard state.hashes.insert(hash).inserted else { return }
            state.order.append(hash)
            if state.order.count > Self.bound {
                let dropped = state.order.prefix(state.order.count - Self.bound)
                state.hashes.subtract(dropped)
                state.order.removeFirst(dropped.count)
            }
        }
    }

    func remove(_ hash: String) {
        state.withLock { _ = $0.hashes.remove(hash) }
    }
}
