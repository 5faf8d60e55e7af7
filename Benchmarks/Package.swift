// swift-tools-version:6.0
import PackageDescription

// The benchmark harness: `swift run -c release --package-path Benchmarks weavedi-bench`.
// Its own package, so that the library's package stays free of benchmark code; it depends on
// nothing but the WeaveDI package next to it.
let package = Package(
    name: "weavedi-benchmarks",
    products: [
        .executable(name: "weavedi-bench", targets: ["weavedi-bench"]),
    ],
    dependencies: [
        .package(name: "weavedi", path: ".."),
    ],
    targets: [
        .executableTarget(name: "weavedi-bench", dependencies: [.product(name: "WeaveDI", package: "weavedi")]),
    ],
    swiftLanguageModes: [.v6]
)
