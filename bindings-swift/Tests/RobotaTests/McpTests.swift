// MCP through the Swift API: servers given in `SessionOptions.mcpServers` reach the engine and
// come back from `listMcpServers()` with their status; one that cannot start is `failed` with
// the reason and the session still answers. An in-process server's Swift tools are called by a
// model through mock-llm (results and errors reach the model), and a remote server that requires
// OAuth (the real `python_server.py --http PORT --oauth`, started by scripts/test.sh on the host)
// is authorized through `onMcpAuthorization`.
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Robota
import XCTest

/// Every tool result the model was sent (Anthropic wire format), by call id: its text and
/// whether it was an error.
func toolResultsById(_ requests: [[String: Any]]) -> [String: (text: String, isError: Bool)] {
    var found: [String: (text: String, isError: Bool)] = [:]
    for request in requests {
        let body = request["body"] as? [String: Any]
        for message in body?["messages"] as? [[String: Any]] ?? [] {
            for block in message["content"] as? [[String: Any]] ?? []
            where block["type"] as? String == "tool_result" {
                let text =
                    (block["content"] as? String)
                    ?? (block["content"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
                    .joined()
                found[block["tool_use_id"] as? String ?? ""] = (text, block["is_error"] as? Bool ?? false)
            }
        }
    }
    return found
}

struct Overflow: Error, CustomStringConvertible {
    var description: String { "the numbers are too large" }
}

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
        // Servers connect in the background: pending at first, then each ends in a status.
        let done = await session.waitForMcpServers(timeout: 20)
        XCTAssertTrue(done)
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

    func testInProcessServerToolsAreCalledByTheModelAndAThrowingOneIsAnError() async throws {
        let mock = try MockLLM(script: """
            {"turns": [
              {"tool_calls": [{"id": "t1", "name": "mcp__calc__add", "input": {"a": 40, "b": 2}}]},
              {"tool_calls": [{"id": "t2", "name": "mcp__calc__add", "input": {"a": 1e300, "b": 1}}]},
              {"tool_calls": [{"id": "t3", "name": "mcp__calc__stats", "input": {}}]},
              {"text": "done"}
            ]}
            """)
        let calls = Counter()
        let add = FunctionTool(
            name: "add", description: "Adds two numbers.",
            inputSchema: [
                "type": "object", "required": ["a", "b"],
                "properties": ["a": ["type": "number"], "b": ["type": "number"]],
            ]
        ) { input, _ in
            calls.increment()
            let a = input["a"]?.numberValue ?? 0, b = input["b"]?.numberValue ?? 0
            if a > 1e100 { throw Overflow() }
            return "sum = \(Int(a + b))"
        }
        let stats = FunctionTool(name: "stats", description: "Statistics.", isReadOnly: true) { _, _ in
            ToolResult(content: "mean 2.5", response: ["mean": 2.5])
        }
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory())
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.builtinTools = false
        options.mcpServers = ["calc": .sdk(version: "2.0.0", tools: [add, stats])]
        options.settings = ["permissions": ["allow": ["mcp__calc"]]]
        let session = try InteractiveSession(options: options)
        let calcStarted = await session.waitForMcpServers(timeout: 20)
        XCTAssertTrue(calcStarted)
        let listed = try XCTUnwrap(try session.listMcpServers().first { $0.name == "calc" })
        XCTAssertEqual(listed.status.state, "connected")
        XCTAssertEqual(listed.transport, "sdk")
        XCTAssertEqual(listed.origin.kind, "host")
        XCTAssertEqual(listed.tools, ["mcp__calc__add", "mcp__calc__stats"])

        let result = try await session.submit("compute")
        XCTAssertEqual(result.response, "done")
        let requests = try await mock.requests()
        let offered = (requests.first?["body"] as? [String: Any])?["tools"] as? [[String: Any]] ?? []
        let addSchema = offered.first { $0["name"] as? String == "mcp__calc__add" }?["input_schema"]
        XCTAssertEqual((addSchema as? [String: Any])?["required"] as? [String], ["a", "b"])
        let found = toolResultsById(requests)
        XCTAssertEqual(found["t1"]?.text, "sum = 42")
        XCTAssertEqual(found["t1"]?.isError, false)
        XCTAssertEqual(found["t2"]?.isError, true)
        XCTAssertTrue(found["t2"]?.text.contains("the numbers are too large") ?? false, "\(found)")
        XCTAssertEqual(found["t3"]?.text, "mean 2.5")
        XCTAssertEqual(calls.value, 2)
        try await session.shutdown()
    }

    func testAnInProcessServerNamedLikeAConfiguredOneIsRefused() throws {
        let project = try temporaryDirectory()
        try #"{"mcpServers": {"calc": {"command": "/nonexistent/calc"}}}"#
            .write(toFile: "\(project)/.mcp.json", atomically: true, encoding: .utf8)
        var options = SessionOptions(provider: .scripted(turns: []), cwd: project)
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.mcpServers = ["calc": .sdk(tools: [LookupTool()])]
        XCTAssertThrowsError(try InteractiveSession(options: options)) { error in
            guard case .invalidArgument(let message)? = error as? RobotaError else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(message.contains("calc"), message)
        }
    }

    func testARemoteServerRequiringOAuthIsAuthorizedThroughTheHost() async throws {
        guard let url = ProcessInfo.processInfo.environment["ROBOTA_TEST_MCP_OAUTH_URL"] else {
            throw XCTSkip("ROBOTA_TEST_MCP_OAUTH_URL is not set (bindings-swift/scripts/test.sh sets it)")
        }
        let home = try temporaryDirectory(), work = try temporaryDirectory()
        let opened = OpenedURLs()
        for run in 0..<2 {
            var options = SessionOptions(
                provider: .scripted(turns: [
                    ScriptedTurn(toolCalls: [(id: "o\(run)", name: "mcp__secure__add", input: ["a": 40, "b": 2])]),
                    .text("Done."),
                ]),
                cwd: work)
            options.home = home
            options.loadProjectContext = false
            options.builtinTools = false
            options.mcpServers = ["secure": .http(url: url)]
            options.settings = ["permissions": ["allow": ["mcp__secure"]]]
            options.onMcpAuthorization = { server, url in
                opened.append(server, url)
                // The browser: the test server approves at once and redirects to the session's
                // listener on 127.0.0.1, which URLSession follows.
                _ = try await URLSession.shared.data(from: url)
            }
            // The servers connect in the background: the session is created at once, and the
            // handler runs on the cooperative pool while the test waits.
            let session = try InteractiveSession(options: options)
            let authorized = await session.waitForMcpServers(timeout: 30)
            XCTAssertTrue(authorized)
            let listed = try XCTUnwrap(try session.listMcpServers().first { $0.name == "secure" })
            XCTAssertEqual(listed.status.state, "connected", "\(listed.status)")
            let result = try await session.submit("add")
            XCTAssertEqual(result.response, "Done.")
            let results = try session.messages().flatMap { $0["content"]?.arrayValue ?? [] }
                .filter { $0["type"] == "tool_result" }
            XCTAssertEqual(results.count, 1)
            XCTAssertTrue("\(results)".contains("42"), "\(results)")
            try await session.shutdown()
        }
        // Asked once, with a PKCE authorization URL; the second session used the stored tokens.
        let asked = opened.all
        XCTAssertEqual(asked.count, 1, "\(asked)")
        XCTAssertEqual(asked.first?.0, "secure")
        XCTAssertTrue(asked.first?.1.absoluteString.contains("code_challenge=") ?? false)
        let tokenDir = "\(home)/.robota/mcp-oauth"
        let tokens = try FileManager.default.contentsOfDirectory(atPath: tokenDir)
            .filter { $0.hasPrefix("secure-") && $0.hasSuffix(".json") }
        XCTAssertEqual(tokens.count, 1, "\(tokens)")
        let mode = try FileManager.default.attributesOfItem(atPath: "\(tokenDir)/\(tokens[0])")[.posixPermissions]
        XCTAssertEqual((mode as? NSNumber)?.intValue ?? (mode as? Int), 0o600)
        XCTAssertNil(
            FileManager.default.enumerator(atPath: work)?.first { ($0 as? String)?.hasSuffix(".json") ?? false },
            "no token in the project")
    }
}

/// The authorization URLs a test's handler was given.
final class OpenedURLs: @unchecked Sendable {
    private let lock = NSLock()
    private var opened: [(String, URL)] = []

    func append(_ server: String, _ url: URL) { lock.withLock { opened.append((server, url)) } }

    var all: [(String, URL)] { lock.withLock { opened } }
}
