// swift-tools-version:6.0
// The `Robota` Swift package: the robota agent engine for Swift apps and IDE extensions.
//
// Three targets: `robota_swiftFFI` (the C header of the uniffi library), `RobotaNative` (the
// code uniffi generates, compiled in Swift 5 mode: Swift 6.0's compiler crashes on its async
// foreign-trait glue in Swift 6 mode) and `Robota` (the hand-written API, Swift 6 mode with
// strict concurrency).
//
// This manifest links the library built from this repository (`librobota_swift`), found in
// `ROBOTA_SWIFT_LIB_DIR` (default: the workspace's `target/debug`). `scripts/test.sh` builds it
// and runs `swift build` / `swift test`. An Apple app uses the XCFramework made by
// `scripts/build-xcframework.sh` as a `binaryTarget` instead (see README.md).
import Foundation
import PackageDescription

let packageDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
let libraryDir = ProcessInfo.processInfo.environment["ROBOTA_SWIFT_LIB_DIR"]
    ?? "\(packageDir)/../target/debug"

let package = Package(
    name: "Robota",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "Robota", targets: ["Robota"]),
    ],
    targets: [
        .target(name: "robota_swiftFFI"),
        .target(
            name: "RobotaNative",
            dependencies: ["robota_swiftFFI"],
            swiftSettings: [.swiftLanguageMode(.v5)],
            linkerSettings: [
                .linkedLibrary("robota_swift"),
                .unsafeFlags(["-L\(libraryDir)", "-Xlinker", "-rpath", "-Xlinker", libraryDir]),
            ]
        ),
        .target(name: "Robota", dependencies: ["RobotaNative"]),
        .testTarget(name: "RobotaTests", dependencies: ["Robota"]),
    ]
)
