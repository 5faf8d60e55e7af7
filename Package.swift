// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "weavedi",
    products: [
        .library(name: "WeaveDI", targets: ["WeaveDI"]),
        .executable(name: "weavedid", targets: ["weavedid"]),
        .executable(name: "weavedictl", targets: ["weavedictl"]),
    ],
    targets: [
        // The dependency-injection library: standard library, Synchronization and libc only
        // (and a C thread-local for the per-thread resolution state).
        .target(name: "WeaveDI", dependencies: ["CWeaveDIThread"]),
        .target(name: "CWeaveDIThread"),
        // Thin typed system calls (descriptors, sockets, signals, files, processes).
        .target(name: "WeaveDIPosix"),
        // What the daemon and its command-line client share: JSON parsing, the wire protocol.
        .target(name: "WeaveDIControl", dependencies: ["WeaveDI", "WeaveDIPosix"]),
        // The daemon as a library, so tests can drive its parts; `weavedid` is its main.
        .target(name: "WeaveDIDaemon", dependencies: ["WeaveDI", "WeaveDIPosix", "WeaveDIControl"]),
        .executableTarget(name: "weavedid", dependencies: ["WeaveDIDaemon", "CWeaveDIEarlySignals"]),
        // The command-line client of the control socket.
        .executableTarget(name: "weavedictl", dependencies: ["WeaveDIControl", "WeaveDIDaemon"]),
        // Blocks the daemon's signals in a constructor, before main runs.
        .target(name: "CWeaveDIEarlySignals"),
        // A tiny program the tests run as a child process, so that checks which depend on
        // environment variables or process-wide state cannot disturb one another.
        .executableTarget(name: "weavedi-probe", dependencies: ["WeaveDI"], path: "Sources/WeaveDIProbe"),
        // What more than one test target needs (a bounded wait).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "WeaveDITests", dependencies: ["WeaveDI", "weavedi-probe", "TestSupport"]),
        .testTarget(name: "WeaveDIPosixTests", dependencies: ["WeaveDIPosix"]),
        .testTarget(name: "WeaveDIControlTests", dependencies: ["WeaveDIControl"]),
        .testTarget(name: "WeaveDIDaemonTests", dependencies: ["WeaveDIDaemon", "WeaveDIPosix", "WeaveDIControl", "weavedid", "weavedictl", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
