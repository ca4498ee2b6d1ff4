import CloudFileSystem
import ContainerStore
import Foundation
import Glibc
import ItemModel
import SyncEngine

/// Where a mount's passphrase comes from, in order: `--passphrase-file`, the file
/// `UBIQFS_PASSPHRASE_FILE` names, the systemd credential `ubiqfs-passphrase`
/// (`LoadCredential=`), and last a prompt on the terminal, only when one is needed (a new
/// encrypted container, or an encrypted one this device has no key for yet).
enum Passphrase {
    static let credential = "ubiqfs-passphrase"

    static func resolve(_ options: MountOptions) throws -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let file = options.passphraseFile ?? environment["UBIQFS_PASSPHRASE_FILE"] { return try read(file) }
        if let directory = environment["CREDENTIALS_DIRECTORY"], access(directory + "/" + credential, R_OK) == 0 {
            return try read(directory + "/" + credential)
        }
        guard isatty(0) == 1, try needed(options) else { return nil }
        return try ask(confirm: options.encrypt)
    }

    /// The first line of `path`, without its line ending (`\n` or `\r\n`): the same bytes
    /// whichever editor wrote the file. Not normalised: the key is made from these bytes.
    static func read(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: Paths.absolute(path)) else {
            throw CommandFailure("cannot read the passphrase file \(path)")
        }
        return try firstLine(of: Array(data), in: path)
    }

    static func firstLine(of bytes: [UInt8], in path: String) throws -> String {
        var line = bytes.prefix { $0 != 0x0A }
        if line.last == 0x0D { line = line.dropLast() }
        guard !line.isEmpty else { throw CommandFailure("the passphrase file \(path) is empty") }
        guard let text = String(validating: line, as: UTF8.self) else {
            throw CommandFailure("the passphrase file \(path) is not UTF-8 text")
        }
        return text
    }

    /// Whatever `fd` holds, then closes it (the daemon's end of its launcher's pipe).
    static func read(fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[0 ..< count]
        }
        close(fd)
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// A new encrypted container, or an encrypted one whose key this device does not keep.
    private static func needed(_ options: MountOptions) throws -> Bool {
        if options.encrypt { return true }
        if access(options.resolvedStateDir + "/" + DeviceStack.keyFile, F_OK) == 0 { return false }
        let store = try StoreOpener.open(options.resolvedStore, container: options.resolvedContainer, faults: nil, allowPlainHTTP: options.allowPlainHTTP)
        let bytes = try? Blocking.wait { try await StoreDeadline.run(.seconds(15)) { () throws(StoreError) in try await store.get(ContainerLayout.infoKey) } }
        return bytes.flatMap { try? RecordCodec.decode(ContainerInfo.self, from: $0) }?.encryption != nil
    }

    /// Read from the terminal without echo; twice when it is a new one.
    static func ask(confirm: Bool) throws -> String {
        let first = try prompt(confirm ? "New passphrase for the container: " : "Passphrase of the container: ")
        if confirm, try prompt("The same again: ") != first { throw CommandFailure("the two passphrases differ") }
        return first
    }

    static func prompt(_ text: String) throws -> String {
        var saved = termios()
        let terminal = tcgetattr(0, &saved) == 0
        if terminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSANOW, &quiet)
        }
        FileHandle.standardError.write(Data(text.utf8))
        let line = Swift.readLine(strippingNewline: true)
        if terminal { tcsetattr(0, TCSANOW, &saved) }
        FileHandle.standardError.write(Data("\n".utf8))
        guard let line, !line.isEmpty else { throw CommandFailure("no passphrase given") }
        return line
    }
}
