// Background tasks and subagents through the Swift API against mock-llm: the model starts a
// process with Bash `run_in_background`; the host lists it, reads its log, sees its lifecycle as
// typed events, cancels it (its process gone, checked by pid) and closes it, or writes to its
// standard input. Subagents started
// from host code: one in the foreground, one in the background read back from its log, and a
// slow one cancelled.
import Foundation
import Robota
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// True while process `pid` exists and is not a zombie.
func processAlive(_ pid: UInt32) -> Bool {
    guard kill(pid_t(pid), 0) == 0 else { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state != "Z" && state != "X"
}

/// Collects a session's `backgroundTask` events.
actor TaskEvents {
    private(set) var events: [BackgroundTaskEvent] = []
    func append(_ event: BackgroundTaskEvent) { events.append(event) }
}

/// Reads `session`'s background task events into a `TaskEvents` until cancelled.
func collectTaskEvents(_ session: InteractiveSession) -> (TaskEvents, Task<Void, Never>) {
    let log = TaskEvents()
    let stream = session.events
    let reader = Task {
        for await event in stream {
            if case .backgroundTask(let change) = event.kind { await log.append(change) }
        }
    }
    return (log, reader)
}

/// Waits up to 10 s for `condition`.
func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
    for _ in 0..<500 {
        if try await condition() { return }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
    XCTFail("timed out waiting for \(what)")
}

final class BackgroundTests: XCTestCase {
    func testHostListsReadsCancelsAndClosesABackgroundBashTask() async throws {
        let mock = try MockLLM(script: """
            {"turns": [
              {"tool_calls": [{"id": "toolu_bg", "name": "Bash", "input": {
                "command": "echo $$ > shell.pid; while :; do echo tick; sleep 0.05; done",
                "run_in_background": true}}]},
              {"text": "started"}
            ]}
            """)
        let work = try temporaryDirectory()
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: work, permissionHandler: { _ in .allow })
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        let session = try InteractiveSession(options: options)
        let (log, reader) = collectTaskEvents(session)
        let result = try await session.submit("start it")
        XCTAssertEqual(result.response, "started")

        let tasks = try session.listBackgroundTasks()
        XCTAssertEqual(tasks.map(\.id), ["bash_1"])
        let task = tasks[0]
        XCTAssertEqual(task.kind, "process")
        XCTAssertEqual(task.status, .running)
        XCTAssertTrue(task.isRunning)
        XCTAssertEqual(task.origin.kind, "tool")
        XCTAssertEqual(task.origin.name, "Bash")
        XCTAssertEqual(task.origin.toolUseId, "toolu_bg")
        try await eventually("the task's output") {
            try FileManager.default.fileExists(atPath: "\(work)/shell.pid")
                && !session.readBackgroundTaskLog("bash_1").text.isEmpty
        }
        let pidText = try String(contentsOfFile: "\(work)/shell.pid", encoding: .utf8)
        let pid = try XCTUnwrap(UInt32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(task.pid, pid)
        XCTAssertTrue(processAlive(pid))
        let page = try session.readBackgroundTaskLog("bash_1", stream: .stdout, offset: 0, maxBytes: 5)
        XCTAssertEqual(page.text, "tick\n")
        XCTAssertEqual(page.nextOffset, 5)
        XCTAssertEqual(page.taskId, "bash_1")

        // Still running after a short wait; a running task cannot be closed; cancel stops it
        // with its process.
        let waited = try await session.waitBackgroundTask("bash_1", timeout: .milliseconds(100))
        XCTAssertEqual(waited.status, .running)
        XCTAssertThrowsError(try session.closeBackgroundTask("bash_1")) { error in
            guard case .invalidArgument(let message)? = error as? RobotaError else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(message.contains("still running"), message)
        }
        let cancelled = try await session.cancelBackgroundTask("bash_1")
        XCTAssertEqual(cancelled.status, .cancelled)
        XCTAssertFalse(processAlive(pid), "the task's shell \(pid) is still there")
        XCTAssertEqual(try session.backgroundTask("bash_1")?.status, .cancelled)

        try await eventually("three lifecycle events") { await log.events.count >= 3 }
        reader.cancel()
        let changes = await log.events.compactMap { event -> String? in
            guard case .stateChanged(let id, _, let status, let task) = event else { return nil }
            XCTAssertEqual(task.id, id)
            return "\(id) \(status.rawValue)"
        }
        XCTAssertEqual(changes, ["bash_1 queued", "bash_1 running", "bash_1 cancelled"])

        XCTAssertEqual(try session.closeBackgroundTask("bash_1").id, "bash_1")
        XCTAssertEqual(try session.listBackgroundTasks(), [])
        XCTAssertNil(try session.backgroundTask("bash_1"))
        do {
            try await session.cancelBackgroundTask("bash_1")
            XCTFail("an unknown task must throw")
        } catch RobotaError.invalidArgument(let message) {
            XCTAssertTrue(message.contains("bash_1"), message)
        }
        try await session.shutdown()
    }

    func testInputSentToARunningTaskReachesItsStandardInput() async throws {
        let mock = try MockLLM(script: """
            {"turns": [
              {"tool_calls": [{"id": "toolu_in", "name": "Bash", "input": {
                "command": "read line; echo got:$line", "run_in_background": true}}]},
              {"text": "waiting for input"}
            ]}
            """)
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory(), permissionHandler: { _ in .allow })
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        let session = try InteractiveSession(options: options)
        _ = try await session.submit("start it")
        try await session.sendBackgroundTask("bash_1", input: "hello\n")
        let ended = try await session.waitBackgroundTask("bash_1", timeout: .seconds(10))
        XCTAssertEqual(ended.status, .completed, "\(ended)")
        XCTAssertEqual(ended.exitCode, 0)
        XCTAssertEqual(try session.readBackgroundTaskLog("bash_1").text, "got:hello\n")
        try await session.shutdown()
    }

    func testSubagentsFromHostCodeInTheForegroundAndTheBackground() async throws {
        let mock = try MockLLM(script: """
            {"turns": [
              {"text": "Found 3 files."},
              {"text": "The tests pass."},
              {"text": {"repeat": "still thinking ", "count": 1000}, "chunk_delay_ms": 20}
            ]}
            """)
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory(), permissionHandler: { _ in .allow })
        options.home = try temporaryDirectory()
        // Background tasks belong to the built-in tools' task manager: they stay on.
        options.loadProjectContext = false
        let session = try InteractiveSession(options: options)
        let (log, reader) = collectTaskEvents(session)

        // In the foreground: the report comes back.
        let report = try await session.runSubagent(SubagentRequest(prompt: "Count the files."))
        XCTAssertEqual(report.response, "Found 3 files.")
        XCTAssertEqual(report.agentType, "general-purpose")
        XCTAssertEqual(report.stopReason, "completed")
        XCTAssertFalse(report.interrupted)

        // In the background: a task of kind `agent` whose log is the report.
        let started = try session.startBackgroundSubagent(SubagentRequest(prompt: "Run the tests."))
        XCTAssertEqual(started.kind, "agent")
        XCTAssertEqual(started.origin.kind, "host")
        let ended = try await session.waitBackgroundTask(started.id, timeout: .seconds(20))
        XCTAssertEqual(ended.status, .completed, "\(ended)")
        XCTAssertTrue(
            try session.readBackgroundTaskLog(started.id).text.contains("The tests pass."))

        // A slow one is cancelled while it streams.
        let slow = try session.startBackgroundSubagent(SubagentRequest(prompt: "Think hard."))
        try await eventually("the slow subagent to start") {
            await log.events.contains { event in
                guard case .subagent(let id, .started) = event else { return false }
                return id == slow.id
            }
        }
        let cancelled = try await session.cancelBackgroundTask(slow.id)
        XCTAssertEqual(cancelled.status, .cancelled)

        // Bad requests are refused before anything runs.
        XCTAssertThrowsError(
            try session.startBackgroundSubagent(SubagentRequest(prompt: "x", agentType: "nobody"))
        ) { error in
            guard case .invalidArgument(let message)? = error as? RobotaError else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(message.contains("nobody"), message)
        }
        XCTAssertThrowsError(try session.startBackgroundSubagent(SubagentRequest(prompt: "  ")))

        try await eventually("the background subagent's report event") {
            await log.events.contains { event in
                guard case .subagent(let id, .finished(let report)) = event else { return false }
                return id == started.id && report.response == "The tests pass."
            }
        }
        reader.cancel()
        let events = await log.events
        // The foreground run reports progress too (without a task id).
        XCTAssertTrue(events.contains { event in
            guard case .subagent(let id, .finished(let finished)) = event else { return false }
            return id == nil && finished == report
        })
        let statuses = events.compactMap { event -> String? in
            guard case .stateChanged(let id, _, let status, _) = event, id == started.id else {
                return nil
            }
            return status.rawValue
        }
        XCTAssertEqual(statuses.last, "completed", "\(statuses)")
        try await session.shutdown()
    }
}
