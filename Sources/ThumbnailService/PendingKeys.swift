/// Keys waiting to be handled, each once, in the order they first came.
struct PendingKeys<Key: Hashable> {
    private var order: [Key] = []
    private var head = 0
    private var waiting: Set<Key> = []

    var isEmpty: Bool { head == order.count }

    mutating func add<Keys: Sequence>(_ keys: Keys) where Keys.Element == Key {
        for key in keys where waiting.insert(key).inserted { order.append(key) }
    }

    mutating func next() -> Key? {
        guard head < order.count else { return nil }
        let key = order[head]
        head += 1
        waiting.remove(key)
        if head == order.count { (order, head) = ([], 0) }
        return key
    }

    mutating func removeAll() {
        (order, head, waiting) = ([], 0, [])
    }
}
