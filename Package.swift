// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "weavedi",
    products: [
        .library(name: "WeaveDI", targets: ["WeaveDI"]),
    ],
    targets: [
        .target(name: "WeaveDI"),
        // A tiny program the tests run as a child process, so that checks which depend on
        // environment variables or process-wide state cannot disturb one another.
        .executableTarget(name: "weavedi-probe", dependencies: ["WeaveDI"], path: "Sources/WeaveDIProbe"),
        .testTarget(name: "WeaveDITests", dependencies: ["WeaveDI", "weavedi-probe"]),
    ],
    swiftLanguageModes: [.v6]
)
