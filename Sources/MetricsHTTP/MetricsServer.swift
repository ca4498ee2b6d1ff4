import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 server for Prometheus: `GET` (or `HEAD`) of a path is answered by
/// `respond`, one request per connection. Its own event loop thread, so a slow scrape
/// never holds a kernel request or the engine.
public final class MetricsServer: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: String

        public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    public typealias Respond = @Sendable (_ path: String) async -> Response

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    /// The address bound (the port chosen when 0 was asked).
    public let boundPort: Int

    public init(_ address: MetricsAddress, respond: @escaping Respond) throws(Failure) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 32)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(RequestHandler(respond: respond))
                }
            }
        do {
            channel = try bootstrap.bind(host: address.host, port: address.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw Failure(description: "cannot serve metrics on \(address): \(error)")
        }
        self.group = group
        boundPort = channel.localAddress?.port ?? address.port
    }

    public func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}

private final class RequestHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let respond: MetricsServer.Respond
    private var head: HTTPRequestHead?

    init(respond: @escaping MetricsServer.Respond) {
        self.respond = respond
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        guard head.method == .GET || head.method == .HEAD else {
            write(MetricsServer.Response(status: 405, body: "only GET\n"), head: head, bound.value)
            return
        }
        let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
        let respond = self.respond
        context.eventLoop.makeFutureWithTask { await respond(path) }.whenSuccess { [self] response in
            write(response, head: head, bound.value)
        }
    }

    private func write(_ response: MetricsServer.Response, head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        let body = Array(response.body.utf8)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: response.contentType)
        headers.add(name: "content-length", value: String(body.count))
        headers.add(name: "connection", value: "close")
        let status = HTTPResponseStatus(statusCode: response.status)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}
