import ContainerStore

/// The two directions of content transfer, each with its own gate: uploads and downloads
/// share a link's two ways, not each other's slots (`--transfers`, `--bwlimit UP:DOWN`).
public struct TransferGates: Sendable {
    public let upload: TransferGate
    public let download: TransferGate

    init(_ configuration: SyncConfiguration, congestion: StoreCongestion?) {
        let transfers = configuration.transfers
        let memory = configuration.transferBytesInFlight
        upload = TransferGate(.init(transfers: transfers, bytesInFlight: memory, bytesPerSecond: configuration.uploadBytesPerSecond), congestion: congestion)
        download = TransferGate(.init(transfers: transfers, bytesInFlight: memory, bytesPerSecond: configuration.downloadBytesPerSecond), congestion: congestion)
    }
}
