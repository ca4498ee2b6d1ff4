// swift-tools-version: 6.0
import PackageDescription

/// Modules and their one-way dependencies (see docs/ARCHITECTURE.md):
/// Inodes (leaf) -> FuseKit, FileCoordinator, MetadataStore, ContentCache; Metrics (a pure leaf: counters,
/// histograms, the Prometheus text format) -> ContainerStore, SyncEngine, CloudFileSystem; MetricsHTTP (the
/// `/metrics` and `/healthz` server, swift-nio) -> the command line;
/// CFuse3 -> FuseKit; ItemModel (swift-crypto: digests of block lists) -> ContainerStore, MetadataStore, ContentCache; IgnoreRules (a pure leaf); Merging (pure: ItemModel,
/// IgnoreRules); DatabaseMerge (ItemModel, GRDB: users' SQLite files); ContentChunking (pure: ItemModel, swift-crypto;
/// content-defined chunks); S3Store (ContainerStore over HTTP);
/// ContainerCrypto (keys, sealing, `SealedStore` over any store); SyncEngine uses the stores, crypto, metadata, cache, coordinator, merges and chunking;
/// Thumbnails (the desktop's thumbnail cache and thumbnailers) -> ThumbnailService (pictures made, committed
/// and installed, over the engine's `ThumbnailEvents`); CloudFileSystem glues FuseKit to all of them; `ubiqfs` is the command line.
let package = Package(
    name: "ubiqfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ubiqfs", targets: ["ubiqfs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFuse3",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        .target(name: "Inodes"),
        .target(name: "Metrics"),
        .target(
            name: "MetricsHTTP",
            dependencies: [
                "Metrics",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(name: "FuseKit", dependencies: ["CFuse3", "CSystemShims", "Inodes"]),
        .target(name: "CSystemShims"),
        .target(name: "ItemModel", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "IgnoreRules"),
        .target(name: "Merging", dependencies: ["ItemModel", "IgnoreRules"]),
        .target(name: "DatabaseMerge", dependencies: ["ItemModel", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "ContentChunking", dependencies: ["ItemModel", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "FileCoordinator", dependencies: ["Inodes"]),
        .target(name: "ContainerStore", dependencies: ["ItemModel", "Metrics"]),
        .target(
            name: "S3Store",
            dependencies: [
                "ContainerStore", "ItemModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "MetadataStore",
            dependencies: ["ItemModel", "Inodes", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .target(
            name: "ContentCache",
            dependencies: ["ItemModel", "Inodes", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "ContainerCrypto",
            dependencies: [
                "ItemModel", "ContainerStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "SyncEngine",
            dependencies: [
                "ItemModel", "Inodes", "ContainerStore", "ContainerCrypto", "MetadataStore", "ContentCache", "FileCoordinator", "Merging", "DatabaseMerge",
                "ContentChunking", "Metrics",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Thumbnails",
            dependencies: ["ItemModel", .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "ThumbnailService",
            dependencies: [
                "Thumbnails", "SyncEngine", "MetadataStore", "ContentCache", "ItemModel", "Inodes",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CloudFileSystem",
            dependencies: [
                "FuseKit", "Inodes", "ItemModel", "MetadataStore", "ContentCache", "FileCoordinator",
                "ContainerStore", "ContainerCrypto", "SyncEngine", "CSystemShims", "IgnoreRules", "ThumbnailService", "Thumbnails", "Metrics",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "ubiqfs",
            dependencies: [
                "CloudFileSystem", "ContainerStore", "ContainerCrypto", "S3Store", "SyncEngine", "FileCoordinator", "FuseKit", "Inodes", "CSystemShims", "IgnoreRules",
                "ThumbnailService", "Metrics", "MetricsHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ItemModelTests", dependencies: ["ItemModel"]),
        .testTarget(name: "IgnoreRulesTests", dependencies: ["IgnoreRules", "ItemModel"]),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics", "MetricsHTTP"]),
        .testTarget(name: "MergingTests", dependencies: ["Merging", "ItemModel"]),
        .testTarget(name: "DatabaseMergeTests", dependencies: ["DatabaseMerge", "ItemModel", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "ContentChunkingTests",
            dependencies: ["ContentChunking", "ItemModel", .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(name: "ThumbnailsTests", dependencies: ["Thumbnails", "ItemModel"]),
        .testTarget(name: "FileCoordinatorTests", dependencies: ["FileCoordinator", "Inodes", "ItemModel"]),
        // Starts and stops a real SeaweedFS server for the tests that need an S3 service.
        .target(name: "SeaweedFSFixture", dependencies: ["S3Store", "ContainerStore"], path: "Tests/SeaweedFSFixture"),
        .testTarget(name: "ContainerStoreTests", dependencies: ["ContainerStore", "S3Store", "SeaweedFSFixture", "ItemModel", "Metrics"]),
        .testTarget(
            name: "MetadataStoreTests",
            dependencies: ["MetadataStore", "Inodes", "ItemModel", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // Devices without FUSE (the real core, metadata, cache and sync engine) for the core's
        // and the sync engine's tests.
        .target(
            name: "DeviceFixture",
            dependencies: [
                "CloudFileSystem", "ContainerStore", "SyncEngine", "MetadataStore", "ContentCache", "Inodes", "ItemModel",
                "SeaweedFSFixture", "ThumbnailService", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/DeviceFixture"
        ),
        // The filesystem core driven directly, as the kernel would through the adapter.
        .testTarget(
            name: "FileSystemCoreTests",
            dependencies: ["CloudFileSystem", "DeviceFixture", "ContainerStore", "SyncEngine", "MetadataStore", "Inodes", "ItemModel", "FuseKit"]
        ),
        .testTarget(
            name: "SyncEngineTests",
            dependencies: [
                "SyncEngine", "CloudFileSystem", "DeviceFixture", "ContainerStore", "ContainerCrypto", "Inodes", "S3Store", "SeaweedFSFixture", "MetadataStore", "ContentCache", "FileCoordinator", "ItemModel",
                "Thumbnails", "ThumbnailService",
                .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "MountTests", dependencies: ["ubiqfs", "SeaweedFSFixture"]),
        // The power-loss simulator (Tests/PowerCut/power_cut_test.py): a FUSE filesystem that
        // keeps writes in memory until fsync; kill -9 of it is a power cut.
        .executableTarget(name: "powercutfs", dependencies: ["FuseKit", "Inodes"], path: "Tests/PowerCutFS"),
    ],
    swiftLanguageModes: [.v6]
)
