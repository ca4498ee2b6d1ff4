import Synchronization

/// Blocks whose put failed: perhaps stored, perhaps not (a lost reply). The next upload of
/// one asks the store first, so a link that keeps losing replies still gets each block
/// through once instead of failing the same blind put for ever. Bounded: past the bound
/// some are forgotten (each is then put blindly once more).
final class UncertainBlocks: Sendable {
    private let hashes = Mutex<Set<String>>([])
    private static let bound = 10_000

    func contains(_ hash: String) -> Bool { hashes.withLock { $0.contains(hash) } }

    func insert(_ hash: String) {
        hashes.withLock { hashes in
            if hashes.count >= Self.bound, let any = hashes.first { hashes.remove(any) }
            hashes.insert(hash)
        }
    }

    func remove(_ hash: String) {
        _ = hashes.withLock { $0.remove(hash) }
    }
}
