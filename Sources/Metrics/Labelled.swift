import Synchronization

/// Counters or histograms by label values, made on first use. A caller on a hot path
/// looks its child up once and keeps it.
public final class Labelled<Metric: AnyObject & Sendable>: Sendable {
    public let labelNames: [String]
    private let make: @Sendable () -> Metric
    private let children = Mutex<[[String]: Metric]>([:])

    public init(_ labelNames: [String], make: @escaping @Sendable () -> Metric) {
        self.labelNames = labelNames
        self.make = make
    }

    public func child(_ values: [String]) -> Metric {
        precondition(values.count == labelNames.count, "label values do not match \(labelNames)")
        return children.withLock { children in
            if let metric = children[values] { return metric }
            let metric = make()
            children[values] = metric
            return metric
        }
    }

    public func child(_ values: String...) -> Metric { child(values) }

    /// Every child made so far, in label order (a stable exposition).
    public var all: [(labels: [String], metric: Metric)] {
        children.withLock { $0.map { ($0.key, $0.value) } }.sorted { $0.labels.lexicographicallyPrecedes($1.labels) }
    }
}
