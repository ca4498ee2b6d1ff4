import AsyncHTTPClient
import ContainerStore
import NIOCore

/// Ranged reads handed on as they arrive: a sequential reader of a large file uses the
/// first chunks of a long `GET` while the rest is on the way. Packs never change, so a
/// transfer broken midway is asked again from where it stopped: a dropped connection costs
/// what had not arrived, not the whole range.
extension S3Store {
    public func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
        guard try await hasBytes(key, range) else { return }
        var next = range.lowerBound
        // Failures in a row, without a byte between them.
        var failures = 0
        while true {
            let before = next
            do {
                return try await streamOnce(key, next ..< range.upperBound, &next, receive)
            } catch {
                failures = next > before ? 1 : failures + 1
                try checkRetry(error, attempt: failures, what: "read \(key)")
                try await retry.pause(failures)
            }
        }
    }

    /// One `GET` of `rest`, its bytes passed on as they come and `next` moved past them,
    /// until the range or the object ends. A transient reply throws `TransientReply`.
    private func streamOnce(
        _ key: String, _ rest: Range<Int64>, _ next: inout Int64, _ receive: ([UInt8]) async throws(StoreError) -> Void
    ) async throws {
        let request = request("GET", objectPath(key), headers: [Self.rangeHeader(rest)])
        let response = try await client.execute(request, timeout: retry.requestTimeout)
        // A service that ignores `Range` sends the object from its start (200).
        var position: Int64
        switch response.status.code {
        case 206: position = rest.lowerBound
        case 200: position = 0
        case 416: return // The range starts at or after the end: nothing more there.
        default:
            let reply = Response(status: response.status.code, body: Array(buffer: try await response.body.collect(upTo: 1 << 20)))
            if S3RetryPolicy.isTransient(reply.status, reply.code) { throw TransientReply(status: reply.status, code: reply.code) }
            throw readFailure(reply, key)
        }
        for try await buffer in response.body {
            let start = max(position, next), end = min(position + Int64(buffer.readableBytes), rest.upperBound)
            if end > start {
                let piece = buffer.getBytes(at: buffer.readerIndex + Int(start - position), length: Int(end - start)) ?? []
                try await receive(piece)
                next = end
            }
            position += Int64(buffer.readableBytes)
            if next == rest.upperBound { return }
        }
    }
}
