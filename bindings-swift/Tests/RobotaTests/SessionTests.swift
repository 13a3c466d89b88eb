// The Swift API against real model traffic (mock-llm over loopback, both wire formats) and the
// real engine: queries, streaming sessions, Swift tools, permission handlers, hooks, commands,
// a Swift provider, abort and queueing, typed errors, many sessions at once.
import Foundation
import Robota
import XCTest

/// Reads the text of every `tool_result` the model was sent (both wire formats).
func toolResultsSent(_ requests: [[String: Any]]) -> [String] {
    var results: [String] = []
    for request in requests {
        guard let body = request["body"] as? [String: Any],
            let messages = body["messages"] as? [[String: Any]]
        else { continue }
        for message in messages {
            if message["role"] as? String == "tool", let content = message["content"] as? String {
                results.append(content)
            }
            for block in message["content"] as? [[String: Any]] ?? []
            where block["type"] as? String == "tool_result" {
                if let text = block["content"] as? String {
                    results.append(text)
                } else if let parts = block["content"] as? [[String: Any]] {
                    results.append(parts.compactMap { $0["text"] as? String }.joined())
                }
            }
        }
    }
    return results
}

/// A tool looking up a key in a fixed table.
struct LookupTool: Tool {
    struct Input: Decodable { let key: String }
    let name = "lookup"
    let description = "Looks up a key."
    let inputSchema: JSONValue = [
        "type": "object", "properties": ["key": ["type": "string"]], "required": ["key"],
    ]

    func call(input: JSONValue, context: ToolContext) async throws -> ToolResult {
        let input = try decodeInput(Input.self, from: input)
        guard input.key == "answer" else { return .error("no such key: \(input.key)") }
        return "42"
    }
}

let toolTurns = """
    {"turns": [
      {"text": "Looking.", "tool_calls": [{"id": "t1", "name": "lookup", "input": {"key": "answer"}}]},
      {"text": ["The value ", "is 42."]}
    ]}
    """

final class SessionTests: XCTestCase {
    func testQueryRunsASwiftToolOverTheAnthropicWireFormat() async throws {
        let mock = try MockLLM(script: toolTurns)
        let options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory(), tools: [LookupTool()],
            permissionHandler: { _ in .allow })
        let query = try createQuery(options: options)
        let result = try await query("What is the answer?")
        XCTAssertEqual(result.response, "The value is 42.")
        XCTAssertEqual(result.numTurns, 2)
        XCTAssertEqual(result.stopReason, "completed")
        XCTAssertFalse(result.sessionId.isEmpty)
        let requests = try await mock.requests()
        XCTAssertEqual(requests.map { $0["path"] as? String }, ["/v1/messages", "/v1/messages"])
        XCTAssertEqual(toolResultsSent(requests), ["42"])
    }

    func testAPermissionHandlerMayRunTheCallWithAnotherInput() async throws {
        let script = """
            {"turns": [
              {"tool_calls": [{"id": "t1", "name": "lookup", "input": {"key": "wrong"}}]},
              {"text": "Fixed."}
            ]}
            """
        let mock = try MockLLM(script: script)
        let options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory(), tools: [LookupTool()],
            permissionHandler: { _ in .allowWithInput(["key": "answer"]) })
        let query = try createQuery(options: options)
        let result = try await query("What is the answer?")
        XCTAssertEqual(result.response, "Fixed.")
        // The tool ran with the handler's input, not the model's.
        let requests = try await mock.requests()
        XCTAssertEqual(toolResultsSent(requests), ["42"])
    }

    func testSessionStreamsEventsWithPermissionAllowAndDenyOverOpenAI() async throws {
        let script = """
            {"turns": [
              {"tool_calls": [{"id": "c1", "name": "lookup", "input": {"key": "answer"}}]},
              {"text": ["It ", "is 42."]},
              {"tool_calls": [{"id": "c2", "name": "lookup", "input": {"key": "answer"}}]},
              {"text": "Denied, then."}
            ]}
            """
        let mock = try MockLLM(script: script)
        let asked = Counter()
        let options = SessionOptions(
            provider: .openAI(model: "gpt-test", apiKey: "sk-test", baseURL: "\(mock.baseURL)/v1"),
            cwd: try temporaryDirectory(), tools: [LookupTool()],
            permissionHandler: { request in
                XCTAssertEqual(request.toolName, "lookup")
                XCTAssertEqual(request.input["key"], "answer")
                return asked.increment() == 1 ? .allow : .deny(message: "not today")
            })
        let session = try InteractiveSession(options: options)
        let events = session.events
        let collected = Task { () -> [SessionEvent] in
            var seen: [SessionEvent] = []
            for await event in events {
                seen.append(event)
                if case .complete = event.kind { break }
            }
            return seen
        }
        let first = try await session.submit("What is the answer?")
        XCTAssertEqual(first.response, "It is 42.")
        let seen = await collected.value
        // The `complete` event reports what the prompt did.
        let report = try XCTUnwrap(seen.last?.report, "\(String(describing: seen.last?.json))")
        XCTAssertEqual(report.response, "It is 42.")
        XCTAssertEqual(report.toolSummaries.map(\.name), ["lookup"])
        XCTAssertEqual(report.toolSummaries.first?.result, "success")
        XCTAssertGreaterThan(report.contextState.maxTokens, 0)
        XCTAssertTrue(
            report.history.contains { $0["type"]?.stringValue == "tool-end" },
            "\(report.history)")
        XCTAssertNil(seen.first?.report)
        XCTAssertEqual(seen.map(\.seq), seen.map(\.seq).sorted())
        XCTAssertEqual(Set(seen.map(\.seq)).count, seen.count)
        XCTAssertTrue(seen.allSatisfy { $0.sessionId == session.sessionId })
        let text = seen.compactMap { if case .textDelta(let t) = $0.kind { t } else { nil } }
        // The engine separates the text of successive rounds with a blank line.
        XCTAssertEqual(text.joined().trimmingCharacters(in: .whitespacesAndNewlines), "It is 42.")
        let ends = seen.compactMap { if case .toolEnd(let tool) = $0.kind { tool } else { nil } }
        XCTAssertEqual(ends.map(\.name), ["lookup"])
        XCTAssertEqual(ends.first?.toolResultData, "42")
        XCTAssertTrue(seen.contains { if case .permissionRequest = $0.kind { true } else { false } })

        let second = try await session.submit("Again?")
        XCTAssertEqual(second.response, "Denied, then.")
        let sent = toolResultsSent(try await mock.requests())
        XCTAssertEqual(sent.first, "42")
        XCTAssertTrue(sent.last?.contains("not today") ?? false, "denial sent: \(sent)")
        XCTAssertEqual(asked.value, 2)
        try await session.shutdown()
    }

    func testAThrowingPermissionHandlerDeniesTheCall() async throws {
        struct Refusal: Error {}
        let mock = try MockLLM(script: toolTurns)
        let ran = Counter()
        let tool = FunctionTool(name: "lookup", description: "Looks up a key.") { _, _ in
            ran.increment()
            return "42"
        }
        let session = try InteractiveSession(options: SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory(), tools: [tool],
            permissionHandler: { _ in throw Refusal() }))
        let result = try await session.submit("What is the answer?")
        XCTAssertEqual(result.response, "The value is 42.")
        XCTAssertEqual(ran.value, 0)
        let sent = toolResultsSent(try await mock.requests())
        XCTAssertEqual(sent.count, 1)
        XCTAssertNotEqual(sent.first, "42")
    }

    func testAllowAlwaysSavesTheRuleToTheChosenSettingsFile() async throws {
        let dir = try temporaryDirectory()
        let asked = Counter()
        let session = try InteractiveSession(options: SessionOptions(
            provider: .scripted(turns: [
                ScriptedTurn(toolCalls: [(id: "a1", name: "lookup", input: ["key": "answer"])]),
                ScriptedTurn(toolCalls: [(id: "a2", name: "lookup", input: ["key": "answer"])]),
                .text("done"),
            ]),
            cwd: dir, tools: [LookupTool()],
            permissionHandler: { _ in
                asked.increment()
                return .allowAlways(rules: ["lookup"], destination: .localSettings)
            }))
        let result = try await session.submit("look twice")
        XCTAssertEqual(result.response, "done")
        XCTAssertEqual(asked.value, 1, "the saved rule allows the second call")
        let saved = try String(contentsOfFile: "\(dir)/.claude/settings.local.json", encoding: .utf8)
        XCTAssertEqual(try JSONValue(parsing: saved)["permissions"]?["allow"], ["lookup"])
    }

    func testHooksCommandsAndASwiftProvider() async throws {
        let hookCalls = Counter()
        let blocker = Hook(event: "PreToolUse", matcher: "lookup") { input in
            hookCalls.increment()
            XCTAssertEqual(input["tool_name"], "lookup")
            return .block(reason: "lookups are off")
        }
        let hello = Command(name: "hello", description: "Greets.") { context in
            CommandResult(message: "hello \(context.args)")
        }
        let session = try InteractiveSession(options: SessionOptions(
            provider: .custom(EchoProvider()), cwd: try temporaryDirectory(),
            tools: [LookupTool()], permissionHandler: { _ in .allow }, hooks: [blocker],
            commandModules: [CommandModule(name: "greetings", commands: [hello])]))
        let result = try await session.submit("ping")
        XCTAssertTrue(result.response?.hasPrefix("echo: ping (tool said: ") ?? false, "\(result)")
        XCTAssertTrue(result.response?.contains("lookups are off") ?? false, "\(result)")
        XCTAssertEqual(hookCalls.value, 1)
        let greeting = try await session.executeCommand("hello", args: "world")
        XCTAssertEqual(greeting, CommandResult(message: "hello world"))
        XCTAssertTrue(try session.listCommands().contains { $0.name == "hello" })
        do {
            _ = try await session.executeCommand("no-such-command")
            XCTFail("an unknown command must throw")
        } catch RobotaError.command(let message) {
            XCTAssertTrue(message.contains("no-such-command"), message)
        }
    }

    func testAbortInterruptsAndQueueing() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"text": {"repeat": "tok ", "count": 400}, "chunk_delay_ms": 20},
                       {"text": "second"}]}
            """)
        let session = try InteractiveSession(options: SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory()))
        let events = session.events
        let firstDelta = Task { () -> Bool in
            for await event in events { if case .textDelta = event.kind { return true } }
            return false
        }
        async let first = session.submit("long")
        let sawDelta = await firstDelta.value
        XCTAssertTrue(sawDelta)
        async let queued = session.submit("queued")
        // Wait until the second prompt is in the queue, then drop it and abort the first.
        while session.pendingPrompt == nil { try await Task.sleep(nanoseconds: 5_000_000) }
        do {
            _ = try await session.submit("third")
            XCTFail("a second queued prompt must be refused")
        } catch RobotaError.queueFull {}
        XCTAssertEqual(session.cancelQueue(), "queued")
        session.abort()
        let (firstResult, queuedResult) = try await (first, queued)
        guard case .interrupted(let outcome) = firstResult else {
            return XCTFail("expected interrupted, got \(firstResult)")
        }
        XCTAssertTrue(outcome?.response.hasPrefix("tok ") ?? false)
        XCTAssertEqual(queuedResult, .cancelled)
        // The session is still usable.
        let next = try await session.submit("again")
        XCTAssertEqual(next.response, "second")
    }

    func testBadInputThrowsTypedErrors() async throws {
        XCTAssertThrowsError(try InteractiveSession(options: SessionOptions(
            provider: .json(["type": "carrier-pigeon"])))) { error in
            guard case RobotaError.invalidArgument(let message) = error else {
                return XCTFail("expected invalidArgument, got \(error)")
            }
            XCTAssertTrue(message.contains("carrier-pigeon"), message)
        }
        XCTAssertThrowsError(try InteractiveSession(options: SessionOptions(
            provider: .json(["type": "scripted", "turns": "nope"])))) { error in
            XCTAssertEqual((error as? RobotaError)?.code, "invalid_json", "\(error)")
        }
        var fork = SessionOptions(provider: .scripted(turns: []))
        fork.forkSession = true
        XCTAssertThrowsError(try InteractiveSession(options: fork)) { error in
            XCTAssertEqual((error as? RobotaError)?.code, "invalid_argument", "\(error)")
        }
        XCTAssertThrowsError(try InteractiveSession(options: SessionOptions(
            provider: .replay(logPath: "/nonexistent/log.jsonl")))) { error in
            XCTAssertEqual((error as? RobotaError)?.code, "invalid_argument", "\(error)")
        }
        let badTool = FunctionTool(name: " ", description: "") { _, _ in "" }
        XCTAssertThrowsError(try InteractiveSession(options: SessionOptions(
            provider: .scripted(turns: []), tools: [badTool]))) { error in
            XCTAssertEqual((error as? RobotaError)?.code, "invalid_argument", "\(error)")
        }
        let session = try InteractiveSession(options: SessionOptions(
            provider: .scripted(turns: [.text("hi")]), cwd: try temporaryDirectory()))
        try session.setName("before")
        XCTAssertEqual(session.name, "before")
        try await session.shutdown()
        do {
            _ = try await session.submit("after shutdown")
            XCTFail("a shut-down session must refuse prompts")
        } catch RobotaError.shutDown {}
        XCTAssertThrowsError(try session.setName("after")) { error in
            XCTAssertEqual((error as? RobotaError)?.code, "shut_down", "\(error)")
        }
    }

    func testResumeContinuesASavedSession() async throws {
        let dir = try temporaryDirectory()
        let store = Persistence.store(sessionsDir: "\(dir)/sessions", logsDir: "\(dir)/logs")
        let first = try InteractiveSession(options: SessionOptions(
            provider: .scripted(turns: [.text("Noted: 7.")]), cwd: dir, persistence: store))
        _ = try await first.submit("Remember 7")
        let id = first.sessionId
        try await first.shutdown()

        var options = SessionOptions(
            provider: .scripted(turns: [.text("It was 7.")]), cwd: dir, persistence: store)
        options.resumeSessionId = id
        let resumed = try InteractiveSession(options: options)
        XCTAssertEqual(resumed.sessionId, id)
        let result = try await resumed.submit("What was it?")
        XCTAssertEqual(result.response, "It was 7.")
        let texts = try resumed.messages().compactMap {
            $0["content"]?.arrayValue?.first?["text"]?.stringValue
        }
        XCTAssertEqual(texts, ["Remember 7", "Noted: 7.", "What was it?", "It was 7."])
        try await resumed.shutdown()

        // The same session cannot be resumed under a name that does not exist.
        options.resumeSessionId = "no-such-session"
        XCTAssertThrowsError(try InteractiveSession(options: options)) { error in
            XCTAssertNotNil(error as? RobotaError, "\(error)")
        }
    }

    func testCancellingTheSubmittingTaskAbortsThatPromptAndShutdownEndsTheStream() async throws {
        let session = try InteractiveSession(options: SessionOptions(
            provider: .json(["type": "scripted", "turns": [
                ["text": .array(Array(repeating: "tok ", count: 500)), "delay_ms_per_chunk": 10],
                ["text": "after"],
            ]]),
            cwd: try temporaryDirectory()))
        let events = session.events
        let ended = Task { () -> [String] in
            var types: [String] = []
            for await event in events where event.type != "text_delta" { types.append(event.type) }
            return types  // reached only when the stream ends
        }
        let submitting = Task { try await session.submit("long") }
        while session.streamingText.isEmpty { try await Task.sleep(nanoseconds: 5_000_000) }
        submitting.cancel()
        guard case .interrupted = try await submitting.value else {
            return XCTFail("cancelling the task must abort its prompt")
        }
        let next = try await session.submit("next")
        XCTAssertEqual(next.response, "after")
        try await session.shutdown()
        let types = await ended.value
        XCTAssertTrue(types.contains("interrupted"), "\(types)")
        XCTAssertTrue(types.contains("complete"), "\(types)")
    }

    func testFailuresOfSwiftCodeAndOfTheModelReachTheRightPlace() async throws {
        struct Broken: Error, CustomStringConvertible { var description: String { "disk on fire" } }
        // A throwing tool is a failed tool result the model sees.
        let mock = try MockLLM(script: toolTurns)
        let throwing = FunctionTool(name: "lookup", description: "Fails.", isReadOnly: true) { _, _ in
            throw Broken()
        }
        let query = try createQuery(options: SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory(), tools: [throwing]))
        _ = try await query("go")
        let toolResults = toolResultsSent(try await mock.requests())
        XCTAssertEqual(toolResults, ["disk on fire"])

        // A throwing Swift provider fails the run with its message.
        struct FailingProvider: Provider {
            let info = ProviderInfo(name: "failing", model: "f-1")
            func stream(request: JSONValue, emitter: ProviderEmitter) async throws -> ProviderAnswer {
                try emitter.text("partial")
                throw Broken()
            }
        }
        let session = try InteractiveSession(options: SessionOptions(
            provider: .custom(FailingProvider()), cwd: try temporaryDirectory()))
        let failed = try await session.submit("go")
        guard case .error(let failure, let outcome) = failed else { return XCTFail("\(failed)") }
        XCTAssertEqual(outcome?.stopReason, "error")
        XCTAssertTrue(failure.message.contains("disk on fire"), failure.message)

        // An HTTP error from the model's server, with retries off.
        let serverError = try MockLLM(script: """
            {"turns": [{"fault": {"kind": "status", "status": 401, "message": "bad key"}}]}
            """)
        var options = SessionOptions(
            provider: .json(["type": "openai", "model": "gpt-test", "api_key": "sk-bad",
                             "base_url": .string("\(serverError.baseURL)/v1"), "max_retries": 0]),
            cwd: try temporaryDirectory())
        options.maxTurns = 1
        let unauthorized = try await InteractiveSession(options: options).submit("go")
        guard case .error(let denied, _) = unauthorized else { return XCTFail("\(unauthorized)") }
        XCTAssertEqual(denied.kind, "auth")
        XCTAssertEqual(denied.httpStatus, 401)
        XCTAssertEqual(denied.provider, "openai")
        let sent = try await serverError.requests()
        XCTAssertEqual(sent.count, 1)
        XCTAssertEqual((sent.first?["headers"] as? [String: Any])?["authorization"] as? String, "Bearer sk-bad")
    }

    func testEvaluatePermissionIsTheSessionsRuleEngine() throws {
        let cwd = try temporaryDirectory()
        let denied = try evaluatePermission(
            tool: "Bash", input: ["command": "rm -rf build"], cwd: cwd,
            allow: ["Bash(git *)"], deny: ["Bash(rm *)"])
        XCTAssertEqual(denied.decision, "deny")
        XCTAssertNotNil(denied.matchedRule)
        let allowed = try evaluatePermission(
            tool: "Bash", input: ["command": "git status"], cwd: cwd, allow: ["Bash(git *)"])
        XCTAssertEqual(allowed.decision, "allow")
        let asked = try evaluatePermission(tool: "Bash", input: ["command": "make"], cwd: cwd)
        XCTAssertEqual(asked.decision, "ask")
        XCTAssertThrowsError(try evaluatePermission(tool: "Bash", cwd: cwd, mode: "yolo")) { error in
            XCTAssertEqual((error as? RobotaError)?.code, "invalid_json", "\(error)")
        }
    }

    func testAHundredConcurrentSessions() async throws {
        let dir = try temporaryDirectory()
        let responses = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let session = try InteractiveSession(options: SessionOptions(
                        provider: .scripted(turns: [ScriptedTurn(text: ["session ", "\(index)"])]),
                        cwd: dir))
                    let result = try await session.submit("hi")
                    try await session.shutdown()
                    return result.response ?? ""
                }
            }
            var all: [String] = []
            for try await response in group { all.append(response) }
            return all
        }
        XCTAssertEqual(Set(responses), Set((0..<100).map { "session \($0)" }))
    }
}

/// A model written in Swift: calls `lookup` once, then echoes the prompt and the tool result.
struct EchoProvider: Provider {
    let info = ProviderInfo(name: "echo", model: "echo-1")

    func stream(request: JSONValue, emitter: ProviderEmitter) async throws -> ProviderAnswer {
        let messages = request["messages"]?.arrayValue ?? []
        let prompt = messages.first?["content"]?.arrayValue?.first?["text"]?.stringValue ?? "?"
        guard let last = messages.last, let blocks = last["content"]?.arrayValue,
            let result = blocks.first(where: { $0["type"] == "tool_result" })
        else {
            try emitter.toolCall(id: "e1", name: "lookup", input: ["key": "answer"])
            return ProviderAnswer()
        }
        let text = result["content"]?.stringValue
            ?? result["content"]?.arrayValue?.first?["text"]?.stringValue ?? "?"
        try emitter.text("echo: \(prompt) ")
        try emitter.text("(tool said: \(text))")
        return ProviderAnswer(stopReason: "end_turn")
    }
}

/// A thread-safe counter for callbacks.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    @discardableResult
    func increment() -> Int { lock.withLock { count += 1; return count } }

    var value: Int { lock.withLock { count } }
}
