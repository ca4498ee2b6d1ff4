import Foundation

/// JSON encoding of store objects: sorted keys so equal values give equal bytes
/// (checkpoints are deterministic), and a size limit so a hostile object cannot
/// exhaust memory.
public enum RecordCodec {
    /// Larger records or checkpoints are refused when read (a checkpoint of 1M items is ~300 MB).
    public static let maxObjectSize = 512 * 1024 * 1024
    /// Larger journal records are refused when read: one record's cost stays bounded (a
    /// writer cuts its pushes below it, and below `JournalRecord.maxOperations`).
    public static let maxRecordSize = 64 * 1024 * 1024

    public static func encode<T: Encodable>(_ value: T) throws(RecordError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw RecordError(code: .encoding, message: "cannot encode \(T.self)", cause: error)
        }
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(RecordError) -> T {
        guard bytes.count <= maxObjectSize else {
            throw RecordError(code: .tooLarge, message: "object of \(bytes.count) bytes is larger than allowed", cause: nil)
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw RecordError(code: .malformed, message: "malformed \(T.self)", cause: error)
        }
    }
}
