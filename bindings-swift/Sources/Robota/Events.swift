// Session events: `SessionEvent` (seq, session id and a typed `kind`), decoded from the engine's
// JSON events (the same events every language gets).
import Foundation
import RobotaNative

/// Token counts.
public struct Usage: Sendable, Decodable, Equatable {
    /// Uncached input tokens.
    public let inputTokens: UInt64
    /// Output tokens.
    public let outputTokens: UInt64

    /// Token counts.
    public init(inputTokens: UInt64, outputTokens: UInt64) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
    }

    enum CodingKeys: String, CodingKey {
        case inputTokens = "input_tokens", outputTokens = "output_tokens"
    }
}

/// How a prompt or a query ended: the one vocabulary every language shares.
public enum OutcomeStatus: String, Sendable, Decodable, Equatable {
    /// The model answered (also after the round cap or the context guard: see `stopReason`).
    case complete
    /// The model refused to answer; `refusal` says what the provider said.
    case refused
    /// The answer was cut off at the output token limit; `continueAnswer()` asks for the rest.
    case truncated
    /// A model call failed, or the prompt could not run; the `ErrorInfo` says why.
    case error
    /// The prompt was aborted while it ran.
    case interrupted
    /// The prompt was dropped from the queue before it ran.
    case cancelled
}

/// What the provider said when the model refused.
public struct Refusal: Sendable, Decodable, Equatable {
    /// What the model said as it refused (the refusal message, or the answer text that streamed
    /// before the refusal cut it off); empty when there was none.
    public let text: String
    /// The provider's category for the refusal (`cyber`, `bio`, …), when it named one.
    public let category: String?
    /// The provider's explanation, when it gave one.
    public let explanation: String?

    /// A refusal saying `text`.
    public init(text: String, category: String? = nil, explanation: String? = nil) {
        self.text = text
        self.category = category
        self.explanation = explanation
    }

    enum CodingKeys: String, CodingKey { case text, category, explanation }

    /// Decodes the engine's refusal (a missing `text` is empty, as the engine writes it).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        text = try container.decodeIfPresent(String.self, forKey: .text) ?? ""
        category = try container.decodeIfPresent(String.self, forKey: .category)
        explanation = try container.decodeIfPresent(String.self, forKey: .explanation)
    }
}

/// Why a prompt failed: what kind of failure, what happened, and whether (and when) trying
/// again may help.
public struct ErrorInfo: Sendable, Decodable, Equatable {
    /// The failure's kind: for a failed model call `auth`, `rate_limit`, `overloaded`,
    /// `context_length`, `network`, `invalid_request` or `provider`; for a prompt that could
    /// not run `prompt_rejected`, `budget_exceeded`, `busy`, `shut_down`, `session_locked`,
    /// `invalid_argument` or `session`.
    public let kind: String
    /// What went wrong and, where known, how to fix it.
    public let message: String
    /// The provider whose call failed (`anthropic`, `openai`, …).
    public let provider: String?
    /// The HTTP status of the failed call, when it was an HTTP error response.
    public let httpStatus: UInt16?
    /// Whether sending the same prompt again may succeed (rate limits, overload, network).
    public let retryable: Bool
    /// How long the provider asked to wait before retrying, in milliseconds, when it named a
    /// time.
    public let retryAfterMs: UInt64?

    /// An error of `kind` saying `message`.
    public init(
        kind: String, message: String, provider: String? = nil, httpStatus: UInt16? = nil,
        retryable: Bool = false, retryAfterMs: UInt64? = nil
    ) {
        self.kind = kind
        self.message = message
        self.provider = provider
        self.httpStatus = httpStatus
        self.retryable = retryable
        self.retryAfterMs = retryAfterMs
    }

    enum CodingKeys: String, CodingKey {
        case kind, message, provider, httpStatus = "status", retryable
        case retryAfterMs = "retry_after_ms"
    }
}

/// What a run produced.
public struct RunOutcome: Sendable, Decodable, Equatable {
    /// The final answer text.
    public let response: String
    /// True when the run was aborted.
    public let interrupted: Bool
    /// Model/tool rounds run.
    public let rounds: UInt32
    /// Tokens used.
    public let usage: Usage
    /// Why the run ended (`completed`, `interrupted`, `max_turns`, `context_limit`, `error`, …).
    public let stopReason: String
    /// The tools that ran, in call order.
    public let toolsExecuted: [String]
    /// What the provider said, when the model refused (`stopReason` `refused`).
    public let refusal: Refusal?
    /// With an `outputFormat`: the answer validated against its schema (see
    /// `decodeStructuredOutput(_:)`).
    public let structuredOutput: JSONValue?
    /// When the answer never matched the schema (`stopReason` `max_structured_output_retries`):
    /// the last validation errors.
    public let structuredOutputErrors: [StructuredOutputError]?

    enum CodingKeys: String, CodingKey {
        case response, interrupted, rounds, usage, refusal
        case stopReason = "stop_reason", toolsExecuted = "tools_executed"
        case structuredOutput = "structured_output"
        case structuredOutputErrors = "structured_output_errors"
    }
}

/// What a prompt did, carried by its `complete` and `interrupted` events (spec 000's execution
/// report): the answer, the history entries it added, its tool calls as they ended, how full the
/// context window is after it, and its token usage.
public struct PromptReport: Sendable, Decodable, Equatable {
    /// The answer (for `interrupted`, the text streamed until the abort).
    public let response: String
    /// The history entries this prompt added (the user message, the answers and tool results,
    /// and the event entries: `tool-start`, `tool-end`, `tool-summary`, `usage-summary`, …).
    public let history: [JSONValue]
    /// The prompt's tool calls as they ended.
    public let toolSummaries: [ToolState]
    /// How full the context window is after the prompt.
    public let contextState: ContextState
    /// The prompt's token usage, when the provider reported any.
    public let usage: PromptUsage?

    /// How full the context window is.
    public struct ContextState: Sendable, Decodable, Equatable {
        /// Tokens in the context.
        public let usedTokens: UInt64
        /// The model's context window.
        public let maxTokens: UInt64
        /// `usedTokens / maxTokens`.
        public let ratio: Double
        /// True when the figure is an estimate, not the provider's count.
        public let estimated: Bool

        enum CodingKeys: String, CodingKey {
            case usedTokens = "used_tokens", maxTokens = "max_tokens", ratio, estimated
        }
    }

    /// The token usage of one prompt.
    public struct PromptUsage: Sendable, Decodable, Equatable {
        /// All tokens of the prompt's model calls.
        public let totalTokens: UInt64
        /// Input tokens.
        public let promptTokens: UInt64
        /// Output tokens.
        public let completionTokens: UInt64

        enum CodingKeys: String, CodingKey {
            case totalTokens = "total_tokens", promptTokens = "prompt_tokens"
            case completionTokens = "completion_tokens"
        }
    }

    enum CodingKeys: String, CodingKey {
        case response, history, usage
        case toolSummaries = "tool_summaries", contextState = "context_state"
    }

    /// Decodes the engine's report (absent `response`, `history` and `toolSummaries`: empty).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        response = try c.decodeIfPresent(String.self, forKey: .response) ?? ""
        history = try c.decodeIfPresent([JSONValue].self, forKey: .history) ?? []
        toolSummaries = try c.decodeIfPresent([ToolState].self, forKey: .toolSummaries) ?? []
        contextState = try c.decode(ContextState.self, forKey: .contextState)
        usage = try c.decodeIfPresent(PromptUsage.self, forKey: .usage)
    }
}

/// A tool call's state in `toolStart` / `toolEnd` events.
public struct ToolState: Sendable, Decodable, Equatable {
    /// The provider's id of the call.
    public let toolUseId: String
    /// The tool.
    public let name: String
    /// The most telling argument, for one-line display.
    public let firstArg: String
    /// True until the tool ends.
    public let isRunning: Bool
    /// How it ended (`success`, `error`, `denied`, …; `nil` while running).
    public let result: String?
    /// The text result (cut to 4 KiB).
    public let toolResultData: String?

    enum CodingKeys: String, CodingKey {
        case toolUseId = "tool_use_id", name, firstArg = "first_arg", isRunning = "is_running"
        case result, toolResultData = "tool_result_data"
    }
}

/// An event of a session, in order: `seq` increases strictly within the session.
public struct SessionEvent: Sendable, Equatable {
    /// The per-session sequence number.
    public let seq: UInt64
    /// The session.
    public let sessionId: String
    /// What happened.
    public let kind: Kind
    /// The event as the engine sent it.
    public let json: JSONValue

    /// What happened (one case per engine event type).
    public enum Kind: Sendable, Equatable {
        /// A chunk of the answer.
        case textDelta(String)
        /// A chunk of the model's reasoning.
        case thinking(String)
        /// A tool the provider runs itself (Anthropic web search, web fetch, code execution,
        /// enabled by a profile's `options.serverTools`) was called, with its whole input
        /// (`{"query": …}` for a search). Nothing runs locally; `serverToolResult` follows.
        case serverToolUse(id: String, name: String, input: JSONValue)
        /// A server tool's result arrived (`resultType`: `web_search_tool_result`, …); the
        /// content stays with the assistant message.
        case serverToolResult(toolUseId: String, resultType: String, isError: Bool)
        /// A tool began.
        case toolStart(ToolState)
        /// A tool ended.
        case toolEnd(ToolState)
        /// A tool call waits for the permission handler.
        case permissionRequest(requestId: String, toolName: String, input: JSONValue)
        /// How full the context window is.
        case contextUpdate(JSONValue)
        /// The history was compacted.
        case compaction(trigger: String, tokensBefore: UInt64, tokensAfter: UInt64)
        /// A prompt finished: the model answered.
        case complete(RunOutcome)
        /// The model refused; `outcome.refusal` says what the provider said.
        case refused(RunOutcome)
        /// The answer was cut off at the output token limit; the outcome has what was written.
        case truncated(RunOutcome)
        /// A prompt could not run or its model call failed; the outcome is there when the run
        /// had started.
        case error(ErrorInfo, outcome: RunOutcome?)
        /// A prompt was aborted; the outcome holds what streamed until then.
        case interrupted(RunOutcome?)
        /// A skill was activated, or its activation ended.
        case skillActivation(SkillActivation)
        /// Work beside the conversation changed: a background task's lifecycle, or a
        /// subagent's progress (`event.json["data"]` has the engine's data).
        case backgroundTask(BackgroundTaskEvent)
        /// The resumed session was damaged and repaired.
        case sessionRecovered(message: String, report: JSONValue)
        /// An MCP server's status changed after the session started (it failed, reconnected,
        /// was enabled or disabled).
        case mcpServerStatus(server: String, status: McpServerInfo.Status)
        /// Any other session event (permission answers, hook messages, warnings, …).
        case session(JSONValue)
        /// An event type this version does not know.
        case other(type: String)
    }

    /// The `type` name of the event (`text_delta`, `complete`, …).
    public var type: String { json["type"]?.stringValue ?? "" }

    /// What the prompt did, for `complete` and `interrupted` events (`nil` for the others, and
    /// for an `interrupted` event of a prompt that never ran).
    public var report: PromptReport? {
        guard type == "complete" || type == "interrupted", json["context_state"] != nil else {
            return nil
        }
        return try? json.decode(PromptReport.self)
    }

    private init(seq: UInt64, sessionId: String, kind: Kind, json: JSONValue) {
        self.seq = seq
        self.sessionId = sessionId
        self.kind = kind
        self.json = json
    }

    /// An event from the native layer: text deltas without any JSON parsing.
    init(native: NativeEvent) throws(RobotaError) {
        if native.eventType == "text_delta", let text = native.text {
            self.init(
                seq: native.seq, sessionId: native.sessionId, kind: .textDelta(text),
                json: [
                    "type": "text_delta", "seq": .number(Double(native.seq)),
                    "session_id": .string(native.sessionId), "text": .string(text),
                ])
            return
        }
        let parsed: JSONValue
        do { parsed = try JSONValue(parsing: native.json ?? "null") } catch {
            throw .internalError("an engine event is not JSON: \(error)")
        }
        try self.init(json: parsed)
    }

    init(json: JSONValue) throws(RobotaError) {
        guard case .object(let object) = json, let type = object["type"]?.stringValue,
            let seq = object["seq"]?.numberValue
        else { throw .internalError("an engine event without `type` or `seq`: \(json)") }
        self.json = json
        self.seq = UInt64(seq)
        self.sessionId = object["session_id"]?.stringValue ?? ""
        func typed<T: Decodable>(_ key: String, _ t: T.Type) throws(RobotaError) -> T {
            do { return try (object[key] ?? .null).decode(t) } catch {
                throw .internalError("cannot decode the `\(type)` event's `\(key)`: \(error)")
            }
        }
        let string = { (key: String) in object[key]?.stringValue ?? "" }
        let number = { (key: String) in UInt64(object[key]?.numberValue ?? 0) }
        switch type {
        case "text_delta": kind = .textDelta(string("text"))
        case "thinking": kind = .thinking(string("text"))
        case "server_tool_use":
            kind = .serverToolUse(
                id: string("id"), name: string("name"), input: object["input"] ?? .null)
        case "server_tool_result":
            kind = .serverToolResult(
                toolUseId: string("tool_use_id"), resultType: string("result_type"),
                isError: object["is_error"]?.boolValue ?? false)
        case "tool_start": kind = .toolStart(try typed("tool", ToolState.self))
        case "tool_end": kind = .toolEnd(try typed("tool", ToolState.self))
        case "permission_request":
            kind = .permissionRequest(
                requestId: string("request_id"), toolName: string("tool_name"),
                input: object["input"] ?? .null)
        case "context_update": kind = .contextUpdate(object["state"] ?? .null)
        case "compaction":
            kind = .compaction(
                trigger: string("trigger"), tokensBefore: number("tokens_before"),
                tokensAfter: number("tokens_after"))
        case "complete": kind = .complete(try typed("outcome", RunOutcome.self))
        case "refused": kind = .refused(try typed("outcome", RunOutcome.self))
        case "truncated": kind = .truncated(try typed("outcome", RunOutcome.self))
        case "error":
            // The engine always sends `error`; an event without it still says its message.
            let info =
                object["error"] == nil
                ? ErrorInfo(kind: "session", message: string("message"))
                : try typed("error", ErrorInfo.self)
            kind = .error(
                info, outcome: object["outcome"] == nil ? nil : try typed("outcome", RunOutcome.self))
        case "interrupted":
            kind = .interrupted(object["outcome"] == nil ? nil : try typed("outcome", RunOutcome.self))
        case "skill_activation": kind = .skillActivation(try typed("data", SkillActivation.self))
        case "background_task_event":
            kind = .backgroundTask(try BackgroundTaskEvent(data: object["data"] ?? .null))
        case "session_recovered":
            kind = .sessionRecovered(message: string("message"), report: object["report"] ?? .null)
        case "mcp_server_status":
            kind = .mcpServerStatus(
                server: string("server"), status: try typed("status", McpServerInfo.Status.self))
        case "session": kind = .session(object["event"] ?? .null)
        default: kind = .other(type: type)
        }
    }
}
