// The shared conformance scenarios (tests/conformance/scenarios/*.json), played through the Swift
// API with host tools and permission answers implemented in Swift. The rules are those of
// tests/conformance/README.md; results must equal each scenario's `expected`.
import Foundation
import Robota
import XCTest

let scenariosDir = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("tests/conformance/scenarios")
let keptTypes: Set<String> = [
    "text_delta", "thinking", "tool_start", "tool_end", "permission_request", "complete",
    "interrupted", "error", "skill_activation",
]
let topKeys: Set<String> = [
    "name", "description", "provider", "host_tools", "permission_answers", "settings", "skills",
    "commands", "mcp_servers", "host_commands", "builtin_tools", "output_format",
    "max_structured_output_retries", "actions", "expected",
]
/// The longest any wait of a scenario may take.
let scenarioWait: TimeInterval = 20

struct ScenarioFailure: Error, CustomStringConvertible {
    let description: String
}

/// The events a session sent, collected by a reader task.
actor EventLog {
    private(set) var events: [SessionEvent] = []
    func append(_ event: SessionEvent) { events.append(event) }
}

/// Waits until `condition` holds, failing after `scenarioWait`.
func waitUntil(_ what: String, _ condition: () async -> Bool) async throws {
    let deadline = Date().addingTimeInterval(scenarioWait)
    while !(await condition()) {
        guard Date() < deadline else { throw ScenarioFailure(description: "timed out waiting for \(what)") }
        try await Task.sleep(nanoseconds: 2_000_000)
    }
}

/// The permission handler answering a scenario's `permission_answers` in order.
final class ScriptedAnswers: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [JSONValue]
    private(set) var mismatches: [String] = []

    init(_ answers: [JSONValue]) { self.answers = answers }

    func answer(_ request: PermissionRequest) -> PermissionDecision {
        lock.withLock {
            guard !answers.isEmpty else {
                mismatches.append("unexpected request for \(request.toolName)")
                return .deny(message: "no answer left")
            }
            let answer = answers.removeFirst()
            guard answer["tool"]?.stringValue == request.toolName else {
                mismatches.append("expected a request for \(answer["tool"] ?? nil), got \(request.toolName)")
                return .deny(message: "wrong tool")
            }
            switch answer["answer"]?.stringValue {
            case "allow_once": return .allow
            case "allow_session": return .allowForSession
            case "allow_with_input": return .allowWithInput(answer["input"] ?? [:])
            case "deny": return .deny(message: answer["message"]?.stringValue ?? "")
            default:
                mismatches.append("unknown answer \(answer["answer"] ?? nil)")
                return .deny(message: "unknown answer")
            }
        }
    }
}

func hostTool(_ spec: JSONValue) -> FunctionTool {
    let result = spec["result"] ?? [:]
    let delay = spec["delay_ms"]?.numberValue ?? 0
    return FunctionTool(
        name: spec["name"]?.stringValue ?? "", description: spec["description"]?.stringValue ?? "",
        inputSchema: spec["input_schema"] ?? ["type": "object"],
        isReadOnly: spec["read_only"]?.boolValue ?? false
    ) { _, _ in
        if delay > 0 { try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000)) }
        return ToolResult(
            content: result["content"]?.stringValue ?? "",
            isError: result["is_error"]?.boolValue ?? false)
    }
}

/// A scenario's host command: performs its `operations` on the live context in order, then
/// answers its `result`. An operation the runner does not know fails the command (and so the
/// scenario's `commands` comparison).
func hostCommand(_ spec: JSONValue) -> Command {
    let operations = spec["operations"]?.arrayValue ?? []
    let result = spec["result"] ?? [:]
    return Command(
        name: spec["name"]?.stringValue ?? "", description: spec["description"]?.stringValue ?? ""
    ) { context in
        for operation in operations {
            switch operation["op"]?.stringValue {
            case "set_permission_mode":
                try await context.setPermissionMode(operation["mode"]?.stringValue ?? "")
            case "clear": try await context.clear()
            case "compact":
                try await context.compact(instructions: operation["instructions"]?.stringValue)
            default:
                throw ScenarioFailure(description: "unknown host command operation \(operation)")
            }
        }
        return CommandResult(
            message: result["message"]?.stringValue ?? "",
            success: result["success"]?.boolValue ?? true,
            effects: result["effects"]?.arrayValue ?? [])
    }
}

func normalizeEvents(_ events: [SessionEvent]) -> [JSONValue] {
    var out: [[String: JSONValue]] = []
    for event in events where keptTypes.contains(event.type) {
        let e = event.json
        let type = JSONValue.string(event.type)
        switch event.type {
        case "text_delta", "thinking":
            let text = e["text"]?.stringValue ?? ""
            if let last = out.last, last["type"] == type {
                out[out.count - 1]["text"] = .string((last["text"]?.stringValue ?? "") + text)
            } else {
                out.append(["type": type, "text": .string(text)])
            }
        case "tool_start":
            out.append(["type": type, "name": e["tool"]?["name"] ?? nil,
                        "first_arg": e["tool"]?["first_arg"] ?? nil])
        case "tool_end":
            var item: [String: JSONValue] = ["type": type, "name": e["tool"]?["name"] ?? nil,
                                             "result": e["tool"]?["result"] ?? nil]
            if let data = e["tool"]?["tool_result_data"] { item["tool_result_data"] = data }
            out.append(item)
        case "permission_request":
            out.append(["type": type, "tool_name": e["tool_name"] ?? nil, "input": e["input"] ?? nil])
        case "complete":
            let o = e["outcome"] ?? [:]
            var item: [String: JSONValue] = [
                "type": type, "response": o["response"] ?? nil,
                "stop_reason": o["stop_reason"] ?? nil,
                "tools_executed": o["tools_executed"] ?? nil,
            ]
            if let structured = o["structured_output"] { item["structured_output"] = structured }
            out.append(item)
        case "interrupted":
            out.append(["type": type])
        case "skill_activation":
            let data = e["data"] ?? [:]
            out.append(["type": type, "skill_name": data["skill_name"] ?? nil,
                        "invocation": data["invocation"] ?? nil, "mode": data["mode"] ?? nil,
                        "status": data["status"] ?? nil])
        default:
            out.append(["type": type, "message": e["message"] ?? nil])
        }
    }
    return out.map(JSONValue.object)
}

func normalizeMessage(_ m: JSONValue) -> JSONValue {
    var out: [String: JSONValue] = ["role": m["role"] ?? nil]
    let blocks = m["content"]?.arrayValue ?? []
    let text = blocks.filter { $0["type"] == "text" }.compactMap { $0["text"]?.stringValue }.joined()
    if !text.isEmpty { out["text"] = .string(text) }
    let uses = blocks.filter { $0["type"] == "tool_use" }
        .map { JSONValue.object(["name": $0["name"] ?? nil, "input": $0["input"] ?? nil]) }
    if !uses.isEmpty { out["tool_uses"] = .array(uses) }
    let results = blocks.filter { $0["type"] == "tool_result" }.map {
        JSONValue.object(["content": $0["content"] ?? nil, "is_error": $0["is_error"] ?? false])
    }
    if !results.isEmpty { out["tool_results"] = .array(results) }
    if m["state"] == "interrupted" { out["state"] = "interrupted" }
    return .object(out)
}

func runScenario(_ scenario: JSONValue) async throws -> JSONValue {
    guard case .object(let top) = scenario else { throw ScenarioFailure(description: "not an object") }
    let name = scenario["name"]?.stringValue ?? "?"
    let unknown = Set(top.keys).subtracting(topKeys)
    guard unknown.isEmpty else { throw ScenarioFailure(description: "\(name): unknown keys \(unknown)") }
    let work = try temporaryDirectory(), home = try temporaryDirectory()
    let answers = ScriptedAnswers(scenario["permission_answers"]?.arrayValue ?? [])

    var options = SessionOptions(
        provider: .json(["type": "scripted", "turns": scenario["provider"]?["turns"] ?? []]),
        cwd: work, tools: (scenario["host_tools"]?.arrayValue ?? []).map(hostTool),
        permissionHandler: { answers.answer($0) })
    options.home = home
    options.loadProjectContext = false
    // The built-in tools bring the background task manager (`background_tasks_cancelled`).
    options.builtinTools = scenario["builtin_tools"]?.boolValue ?? false
    options.outputFormat = scenario["output_format"]
    options.maxStructuredOutputRetries = scenario["max_structured_output_retries"]?.numberValue
        .map { UInt32($0) }
    options.skills = (scenario["skills"]?.arrayValue ?? []).map {
        .content(name: $0["name"]?.stringValue ?? "", content: $0["content"]?.stringValue ?? "")
    }
    options.customCommands = (scenario["commands"]?.arrayValue ?? []).map {
        .content(name: $0["name"]?.stringValue ?? "", content: $0["content"]?.stringValue ?? "")
    }
    for server in scenario["mcp_servers"]?.arrayValue ?? [] {
        // The chroot has no Python: scripts/test.sh serves the catalog's `pytools` server over
        // streamable HTTP on the host (tests/conformance/README.md).
        guard server.stringValue == "pytools",
            let url = ProcessInfo.processInfo.environment["ROBOTA_TEST_MCP_PYTOOLS_URL"]
        else {
            throw ScenarioFailure(
                description: "\(name): MCP server \(server) unknown or ROBOTA_TEST_MCP_PYTOOLS_URL unset (run scripts/test.sh)")
        }
        options.mcpServers["pytools"] = .http(url: url)
    }
    let hostCommands = (scenario["host_commands"]?.arrayValue ?? []).map(hostCommand)
    if !hostCommands.isEmpty {
        options.commandModules = [CommandModule(name: "host", commands: hostCommands)]
    }
    if let settings = scenario["settings"], settings != .null {
        var permissions: [String: JSONValue] = [
            "allow": settings["allow"] ?? [], "deny": settings["deny"] ?? [],
        ]
        if let mode = settings["permission_mode"] { permissions["defaultMode"] = mode }
        options.settings = ["permissions": .object(permissions)]
    }
    let session = try InteractiveSession(options: options)
    let log = EventLog()
    let stream = session.events
    let reader = Task { for await event in stream { await log.append(event) } }
    var prompts: [Prompt] = []
    var commands: [JSONValue] = []
    var backgroundTasks: [JSONValue] = []
    // A skill run as a command submits its instructions as a prompt: one more terminal event.
    // Skills and custom commands run a prompt: each one started ends with a terminal event.
    let skillNames = Set(try session.listSkills().map(\.name))
        .union((scenario["commands"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
    var skillRuns = 0
    for action in scenario["actions"]?.arrayValue ?? [] {
        if let prompt = action["submit"]?.stringValue {
            prompts.append(try await session.enqueue(prompt))
        } else if let wanted = action["abort_after_event"]?.stringValue {
            try await waitUntil("a `\(wanted)` event") {
                await log.events.contains { $0.type == wanted }
            }
            session.abort()
        } else if let command = action["command"] {
            let commandName = command["name"]?.stringValue ?? ""
            let result = try await session.executeCommand(
                commandName, args: command["args"]?.stringValue ?? "")
            if result.success && skillNames.contains(commandName) { skillRuns += 1 }
            commands.append([
                "name": .string(commandName), "success": .bool(result.success),
                "effects": .array(result.effects),
            ])
        } else if action["wait_idle"] != nil {
            try await session.waitIdle()
        } else if let start = action["start_background_subagent"] {
            _ = try session.startBackgroundSubagent(
                SubagentRequest(
                    prompt: start["prompt"]?.stringValue ?? "",
                    agentType: start["agent_type"]?.stringValue))
        } else if action["list_background_tasks"] != nil {
            backgroundTasks.append(
                .array(
                    try session.listBackgroundTasks().map {
                        [
                            "id": .string($0.id), "kind": .string($0.kind),
                            "status": .string($0.status.rawValue), "command": .string($0.command),
                        ]
                    }))
        } else if let id = action["cancel_background_task"]?.stringValue {
            _ = try await session.cancelBackgroundTask(id)
        } else {
            throw ScenarioFailure(description: "\(name): unknown action \(action)")
        }
    }
    try await session.waitIdle()
    var ran = skillRuns
    for prompt in prompts where try await prompt.result() != .cancelled { ran += 1 }
    // Every prompt that ran ended with a terminal event, delivered before its result.
    try await waitUntil("the terminal events") {
        await log.events.filter { ["complete", "interrupted", "error"].contains($0.type) }.count >= ran
    }
    reader.cancel()
    let events = await log.events

    let seqs = events.map(\.seq)
    guard events.allSatisfy({ $0.sessionId == session.sessionId }) else {
        throw ScenarioFailure(description: "\(name): an event of another session")
    }
    guard zip(seqs, seqs.dropFirst()).allSatisfy({ $0 < $1 }) else {
        throw ScenarioFailure(description: "\(name): seq not increasing: \(seqs)")
    }
    guard answers.mismatches.isEmpty else {
        throw ScenarioFailure(description: "\(name): permission answers: \(answers.mismatches)")
    }

    let expected = scenario["expected"] ?? [:]
    // Events and messages are compared when the scenario gives them (a background Bash task's
    // results carry process ids and temporary paths).
    var actual: [String: JSONValue] = [:]
    if expected["events"] != nil { actual["events"] = .array(normalizeEvents(events)) }
    if expected["messages"] != nil {
        actual["messages"] = .array(try session.messages().map(normalizeMessage))
    }
    if expected["background_tasks"] != nil { actual["background_tasks"] = .array(backgroundTasks) }
    if expected["response"] != nil {
        let terminal = events.last { ["complete", "interrupted"].contains($0.type) }
        actual["response"] = terminal?.json["outcome"]?["response"] ?? .null
    }
    if expected["commands"] != nil { actual["commands"] = .array(commands) }
    if expected["name"] != nil { actual["name"] = session.name.map(JSONValue.string) ?? .null }
    try await session.shutdown()
    return .object(actual)
}

func pretty(_ value: JSONValue) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "\(value)"
}

final class ConformanceTests: XCTestCase {
    func testEveryScenarioMatchesItsExpectedResult() async throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: scenariosDir.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertGreaterThanOrEqual(files.count, 5, "scenarios in \(scenariosDir.path)")
        for file in files {
            let text = try String(contentsOf: scenariosDir.appendingPathComponent(file), encoding: .utf8)
            let scenario = try JSONValue(parsing: text)
            XCTAssertEqual(scenario["name"]?.stringValue, String(file.dropLast(5)))
            let actual = try await runScenario(scenario)
            let expected = scenario["expected"] ?? [:]
            XCTAssertEqual(
                actual, expected,
                "conformance scenario \(file) differs:\nexpected \(pretty(expected))\nactual \(pretty(actual))")
        }
    }
}
