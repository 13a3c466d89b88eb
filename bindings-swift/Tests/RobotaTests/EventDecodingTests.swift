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
            .backgroundTaskEvent(["task_kind": "subagent"]))
        XCTAssertEqual(
            try event(["type": "session_recovered", "message": "m", "report": ["repaired": true]]).kind,
            .sessionRecovered(message: "m", report: ["repaired": true]))
        XCTAssertEqual(
            try event(["type": "session", "event": ["type": "permission_resolved"]]).kind,
            .session(["type": "permission_resolved"]))
        XCTAssertEqual(try event(["type": "from_the_future"]).kind, .other(type: "from_the_future"))
        XCTAssertThrowsError(try SessionEvent(json: ["type": "text_delta"]))
    }
}
