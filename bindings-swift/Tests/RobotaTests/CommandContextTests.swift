// A command written in Swift acting on its session through the live `CommandContext`: reading
// the state, changing the permission mode, clearing the conversation, changing the automatic
// compaction, writing and reading settings, running a subagent; a context kept past its
// command, and a bad operation, throw typed errors.
import Foundation
import Robota
import XCTest

/// A context a command leaked, to try after the command returned.
final class LeakedContext: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: CommandContext?

    var context: CommandContext? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

final class CommandContextTests: XCTestCase {
    func testASwiftCommandActsOnTheLiveSession() async throws {
        let project = try temporaryDirectory()
        let leaked = LeakedContext()
        let tidy = Command(name: "tidy", description: "Plan mode, a clean slate.") { context in
            leaked.context = context
            let before = try await context.state()
            XCTAssertEqual(before.sessionId, context.sessionId)
            XCTAssertEqual(before.permissionMode, "default")
            XCTAssertFalse(before.invokedByModel)
            let history = try await context.history()
            XCTAssertFalse(history.isEmpty)
            try await context.setPermissionMode("plan")
            try await context.clear()
            let policy = try await context.setAutoCompact(enabled: false, threshold: 0.5)
            XCTAssertFalse(policy.enabled)
            XCTAssertEqual(policy.threshold, 0.5)
            let path = try await context.updateSettings(["language": "French"], scope: .localSettings)
            XCTAssertTrue(path.hasSuffix(".claude/settings.local.json"), path)
            let settings = try await context.readSettings(.localSettings)
            XCTAssertEqual(settings["language"], "French")
            let report = try await context.runSubagent(SubagentRequest(prompt: "Look around."))
            let after = try await context.state()
            return CommandResult(
                message: "\(after.permissionMode): \(report.response)",
                effects: [["type": "conversation_history_cleared"]])
        }
        let badMode = Command(name: "bad-mode", description: "Asks for a mode that does not exist.") {
            context in
            try await context.setPermissionMode("reckless")
            return "unreachable"
        }
        var options = SessionOptions(
            provider: .scripted(turns: [.text("Hi."), .text("Nothing here.")]), cwd: project,
            commandModules: [CommandModule(name: "host", commands: [tidy, badMode])])
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.builtinTools = false
        let session = try InteractiveSession(options: options)
        _ = try await session.submit("Hello")
        XCTAssertFalse(try session.messages().isEmpty)

        let result = try await session.executeCommand("tidy")
        XCTAssertTrue(result.success, result.message)
        XCTAssertEqual(result.message, "plan: Nothing here.")
        XCTAssertEqual(result.effects, [["type": "conversation_history_cleared"]])
        XCTAssertEqual(try session.messages(), [])
        let saved = try String(
            contentsOfFile: "\(project)/.claude/settings.local.json", encoding: .utf8)
        XCTAssertEqual(try JSONValue(parsing: saved)["language"], "French")

        // The context of a command that returned can no longer act.
        let kept = try XCTUnwrap(leaked.context)
        XCTAssertFalse(kept.isValid)
        do {
            try await kept.clear()
            XCTFail("a context used after its command returned must throw")
        } catch RobotaError.command(let message) {
            XCTAssertTrue(message.contains("no longer valid"), message)
        }

        // An operation that fails fails the command with the engine's message.
        let failed = try await session.executeCommand("bad-mode")
        XCTAssertFalse(failed.success)
        XCTAssertTrue(failed.message.contains("reckless"), failed.message)

        // A snapshot context (a command's body tested on its own) has no session to act on.
        do {
            try await CommandContext(args: "", sessionId: "s").clear()
            XCTFail("a snapshot context must throw")
        } catch RobotaError.command {}
        try await session.shutdown()
    }
}
