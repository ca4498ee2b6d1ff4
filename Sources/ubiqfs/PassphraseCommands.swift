import ArgumentParser
import Foundation

/// `ubiqfs passphrase add|change|remove MOUNTPOINT`: the passphrases that open an
/// encrypted container. Each needs one that opens it now; none re-encrypts any data.
struct PassphraseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passphrase",
        abstract: "Add, change or remove a passphrase of an encrypted container.",
        discussion: """
            Several passphrases may open one container. Each command asks for one that opens it now (or reads \
            --passphrase-file), and add and change for the new one (or --new-passphrase-file). Devices already \
            mounted keep working: they keep the container's key, which never changes.
            """,
        subcommands: [Add.self, Change.self, Remove.self]
    )

    struct Secrets: ParsableArguments {
        @Argument(help: "A ubiqfs mountpoint of the encrypted container.") var mountpoint: String
        @Option(help: "A file whose first line is a passphrase that opens the container now.") var passphraseFile: String?

        func current() throws -> String {
            try passphraseFile.map(Passphrase.read) ?? Passphrase.prompt("A passphrase of the container: ")
        }
    }

    static func new(_ file: String?) throws -> String {
        try file.map(Passphrase.read) ?? Passphrase.ask(confirm: true)
    }

    static func send(_ action: String, _ secrets: Secrets, new: String?) throws {
        let (mountpoint, _) = try ControlClient.locate(secrets.mountpoint)
        let request = ControlRequest(command: "passphrase", action: action, passphrase: try secrets.current(), newPassphrase: new)
        _ = try ControlClient.send(request, mountpoint: mountpoint)
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let one more passphrase open the container.")
        @OptionGroup var secrets: Secrets
        @Option(help: "A file whose first line is the new passphrase.") var newPassphraseFile: String?

        func run() throws {
            try PassphraseCommand.send("add", secrets, new: try PassphraseCommand.new(newPassphraseFile))
            print("added: the container now opens with the new passphrase too")
        }
    }

    struct Change: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Replace a passphrase by a new one.")
        @OptionGroup var secrets: Secrets
        @Option(help: "A file whose first line is the new passphrase.") var newPassphraseFile: String?

        func run() throws {
            try PassphraseCommand.send("change", secrets, new: try PassphraseCommand.new(newPassphraseFile))
            print("changed: the old passphrase no longer opens the container")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop a passphrase from opening the container (not the last one).")
        @OptionGroup var secrets: Secrets

        func run() throws {
            try PassphraseCommand.send("remove", secrets, new: nil)
            print("removed: the passphrase no longer opens the container")
        }
    }
}
