// Edit checkpoints and project memory through the Swift API, against mock-llm: the model writes,
// edits and (through a Swift tool declaring `mutatedFileFields`) deletes files over two prompts;
// the checkpoints are listed, inspected, restored and rolled back; the `rewind` and `memory`
// commands run, and a secret is refused.
import Foundation
import Robota
import XCTest

final class CheckpointTests: XCTestCase {
    func testCheckpointsRestoreAndRollBackEdits() async throws {
        let work = URL(fileURLWithPath: try temporaryDirectory()).resolvingSymlinksInPath()
        let dir = work.path
        try "one\n".write(to: work.appendingPathComponent("a.txt"), atomically: true, encoding: .utf8)
        try "doomed\n".write(
            to: work.appendingPathComponent("gone.txt"), atomically: true, encoding: .utf8)
        let script = """
            {"turns": [
              {"tool_calls": [{"id": "w", "name": "Write",
                "input": {"file_path": "\(dir)/new.txt", "content": "created\\n"}}]},
              {"text": "one"},
              {"tool_calls": [
                {"id": "e", "name": "Edit", "input": {"file_path": "\(dir)/a.txt",
                  "old_string": "one", "new_string": "two"}},
                {"id": "r", "name": "remove_file", "input": {"path": "gone.txt"}}]},
              {"text": "two"}
            ]}
            """
        let mock = try MockLLM(script: script)
        let remove = FunctionTool(
            name: "remove_file", description: "Deletes a file.",
            inputSchema: ["type": "object", "properties": ["path": ["type": "string"]]],
            mutatedFileFields: ["path"]
        ) { input, _ in
            try FileManager.default.removeItem(
                atPath: dir + "/" + (input["path"]?.stringValue ?? ""))
            return "removed"
        }
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: dir, permissionMode: "bypassPermissions", tools: [remove])
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        let session = try InteractiveSession(options: options)
        _ = try await session.submit("create")
        _ = try await session.submit("edit and delete")
        func read(_ name: String) -> String? {
            try? String(contentsOfFile: dir + "/" + name, encoding: .utf8)
        }
        XCTAssertEqual(read("a.txt"), "two\n")
        XCTAssertNil(read("gone.txt"))

        XCTAssertEqual(try session.listEditCheckpoints().map(\.id), ["turn-0001", "turn-0002"])
        let inspected = try session.inspectEditCheckpoint("turn-0002")
        XCTAssertEqual(inspected.files.map(\.displayPath), ["a.txt", "gone.txt"])
        XCTAssertEqual(inspected.rollbackRange, ["turn-0002"])
        XCTAssertThrowsError(try session.inspectEditCheckpoint("turn-0099")) { error in
            guard case RobotaError.invalidArgument = error else {
                return XCTFail("expected invalidArgument, got \(error)")
            }
        }

        let restored = try session.restoreEditCheckpoint("turn-0001")
        XCTAssertEqual(restored.rolledBack, ["turn-0002"])
        XCTAssertEqual(read("a.txt"), "one\n")
        XCTAssertEqual(read("gone.txt"), "doomed\n")
        XCTAssertEqual(read("new.txt"), "created\n")
        let listed = try await session.executeCommand("rewind", args: "list")
        XCTAssertTrue(listed.success)
        XCTAssertTrue(listed.message.contains("Bash"), listed.message)
        let rolledBack = try session.rollbackEditCheckpoint("turn-0001")
        XCTAssertEqual(rolledBack.deleted, ["new.txt"])
        XCTAssertNil(read("new.txt"))

        let added = try await session.executeCommand(
            "memory", args: "add project build Run make check first")
        XCTAssertTrue(added.success, added.message)
        let secret = try await session.executeCommand(
            "memory", args: "add user me my password is Tr0ub4dor&3")
        XCTAssertFalse(secret.success)
        XCTAssertEqual(secret.data?["category"]?.stringValue, "password")
        let index = read(".robota/memory/MEMORY.md") ?? ""
        XCTAssertTrue(index.contains("Run make check first"), index)
        XCTAssertFalse(index.contains("Tr0ub4dor"))
        try await session.shutdown()
    }
}
