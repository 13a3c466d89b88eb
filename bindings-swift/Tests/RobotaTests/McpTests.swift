// MCP through the Swift API: servers given in `SessionOptions.mcpServers` reach the engine and
// come back from `listMcpServers()` with their status; one that cannot start is `failed` with
// the reason and the session still answers.
import Foundation
import Robota
import XCTest

final class McpTests: XCTestCase {
    func testServersAreListedAndAFailedOneLeavesTheSessionUsable() async throws {
        var options = SessionOptions(
            provider: .scripted(turns: [.text("Still here.")]), cwd: try temporaryDirectory())
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.builtinTools = false
        options.mcpServers = [
            "gone": .stdio(command: "/nonexistent/mcp-server", args: ["--x"]),
            "exits": .stdio(command: "/bin/sh", args: ["-c", "echo bye >&2; exit 3"]),
        ]
        let session = try InteractiveSession(options: options)
        let servers = try session.listMcpServers().sorted { $0.name < $1.name }
        XCTAssertEqual(servers.map(\.name), ["exits", "gone"])
        for server in servers {
            XCTAssertEqual(server.status.state, "failed")
            XCTAssertEqual(server.origin.kind, "host")
            XCTAssertEqual(server.transport, "stdio")
            XCTAssertEqual(server.tools, [])
        }
        XCTAssertTrue(servers[1].status.reason?.contains("/nonexistent/mcp-server") ?? false)
        let result = try await session.submit("hello")
        XCTAssertEqual(result.response, "Still here.")
        try await session.shutdown()
    }
}
