import Inodes
import Synchronization

/// Downloads and uploads in flight and the last error per item, readable from libfuse
/// threads without touching the sync actor (for `user.ubiqfs.state/progress/error`).
public final class TransferTable: Sendable {
    public enum Direction: String, Sendable { case download, upload }

    public struct Transfer: Sendable {
        public var direction: Direction
        public var done: Int64
        public var total: Int64

        public var percent: Int { total > 0 ? Int(min(100, done * 100 / total)) : 0 }
    }

    /// Why a download stopped: a store that cannot be reached is told apart (ENETUNREACH
    /// for the reader) from content that cannot be served (EIO).
    public struct Failure: Sendable, Equatable {
        public var reason: String
        public var unreachable: Bool
        /// The cache disk was full (ENOSPC for the reader).
        public var noSpace = false
    }

    /// Whether a byte range of a streamed download can be read now.
    public enum RangeStatus: Sendable, Equatable {
        case ready
        case missing
        case failed(Failure)
    }

    /// The blocks of one download as they arrive. Kept after a failure (its holes must
    /// never be served as zeros); dropped after success (everything is there).
    struct Stream {
        var offsets: [Int64]
        var lengths: [Int64]
        var present: [Bool]
        var failure: Failure?
    }

    private struct State {
        var transfers: [Inode: Transfer] = [:]
        var errors: [Inode: String] = [:]
        var streams: [UInt64: Stream] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func transfer(_ ino: Inode) -> Transfer? { state.withLock { $0.transfers[ino] } }
    public func error(_ ino: Inode) -> String? { state.withLock { $0.errors[ino] } }

    public func rangeStatus(_ generation: UInt64, offset: Int64, length: Int) -> RangeStatus {
        state.withLock { state in
            guard let stream = state.streams[generation] else { return .ready }
            if let failure = stream.failure { return .failed(failure) }
            let end = offset + Int64(length)
            for index in stream.offsets.indices where stream.offsets[index] < end && stream.offsets[index] + stream.lengths[index] > offset {
                if !stream.present[index] { return .missing }
            }
            return .ready
        }
    }

    /// The first block of the range not downloaded yet.
    func firstMissing(_ generation: UInt64, offset: Int64, length: Int) -> Int? {
        state.withLock { state in
            guard let stream = state.streams[generation] else { return nil }
            let end = offset + Int64(length)
            return stream.offsets.indices.first { index in
                stream.offsets[index] < end && stream.offsets[index] + stream.lengths[index] > offset && !stream.present[index]
            }
        }
    }

    func registerStream(_ generation: UInt64, lengths: [Int64]) {
        var offsets: [Int64] = []
        var offset: Int64 = 0
        for length in lengths {
            offsets.append(offset)
            offset += length
        }
        state.withLock { $0.streams[generation] = Stream(offsets: offsets, lengths: lengths, present: lengths.map { _ in false }) }
    }

    func markPresent(_ generation: UInt64, _ index: Int) {
        state.withLock { $0.streams[generation]?.present[index] = true }
    }

    func finishStream(_ generation: UInt64, failure: Failure?) {
        state.withLock { state in
            if let failure { state.streams[generation]?.failure = failure } else { state.streams.removeValue(forKey: generation) }
        }
    }

    func begin(_ ino: Inode, _ direction: Direction, total: Int64) {
        state.withLock { $0.transfers[ino] = Transfer(direction: direction, done: 0, total: total) }
    }

    func progress(_ ino: Inode, done: Int64) {
        state.withLock { $0.transfers[ino]?.done = done }
    }

    /// Ends the transfer; a failure is remembered until the item's next success.
    func end(_ ino: Inode, error: String?) {
        state.withLock {
            $0.transfers.removeValue(forKey: ino)
            if let error { $0.errors[ino] = error } else { $0.errors.removeValue(forKey: ino) }
        }
    }
}
