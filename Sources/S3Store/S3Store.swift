import AsyncHTTPClient
import ContainerStore
import Foundation
import ItemModel
import NIOCore
import NIOHTTP1

/// A container in an S3-compatible bucket (AWS S3, SeaweedFS, Ceph RGW, MinIO, R2...),
/// over the S3 REST API with Signature V4. Objects are `PREFIX/CONTAINER/KEY`.
/// Put-if-absent is `PUT` with `If-None-Match: *` (412: another writer won), which
/// `verify()` checks the service honours before a mount relies on it. Transient failures
/// (5xx, 429/SlowDown, timeouts, dropped connections) are retried with exponential backoff
/// and full jitter; connections are pooled and reused by one HTTP client.
public struct S3Store: ContainerStore {
    public let settings: S3Settings
    public let container: String
    private let signer: SigV4Signer
    let client: HTTPClient
    let retry: S3RetryPolicy
    /// Throttling replies (`SlowDown`, 429, 503), for the transfer scheduler.
    public let congestion: StoreCongestion? = StoreCongestion()

    /// The largest object a GET reads into memory: a block (4 MiB) or a checkpoint.
    static let maxObjectSize = 1 << 30

    /// One client for the process: pooled, reused connections to each endpoint. It never
    /// retries a refused connection itself (it would wait for its whole connect timeout);
    /// `S3RetryPolicy` does, with jitter, so an absent service is reported in seconds.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = HTTPClient.Configuration.Timeout(connect: .seconds(10), read: .seconds(30))
        configuration.connectionPool.retryConnectionEstablishment = false
        // Transfers overlap (up to `--transfers` at once each way, 64 by default): the
        // client's default of 8 connections per host would queue the rest behind them.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 160
        // A redirect (a bucket in another region) is an answer to report, not to follow:
        // the signature names the host it was made for.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(settings: S3Settings, container: String, retry: S3RetryPolicy = S3RetryPolicy(), client: HTTPClient = S3Store.sharedClient) throws(StoreError) {
        guard ItemName.isValid(ByteString(container)) else {
            throw StoreError(code: .invalidKey, message: "container name '\(container)' is not a valid folder name")
        }
        self.settings = settings
        self.container = container
        self.retry = retry
        self.client = client
        signer = SigV4Signer(credentials: settings.credentials, region: settings.region)
    }

    public var displayName: String {
        let location = settings.location
        return "s3://\(location.bucket)/" + (location.prefix.isEmpty ? "" : location.prefix + "/") + container
            + (settings.pathStyle ? " at \(settings.endpointDescription)" : "")
    }

    private var basePrefix: String {
        (settings.location.prefix.isEmpty ? "" : settings.location.prefix + "/") + container + "/"
    }

    // MARK: ContainerStore

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        var headers: [(String, String)] = []
        if let range {
            guard try await hasBytes(key, range) else { return [] }
            headers.append(Self.rangeHeader(range))
        }
        // Bounded before the body is read: a store that others write could hold gigabytes there.
        let largest = range.map { $0.count } ?? Int(ContainerLayout.largestObject(atKey: key))
        let response = try await send("GET", objectPath(key), headers: headers, what: "read \(key)", largest: (key, largest))
        switch response.status {
        case 200, 206: return response.body
        case 416: return [] // The range starts at or after the end: nothing there.
        default: throw readFailure(response, key)
        }
    }

    /// A range to ask for: refused if negative; an empty one asks nothing but checks the
    /// object is there, as a read of bytes would.
    func hasBytes(_ key: String, _ range: Range<Int64>) async throws(StoreError) -> Bool {
        guard range.lowerBound >= 0 else { throw StoreError(code: .invalidKey, message: "negative range for \(key)") }
        guard range.isEmpty else { return true }
        guard try await exists(key) else { throw StoreError(code: .notFound, message: "no object \(key)") }
        return false
    }

    static func rangeHeader(_ range: Range<Int64>) -> (String, String) {
        ("range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
    }

    /// A read's error reply: an absent object (not a missing bucket) is `.notFound`.
    func readFailure(_ response: Response, _ key: String) -> StoreError {
        if response.status == 404 && response.code != "NoSuchBucket" { return StoreError(code: .notFound, message: "no object \(key)") }
        return failure(response, "cannot read \(key)")
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        let response = try await send("PUT", objectPath(key), body: bytes, what: "store \(key)")
        guard response.status == 200 else { throw failure(response, "cannot store \(key)") }
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        var attempt = 0
        while true {
            let response = try await send("PUT", objectPath(key), headers: [("if-none-match", "*")], body: bytes, what: "commit \(key)")
            switch response.status {
            case 200: return true
            case 412: return false
            case 409 where attempt < retry.maxAttempts:
                // ConditionalRequestConflict: a concurrent conditional write to the key is in
                // flight; ask again, and the answer is 200 or 412.
                attempt += 1
                try await retry.pause(attempt)
            default: throw failure(response, "cannot commit \(key)")
            }
        }
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool {
        let response = try await send("HEAD", objectPath(key), what: "check \(key)")
        switch response.status {
        case 200: return true
        case 404: return false
        default: throw failure(response, "cannot check \(key)")
        }
    }

    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await listObjects(prefix: prefix, startAfter: startAfter, limit: limit).map(\.key)
    }

    /// ListObjectsV2: each `Contents` has one `Key` and one `Size`, in that order.
    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        var query = [("list-type", "2"), ("prefix", basePrefix + prefix), ("max-keys", String(max(1, min(limit, 1000))))]
        if let startAfter { query.append(("start-after", basePrefix + startAfter)) }
        let response = try await send("GET", bucketPath, query: query, what: "list \(prefix)")
        guard response.status == 200 else { throw failure(response, "cannot list \(prefix)") }
        let document = String(decoding: response.body, as: UTF8.self)
        let base = basePrefix
        let keys = S3XML.values(of: "Key", in: document)
        let sizes = S3XML.values(of: "Size", in: document)
        return zip(keys, sizes.count == keys.count ? sizes : keys.map { _ in "-1" }).compactMap { key, size in
            key.hasPrefix(base) ? StoredObject(key: String(key.dropFirst(base.count)), size: Int64(size) ?? -1) : nil
        }.prefix(limit).map { $0 }
    }

    public func delete(_ key: String) async throws(StoreError) {
        let response = try await send("DELETE", objectPath(key), what: "delete \(key)")
        guard response.status == 204 || response.status == 200 || response.status == 404 else {
            throw failure(response, "cannot delete \(key)")
        }
    }

    /// A service that ignores `If-None-Match: *` would let two devices overwrite each
    /// other's commits: two conditional PUTs of one probe key must give 200 then 412.
    public func verify() async throws(StoreError) {
        let key = ".ubiqfs-probe/" + ItemID.random().rawValue
        let first = try await putIfAbsent(key, Array("probe".utf8))
        let second = try await putIfAbsent(key, Array("probe again".utf8))
        try? await delete(key)
        guard first, !second else {
            throw StoreError(
                code: .unsupported,
                message: "\(settings.endpointDescription) does not honour conditional writes (PUT with If-None-Match: *): two devices could overwrite each other's commits there, so ubiqfs will not use it"
            )
        }
    }

    /// Creates the bucket (for tests and first-time setup); an existing bucket of ours is fine.
    public func createBucket() async throws(StoreError) {
        let response = try await send("PUT", bucketPath, what: "create bucket \(settings.location.bucket)")
        guard response.status == 200 || response.code == "BucketAlreadyOwnedByYou" else {
            throw failure(response, "cannot create bucket \(settings.location.bucket)")
        }
    }

    // MARK: Requests

    struct Response {
        var status: UInt
        var body: [UInt8]
        /// The S3 error code of an error reply (`NoSuchBucket`, `SlowDown`...).
        var code: String?
        var message: String?

        /// An error reply's code and message are read from its XML document.
        init(status: UInt, body: [UInt8]) {
            self.status = status
            self.body = body
            if status >= 300 {
                let document = String(decoding: body, as: UTF8.self)
                code = S3XML.value(of: "Code", in: document)
                message = S3XML.value(of: "Message", in: document)
            }
        }
    }

    private var bucketPath: String {
        settings.pathStyle ? "/" + settings.location.bucket : "/"
    }

    func objectPath(_ key: String) -> String {
        (settings.pathStyle ? "/" + settings.location.bucket : "") + "/" + SigV4Signer.encode(basePrefix + key, slash: false)
    }

    /// One signed request, retried while the failure is transient.
    private static func tooLarge(_ key: String, _ size: Int?, _ largest: Int) -> StoreError {
        StoreError(code: .corrupt, message: "\(key) is \(size.map { "\($0) bytes" } ?? "larger"), more than the \(largest) an object there may have; refused as damaged, not read")
    }

    private func send(
        _ method: String, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [],
        body: [UInt8]? = nil, what: String, largest: (key: String, bytes: Int)? = nil
    ) async throws(StoreError) -> Response {
        var attempt = 0
        while true {
            let outcome: Result<Response, any Error>
            do {
                outcome = .success(try await sendOnce(method, path, query: query, headers: headers, body: body, largest: largest))
            } catch {
                outcome = .failure(error)
            }
            attempt += 1
            switch outcome {
            case .success(let response) where !S3RetryPolicy.isTransient(response.status, response.code):
                return response
            case .success(let response):
                try checkRetry(TransientReply(status: response.status, code: response.code), attempt: attempt, what: what)
            case .failure(let error):
                try checkRetry(error, attempt: attempt, what: what)
            }
            try await retry.pause(attempt)
        }
    }

    /// A reply to ask again (5xx, throttling).
    struct TransientReply: Error {
        var status: UInt
        var code: String?
    }

    /// After a failed attempt, throws what is not worth another (an error of ours, a TLS
    /// failure, a cancelled caller, the last attempt); otherwise the caller pauses and asks
    /// again. A throttling reply is counted for the transfer scheduler.
    func checkRetry(_ error: any Error, attempt: Int, what: String) throws(StoreError) {
        if let error = error as? StoreError { throw error }
        if let reply = error as? TransientReply {
            if S3RetryPolicy.isThrottling(reply.status, reply.code) { congestion?.noteThrottled() }
            guard attempt < retry.maxAttempts else {
                throw StoreError(code: .unreachable, message: "cannot \(what): \(settings.endpointDescription) keeps answering \(reply.status) \(reply.code ?? "")")
            }
            return
        }
        if Task.isCancelled { throw StoreError(code: .unreachable, message: "cannot \(what): cancelled", cause: error) }
        if S3RetryPolicy.isTLSFailure(error) {
            throw StoreError(code: .configuration, message: "cannot \(what): TLS with \(settings.endpointDescription) failed (certificate not trusted?)", cause: error)
        }
        guard attempt < retry.maxAttempts else {
            throw StoreError(code: .unreachable, message: "cannot \(what): \(settings.endpointDescription) cannot be reached", cause: error)
        }
    }

    private func sendOnce(
        _ method: String, _ path: String, query: [(String, String)], headers: [(String, String)], body: [UInt8]?,
        largest: (key: String, bytes: Int)?
    ) async throws -> Response {
        let request = request(method, path, query: query, headers: headers, body: body)
        let response = try await client.execute(request, timeout: retry.requestTimeout)
        var limit = Self.maxObjectSize
        if let largest, response.status.code < 300 {
            let declared = response.headers.first(name: "content-length").flatMap(Int.init)
            if let declared, declared > largest.bytes { throw Self.tooLarge(largest.key, declared, largest.bytes) }
            limit = largest.bytes
        }
        var buffer: ByteBuffer
        do { buffer = try await response.body.collect(upTo: limit) } catch is NIOTooManyBytesError {
            throw Self.tooLarge(largest?.key ?? path, nil, limit)
        }
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        return Response(status: response.status.code, body: bytes)
    }

    /// A signed request, ready to send.
    func request(
        _ method: String, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [], body: [UInt8]? = nil
    ) -> HTTPClientRequest {
        let hostHeader = settings.host + (settings.port.map { ":\($0)" } ?? "")
        let payloadHash = body.map(SigV4Signer.payloadHash) ?? SigV4Signer.emptyPayloadHash
        let signed = signer.sign(method: method, host: hostHeader, path: path, query: query, headers: headers, payloadHash: payloadHash, date: Date())
        let queryString = query.map { "\(SigV4Signer.encode($0.0, slash: true))=\(SigV4Signer.encode($0.1, slash: true))" }.joined(separator: "&")
        var request = HTTPClientRequest(url: "\(settings.scheme)://\(hostHeader)\(path)" + (queryString.isEmpty ? "" : "?" + queryString))
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers + signed { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }

    /// A clear error for a reply that is not what the request wanted.
    func failure(_ response: Response, _ what: String) -> StoreError {
        let bucket = settings.location.bucket
        let detail = response.message.map { ": \($0)" } ?? ""
        switch (response.status, response.code) {
        case (_, "NoSuchBucket"):
            return StoreError(code: .configuration, message: "\(what): the bucket \(bucket) does not exist at \(settings.endpointDescription)")
        case (_, "InvalidAccessKeyId"):
            return StoreError(code: .accessDenied, message: "\(what): the access key \(settings.credentials.accessKeyID) is not known to \(settings.endpointDescription)")
        case (_, "SignatureDoesNotMatch"):
            return StoreError(code: .accessDenied, message: "\(what): the secret key does not match the access key \(settings.credentials.accessKeyID)")
        case (403, _):
            return StoreError(code: .accessDenied, message: "\(what): access denied to bucket \(bucket) for \(settings.credentials.accessKeyID)\(detail)")
        case (_, "RequestTimeTooSkewed"):
            return StoreError(code: .configuration, message: "\(what): this machine's clock is too far from \(settings.endpointDescription)'s (check NTP)")
        case (301, _), (307, _), (_, "PermanentRedirect"), (_, "AuthorizationHeaderMalformed"):
            return StoreError(code: .configuration, message: "\(what): the bucket \(bucket) is in another region than \(settings.region) (set AWS_REGION)\(detail)")
        default:
            return StoreError(code: .io, message: "\(what): \(settings.endpointDescription) answered \(response.status) \(response.code ?? "")\(detail)")
        }
    }
}
