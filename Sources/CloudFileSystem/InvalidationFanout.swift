import SyncEngine

/// The sync engine's invalidations, to the kernel's notifier and to what else keeps state
/// about names (the ignore rules' paths).
struct InvalidationFanout: InvalidationSink {
    let sinks: [any InvalidationSink]

    init(_ sinks: [any InvalidationSink]) { self.sinks = sinks }

    func invalidate(_ invalidations: [KernelInvalidation]) {
        for sink in sinks { sink.invalidate(invalidations) }
    }
}
