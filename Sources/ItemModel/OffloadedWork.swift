import Dispatch

/// Runs blocking system calls (file I/O on the store or cache) on a Dispatch queue and
/// suspends the caller, so Swift's small cooperative pool is never stuck in a syscall.
public enum OffloadedWork {
    private static let queue = DispatchQueue(label: "ubiqfs.blocking-io", qos: .utility, attributes: .concurrent)

    public static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(E) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
