import ContainerStore
import ItemModel
import Testing

@Suite struct MeasuredStoreTests {
    @Test func countsBytesObjectsTimesAndFailuresByKind() async throws {
        let faulty = FaultyStore(InMemoryStore(), faults: StoreFaults())
        let store = MeasuredStore(faulty)
        try await store.put("blocks/a", [UInt8](repeating: 1, count: 1000))
        #expect(try await store.putIfAbsent("journal/1", [1, 2, 3]))
        // Lost the race: nothing was sent that landed.
        #expect(try await !store.putIfAbsent("journal/1", [4, 5]))
        _ = try await store.get("blocks/a", range: 10..<110)
        // A missing object is an answer, not a failure.
        await #expect(throws: StoreError.self) { try await store.get("blocks/none", range: nil) }
        faulty.faults = try StoreFaults(parsing: "errors=1")
        await #expect(throws: StoreError.self) { try await store.exists("blocks/a") }
        await #expect(throws: StoreError.self) { try await store.list(prefix: "blocks/", startAfter: nil, limit: 10) }
        #expect(store.bytesUp.value == 1003 && store.objectsUp.value == 2)
        #expect(store.bytesDown.value == 100 && store.objectsDown.value == 1)
        let errors = store.errors.all.map { ($0.labels, $0.metric.value) }
        #expect(errors.map(\.0) == [["exists", "unreachable"], ["list", "unreachable"]])
        #expect(errors.allSatisfy { $0.1 == 1 })
        let counts = Dictionary(uniqueKeysWithValues: store.durations.all.map { ($0.labels[0], $0.metric.snapshot.cumulative.last ?? 0) })
        #expect(counts == ["get": 2, "put": 1, "put_if_absent": 2, "exists": 1, "list": 1, "delete": 0])
    }
}
