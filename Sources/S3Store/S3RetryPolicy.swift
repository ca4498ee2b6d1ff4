import AsyncHTTPClient
import ContainerStore
import NIOCore

/// How often and how patiently S3 requests are retried: exponential backoff with full
/// jitter (the AWS recommendation), within the sync engine's own time limit per call.
public struct S3RetryPolicy: Sendable {
    public var maxAttempts = 5
    public var baseDelay: Duration = .milliseconds(100)
    public var maxDelay: Duration = .seconds(5)
    /// One request's whole exchange; a block is 4 MiB.
    public var requestTimeout: TimeAmount = .seconds(50)

    public init() {}

    /// Retried: server errors, throttling and timeouts, whatever the service calls them.
    static func isTransient(_ status: UInt, _ code: String?) -> Bool {
        if [500, 502, 503, 504, 429].contains(status) { return true }
        return ["SlowDown", "InternalError", "RequestTimeout", "ServiceUnavailable"].contains(code ?? "")
    }

    /// The service asks for fewer requests: fewer transfers at once, not just a retry.
    static func isThrottling(_ status: UInt, _ code: String?) -> Bool {
        status == 429 || status == 503 || code == "SlowDown"
    }

    static func isTLSFailure(_ error: any Error) -> Bool {
        String(reflecting: type(of: error)).contains("SSL")
    }

    func pause(_ attempt: Int) async throws(StoreError) {
        let ceiling = min(baseDelay * (1 << min(attempt, 16)), maxDelay)
        let delay = ceiling * Double.random(in: 0...1)
        do { try await Task.sleep(for: delay) } catch {
            throw StoreError(code: .unreachable, message: "cancelled while waiting to retry", cause: error)
        }
    }
}
