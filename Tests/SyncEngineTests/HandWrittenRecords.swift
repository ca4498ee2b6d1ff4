import ContainerStore
import ContentCache
import Foundation
import ItemModel

/// Records written by hand into a plain container's journal, as a careless or hostile
/// writer could: each chained to the bytes before it (`prev`), whatever they hold.
struct HandWrittenRecords {
    let store: LocalFolderStore
    var seq: UInt64
    var previous: [UInt8]

    /// Continues the journal after its last record.
    init(store: LocalFolderStore) async throws {
        self.store = store
        let keys = try await store.listAll(prefix: ContainerLayout.journalPrefix)
        seq = keys.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.journalPrefix) }.max() ?? 0
        previous = seq == 0 ? [] : try await store.get(ContainerLayout.journalKey(seq))
    }

    /// Appends a record of `fields` (JSON members, without braces); `"prev"` is added.
    mutating func append(_ fields: String) async throws {
        let json = "{\(fields),\"prev\":\"\(ContentHasher.sha256Hex(previous))\"}"
        seq += 1
        previous = Array(json.utf8)
        guard try await store.putIfAbsent(ContainerLayout.journalKey(seq), previous) else {
            throw StoreError(code: .io, message: "journal/\(seq) was taken")
        }
    }

    /// A record's usual members around `ops` (a JSON array).
    static func record(ops: String, extra: String = "", format: Int = 2) -> String {
        #""format":\#(format),"device":"hand","deviceName":"hand","commit":"\#(ItemID.random().rawValue)","time":1800000000000000000,"ops":\#(ops)\#(extra)"#
    }

    /// An upsert of a file whose content travels inline.
    static func file(id: String, parent: String, name: String, content: String, mode: Int = 420, extra: String = "") -> String {
        let bytes = Array(content.utf8)
        let block = #"{"h":"\#(ContentHasher.sha256Hex(bytes))","n":\#(bytes.count),"d":"\#(Data(bytes).base64EncodedString())"}"#
        return #"{"op":"upsert","item":{"id":"\#(id)","parent":"\#(parent)","name":"\#(name)","kind":"file","mode":\#(mode),"mtime":1700000000000000000,"size":\#(bytes.count),"blocks":[\#(block)]\#(extra)}}"#
    }

    /// An upsert of a link (format 3): `name` in `parent` for the item `of`.
    static func link(id: String, parent: String, name: String, of item: String) -> String {
        #"{"op":"upsert","item":{"id":"\#(id)","parent":"\#(parent)","name":"\#(name)","kind":"link","mode":0,"mtime":0,"size":0,"of":"\#(item)"}}"#
    }
}
