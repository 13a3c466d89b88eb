// Every engine event type decodes into its own `SessionEvent.Kind` case, keeping its payload and
// the raw JSON (nothing is lost through a catch-all).
import XCTest

@testable import Robota

final class EventDecodingTests: XCTestCase {
    func event(_ json: JSONValue) throws -> SessionEvent {
        var object: [String: JSONValue] = ["seq": 7, "session_id": "s1"]
        if case .object(let fields) = json { object.merge(fields) { _, new in new } }
        let event = try SessionEvent(json: .object(object))
        XCTAssertEqual(event.seq, 7)
        XCTAssertEqual(event.sessionId, "s1")
        XCTAssertEqual(event.json, .object(object))
        return event
    }

    func testEveryEventTypeHasItsCase() throws {
        let tool: JSONValue = [
            "tool_use_id": "t1", "name": "Read", "first_arg": "a.txt", "is_running": false,
            "result": "success", "tool_result_data": "hello",
        ]
        let outcome: JSONValue = [
            "response": "hi", "interrupted": false, "rounds": 1, "stop_reason": "completed",
            "usage": ["input_tokens": 3, "output_tokens": 2], "tools_executed": ["Read"],
            "execution_id": "e1",
        ]
        XCTAssertEqual(try event(["type": "text_delta", "text": "a"]).kind, .textDelta("a"))
        XCTAssertEqual(try event(["type": "thinking", "text": "b"]).kind, .thinking("b"))
        guard case .toolStart(let start) = try event(["type": "tool_start", "tool": tool]).kind,
            case .toolEnd(let end) = try event(["type": "tool_end", "tool": tool]).kind
        else { return XCTFail("tool events") }
        XCTAssertEqual(start.firstArg, "a.txt")
        XCTAssertEqual(end.toolResultData, "hello")
        XCTAssertEqual(
            try event([
                "type": "permission_request", "request_id": "r1", "tool_name": "Bash",
                "input": ["command": "ls"], "tool_use_id": "t1", "reason": "ask",
                "permission_mode": "default",
            ]).kind,
            .permissionRequest(requestId: "r1", toolName: "Bash", input: ["command": "ls"]))
        XCTAssertEqual(
            try event(["type": "context_update", "state": ["used_tokens": 5]]).kind,
            .contextUpdate(["used_tokens": 5]))
        XCTAssertEqual(
            try event(["type": "compaction", "trigger": "auto", "tokens_before": 900, "tokens_after": 100]).kind,
            .compaction(trigger: "auto", tokensBefore: 900, tokensAfter: 100))
        guard case .complete(let done) = try event(["type": "complete", "outcome": outcome]).kind else {
            return XCTFail("complete")
        }
        XCTAssertEqual(done.usage, Usage(inputTokens: 3, outputTokens: 2))
        XCTAssertEqual(done.toolsExecuted, ["Read"])
        XCTAssertEqual(
            try event([
                "type": "error", "message": "slow down",
                "error": [
                    "kind": "rate_limit", "message": "slow down", "provider": "anthropic",
                    "status": 429, "retryable": true, "retry_after_ms": 7000,
                ],
            ]).kind,
            .error(
                ErrorInfo(
                    kind: "rate_limit", message: "slow down", provider: "anthropic", httpStatus: 429,
                    retryable: true, retryAfterMs: 7000),
                outcome: nil))
        XCTAssertEqual(
            try event(["type": "error", "message": "no"]).kind,
            .error(ErrorInfo(kind: "session", message: "no"), outcome: nil))
        let refusedOutcome: JSONValue = [
            "response": "No.", "interrupted": false, "rounds": 1, "stop_reason": "refused",
            "usage": ["input_tokens": 3, "output_tokens": 2], "tools_executed": [],
            "execution_id": "e2", "refusal": ["text": "No.", "category": "cyber"],
        ]
        guard case .refused(let refused) = try event(["type": "refused", "outcome": refusedOutcome]).kind
        else { return XCTFail("refused") }
        XCTAssertEqual(refused.refusal, Refusal(text: "No.", category: "cyber"))
        guard case .truncated(let truncated) = try event(["type": "truncated", "outcome": outcome]).kind
        else { return XCTFail("truncated") }
        XCTAssertNil(truncated.refusal)
        XCTAssertEqual(try event(["type": "interrupted"]).kind, .interrupted(nil))
        XCTAssertEqual(
            try event(["type": "interrupted", "outcome": outcome]).kind, .interrupted(done))
        guard
            case .skillActivation(let activation) = try event([
                "type": "skill_activation",
                "data": [
                    "skill_name": "greet", "source": "host", "invocation": "user_slash",
                    "mode": "inject", "status": "failed", "arguments": "Ada",
                    "timestamp": "2026-01-01T00:00:00Z", "error": "boom",
                ],
            ]).kind
        else { return XCTFail("skill_activation") }
        XCTAssertEqual(activation.skillName, "greet")
        XCTAssertEqual(activation.invocation, "user_slash")
        XCTAssertEqual(activation.status, "failed")
        XCTAssertEqual(activation.error, "boom")
        XCTAssertNil(activation.path)
        XCTAssertEqual(activation.notes, [])
        XCTAssertThrowsError(
            try SessionEvent(json: ["type": "skill_activation", "seq": 1, "data": ["status": 3]]))
        XCTAssertEqual(
            try event(["type": "background_task_event", "data": ["task_kind": "subagent"]]).kind,
            .backgroundTask(.other(["task_kind": "subagent"])))
        XCTAssertEqual(
            try event(["type": "session_recovered", "message": "m", "report": ["repaired": true]]).kind,
            .sessionRecovered(message: "m", report: ["repaired": true]))
        XCTAssertEqual(
            try event(["type": "session", "event": ["type": "permission_resolved"]]).kind,
            .session(["type": "permission_resolved"]))
        XCTAssertEqual(try event(["type": "from_the_future"]).kind, .other(type: "from_the_future"))
        XCTAssertThrowsError(try SessionEvent(json: ["type": "text_delta"]))
    }

    func testBackgroundTaskEventsAreTyped() throws {
        let task: JSONValue = [
            "id": "bash_1", "kind": "process",
            "origin": ["kind": "tool", "name": "Bash", "tool_use_id": "toolu_1"],
            "command": "sleep 9", "cwd": "/w", "pid": 42, "status": "cancelled", "exit_code": nil,
            "signal": 15, "error": "cancelled", "timeout_reason": nil, "current_action": nil,
            "stdout_path": "/w/o", "stderr_path": "/w/e", "output_bytes": 0,
            "created_at_ms": 1, "ended_at_ms": 2,
        ]
        guard
            case .backgroundTask(.stateChanged(let id, let from, let status, let decoded)) =
                try event([
                    "type": "background_task_event",
                    "data": [
                        "event": "state_changed", "task_kind": "process", "task_id": "bash_1",
                        "origin": ["kind": "tool"], "from": "running", "status": "cancelled",
                        "task": task,
                    ],
                ]).kind
        else { return XCTFail("state_changed") }
        XCTAssertEqual(id, "bash_1")
        XCTAssertEqual(from, .running)
        XCTAssertEqual(status, .cancelled)
        XCTAssertEqual(decoded.pid, 42)
        XCTAssertEqual(decoded.signal, 15)
        XCTAssertEqual(decoded.origin.toolUseId, "toolu_1")
        XCTAssertFalse(decoded.isRunning)
        guard
            case .backgroundTask(.stateChanged(_, nil, .queued, _)) = try event([
                "type": "background_task_event",
                "data": [
                    "event": "state_changed", "task_kind": "process", "task_id": "bash_1",
                    "from": nil, "status": "queued", "task": task,
                ],
            ]).kind
        else { return XCTFail("a created task") }

        let progress: [(JSONValue, SubagentProgress)] = [
            (["event": "started", "agent_id": "a1", "agent_type": "Explore", "isolation": "none"],
             .started(agentId: "a1", agentType: "Explore")),
            (["event": "tool_start", "agent_id": "a1", "tool_name": "Read", "tool_use_id": "t"],
             .toolStart(agentId: "a1", toolName: "Read", toolUseId: "t")),
            (["event": "tool_end", "agent_id": "a1", "tool_name": "Read", "tool_use_id": "t",
              "is_error": true],
             .toolEnd(agentId: "a1", toolName: "Read", toolUseId: "t", isError: true)),
        ]
        for (data, expected) in progress {
            guard case .object(var fields) = data else { return XCTFail() }
            fields["task_kind"] = "subagent"
            fields["task_id"] = "agent_1"
            let kind = try event(["type": "background_task_event", "data": .object(fields)]).kind
            XCTAssertEqual(kind, .backgroundTask(.subagent(taskId: "agent_1", progress: expected)))
        }
        let report: JSONValue = [
            "agent_id": "a1", "agent_type": "Explore", "model": "m", "response": "done",
            "stop_reason": "completed", "interrupted": false, "rounds": 1,
            "tools_executed": ["Read"], "stop_hook_continuations": 0,
        ]
        guard
            case .backgroundTask(.subagent(nil, .finished(let finished))) = try event([
                "type": "background_task_event",
                "data": ["event": "finished", "task_kind": "subagent", "report": report],
            ]).kind
        else { return XCTFail("finished") }
        XCTAssertEqual(finished.response, "done")
        XCTAssertEqual(finished.toolsExecuted, ["Read"])
        XCTAssertEqual(finished.notes, [])
        XCTAssertThrowsError(
            try SessionEvent(json: [
                "type": "background_task_event", "seq": 1,
                "data": ["event": "state_changed", "status": "exploded"],
            ]))
    }
}
