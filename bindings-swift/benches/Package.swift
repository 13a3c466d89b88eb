// swift-tools-version:6.0
// Benchmarks of the Swift package (DESIGN §9): events/s into an `AsyncStream` consumer, and cold
// start (process start -> first event of a query). Run with `bindings-swift/benches/run.sh`
// against an optimized library; figures are in BENCHMARKS.md.
import PackageDescription

let package = Package(
    name: "RobotaBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Robota", path: "..")],
    targets: [.executableTarget(name: "robota-bench", dependencies: ["Robota"])]
)
