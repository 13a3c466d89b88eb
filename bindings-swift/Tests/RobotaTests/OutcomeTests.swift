// How a prompt ends, against mock-llm over loopback: a refusal, a cut-off answer and a failed
// model call each end the prompt with their own status (never `complete`), with the provider's
// explanation or the error's kind, HTTP status and retry advice.
import Foundation
import Robota
import XCTest

/// An Anthropic provider on `mock` that never retries.
func anthropicWithoutRetries(_ mock: MockLLM) -> ProviderConfig {
    .json([
        "type": "anthropic", "model": "claude-test", "api_key": "sk-test",
        "base_url": .string(mock.baseURL), "max_retries": 0,
    ])
}

/// The `messages` of every request the model was sent, as text.
func messagesSent(_ requests: [[String: Any]]) -> [String] {
    requests.map { request in
        let body = request["body"] as? [String: Any]
        return String(describing: body?["messages"] ?? "")
    }
}

final class OutcomeTests: XCTestCase {
    func testARefusalIsRefusedWithTheProvidersExplanation() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"refusal": ["I can't ", "help with that."],
                        "stop_details": {"type": "refusal", "category": "cyber",
                                         "explanation": "Working malware."}}]}
            """)
        let session = try InteractiveSession(options: SessionOptions(
            provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory()))
        let events = session.events
        let ended = Task { () -> [SessionEvent.Kind] in
            var ends: [SessionEvent.Kind] = []
            for await event in events {
                switch event.kind {
                case .complete, .refused, .truncated, .interrupted, .error: ends.append(event.kind)
                default: continue
                }
                if !ends.isEmpty { break }
            }
            return ends
        }
        let result = try await session.submit("write malware")
        XCTAssertEqual(result.status, .refused)
        guard case .refused(let outcome) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(outcome.stopReason, "refused")
        XCTAssertEqual(result.response, "I can't help with that.")
        XCTAssertEqual(
            result.refusal,
            Refusal(text: "I can't help with that.", category: "cyber", explanation: "Working malware."))
        XCTAssertNil(result.errorInfo)
        let ends = await ended.value
        XCTAssertEqual(ends, [.refused(outcome)])
        let sent = try await mock.requests()
        XCTAssertEqual(sent.count, 1, "a refusal is never asked again")
        try await session.shutdown()
    }

    func testACutOffAnswerIsTruncatedAndContinueAnswerAsksForTheRest() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"text": ["Half of ", "it"], "stop_reason": "max_tokens"},
                       {"text": " and the rest."}]}
            """)
        let session = try InteractiveSession(options: SessionOptions(
            provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory()))
        let result = try await session.submit("write a lot")
        XCTAssertEqual(result.status, .truncated)
        guard case .truncated(let outcome) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(outcome.response, "Half of it")
        XCTAssertEqual(outcome.stopReason, "truncated")
        // The host chooses to continue: the model sees the cut-off answer and is asked to go on.
        let after = try await session.continueAnswer()
        XCTAssertEqual(after.status, .complete)
        XCTAssertEqual(after.response, " and the rest.")
        let sent = messagesSent(try await mock.requests())
        XCTAssertEqual(sent.count, 2)
        XCTAssertTrue(sent[1].contains("Half of it") && sent[1].contains("cut off"), sent[1])
        try await session.shutdown()
    }

    func testAFailedModelCallIsAnErrorWithKindStatusAndRetryAdvice() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"fault": {"kind": "status", "status": 401, "message": "invalid x-api-key"}},
                       {"fault": {"kind": "status", "status": 429, "retry_after": "7"}}]}
            """)
        let session = try InteractiveSession(options: SessionOptions(
            provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory()))
        let result = try await session.submit("hi")
        XCTAssertEqual(result.status, .error)
        guard case .error(let info, _) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(info.kind, "auth")
        XCTAssertEqual(info.httpStatus, 401)
        XCTAssertEqual(info.provider, "anthropic")
        XCTAssertFalse(info.retryable)
        XCTAssertNil(info.retryAfterMs)
        XCTAssertTrue(info.message.contains("invalid x-api-key"), info.message)
        XCTAssertEqual(result.errorInfo, info)

        let again = try await session.submit("again")
        guard let limited = again.errorInfo else { return XCTFail("\(again)") }
        XCTAssertEqual(limited.kind, "rate_limit")
        XCTAssertEqual(limited.httpStatus, 429)
        XCTAssertEqual(limited.retryAfterMs, 7000)
        XCTAssertTrue(limited.retryable)
        try await session.shutdown()
    }

    func testQueryResultsCarryTheStatusAndContinueAfterACutOff() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"refusal": "No.", "stop_details": {"type": "refusal", "explanation": "Policy."}},
                       {"text": "cut", "stop_reason": "max_tokens"},
                       {"text": "ting it short."}]}
            """)
        let query = try createQuery(options: SessionOptions(
            provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory()))
        let refused = try await query("do harm")
        XCTAssertEqual(refused.status, .refused)
        XCTAssertEqual(refused.stopReason, "refused")
        XCTAssertEqual(refused.refusal?.explanation, "Policy.")
        let cut = try await query("long")
        XCTAssertEqual(cut.status, .truncated)
        XCTAssertEqual(cut.response, "cut")
        XCTAssertNil(cut.refusal)
        let rest = try await query.continueAnswer()
        XCTAssertEqual(rest.status, .complete)
        XCTAssertEqual(rest.response, "ting it short.")
    }
}
