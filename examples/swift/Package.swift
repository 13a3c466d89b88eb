// swift-tools-version:6.0
// The Swift examples: `quickstart` (one session, streamed text), `editor-command` (what an
// IDE extension runs: a selection and a file path, a Swift tool, a permission prompt, the answer
// streamed) and `host-extensions` (an in-process MCP server, a command acting on the live
// session, a background subagent). All run offline. Build the library first (bindings-swift/scripts/test.sh does,
// and CI runs them with bindings-swift/scripts/examples.sh).
import PackageDescription

let package = Package(
    name: "RobotaExamples",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Robota", path: "../../bindings-swift")],
    targets: [
        .executableTarget(name: "quickstart", dependencies: ["Robota"]),
        .executableTarget(name: "editor-command", dependencies: ["Robota"]),
        .executableTarget(name: "host-extensions", dependencies: ["Robota"]),
    ]
)
