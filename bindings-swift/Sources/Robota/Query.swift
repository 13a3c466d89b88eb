// createQuery: one call, one full agent turn, a typed result.
import Foundation
import RobotaNative

/// What a query produced.
public struct QueryResult: Sendable, Decodable, Equatable {
    /// The final answer text.
    public let response: String
    /// The session's chat messages after the query.
    public let messages: [JSONValue]
    /// Tokens used by this query.
    public let usage: Usage
    /// Cost in USD (`nil` when the model has no known price).
    public let costUsd: Double?
    /// Model/tool rounds run.
    public let numTurns: UInt32
    /// Wall time in milliseconds.
    public let durationMs: UInt64
    /// The session id (the same for every call of one query).
    public let sessionId: String
    /// Why it ended (`completed`, `refused`, `truncated`, `max_turns`, …).
    public let stopReason: String
    /// How it ended: `.complete`, `.refused`, `.truncated` or `.interrupted` (a failed model
    /// call throws `RobotaError.provider` instead).
    public let status: OutcomeStatus
    /// What the provider said, when `status` is `.refused`.
    public let refusal: Refusal?
    /// With an `outputFormat`: the answer validated against its schema (see
    /// `decodeStructuredOutput(_:)`). An answer that never matched throws
    /// `RobotaError.structuredOutput` instead.
    public let structuredOutput: JSONValue?

    enum CodingKeys: String, CodingKey {
        case response, messages, usage, costUsd = "cost_usd", numTurns = "num_turns"
        case durationMs = "duration_ms", sessionId = "session_id", stopReason = "stop_reason"
        case status, refusal, structuredOutput = "structured_output"
    }
}

/// A reusable query: call it with a prompt (`try await query("…")`); each call runs one full
/// agent turn in the same session.
public final class Query: Sendable {
    private let native: NativeQuery

    init(native: NativeQuery) { self.native = native }

    /// Runs one prompt to its end. Cancelling the calling task aborts it.
    public func callAsFunction(_ prompt: String) async throws -> QueryResult {
        try await run { native in try await native.query(prompt: prompt) }
    }

    /// Asks the model to go on with an answer cut off at the output token limit (after a
    /// result with status `.truncated`): runs the engine's continue prompt as the next call.
    /// Cancelling the calling task aborts it.
    public func continueAnswer() async throws -> QueryResult {
        try await run { native in try await native.continueAnswer() }
    }

    /// Runs one prompt whose answer must match `outputFormat` (a JSON Schema, or a whole
    /// `{"type": "json_schema", "schema": …}` format) instead of the query's own; the result's
    /// `structuredOutput` holds the validated value. An answer that never matches throws
    /// `RobotaError.structuredOutput`. Cancelling the calling task aborts it.
    public func callAsFunction(_ prompt: String, outputFormat: JSONValue) async throws -> QueryResult {
        let format = try specJSON(outputFormatJSON(outputFormat))
        return try await run { native in
            try await native.queryWithOutputFormat(prompt: prompt, outputFormatJson: format)
        }
    }

    /// Runs one native call, aborting it when the calling task is cancelled.
    private func run(
        _ call: @escaping @Sendable (NativeQuery) async throws -> String
    ) async throws -> QueryResult {
        let native = self.native
        let text = try await withTaskCancellationHandler {
            try await callNative { try await call(native) }
        } onCancel: {
            try? native.abort()
        }
        return try decodeJSON(QueryResult.self, text)
    }

    /// Aborts the running call.
    public func abort() { try? native.abort() }

    /// The session id.
    public var sessionId: String { (try? native.getSessionId()) ?? "" }
}

/// Creates a query over `options` (the same options as a session; commands are not used).
/// `allowedTools` / `disallowedTools` are permission rules for the whole query (`Read`,
/// `Bash(git *)`, …).
public func createQuery(
    options: SessionOptions, allowedTools: [String] = [], disallowedTools: [String] = []
) throws -> Query {
    let nativeOptions = NativeQueryOptions(
        configJson: try options.configJSON(),
        provider: try options.provider.native(),
        extensions: try options.nativeExtensions(),
        allowedTools: allowedTools,
        disallowedTools: disallowedTools)
    return Query(native: try callNative { try NativeQuery(options: nativeOptions) })
}

/// The version of the native library this package runs on.
public var libraryVersion: String { (try? RobotaNative.libraryVersion()) ?? "unknown" }
