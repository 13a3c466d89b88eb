// Model providers: the built-in ones as data (`ProviderConfig`), and the `Provider` protocol a
// Swift type implements to be the model itself (e.g. an on-device model), streaming through a
// `ProviderEmitter`.
import Foundation
import RobotaNative

/// One scripted model call: text, then tool calls (for tests and demos; no network).
public struct ScriptedTurn: Sendable {
    /// The answer text, one delta per element.
    public var text: [String]
    /// Tool calls after the text: `(id, name, input)`.
    public var toolCalls: [(id: String, name: String, input: JSONValue)]

    /// A turn answering `text` (one delta per element) and calling `toolCalls`.
    public init(text: [String] = [], toolCalls: [(id: String, name: String, input: JSONValue)] = []) {
        self.text = text
        self.toolCalls = toolCalls
    }

    /// A turn answering `text` in one delta.
    public static func text(_ text: String) -> ScriptedTurn { ScriptedTurn(text: [text]) }

    var json: JSONValue {
        var object: [String: JSONValue] = ["text": .array(text.map(JSONValue.string))]
        if !toolCalls.isEmpty {
            object["tool_calls"] = .array(
                toolCalls.map { ["id": .string($0.id), "name": .string($0.name), "input": $0.input] })
        }
        return .object(object)
    }
}

/// Which model answers. Unset keys and URLs of the HTTP providers fall back to the official
/// SDKs' environment variables (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`,
/// `OPENAI_BASE_URL`).
public enum ProviderConfig: Sendable {
    /// The Anthropic Messages API.
    case anthropic(model: String, apiKey: String? = nil, baseURL: String? = nil)
    /// An OpenAI-compatible Chat Completions API (OpenAI, DeepSeek, Qwen, Ollama, LM Studio,
    /// vLLM via `baseURL`).
    case openAI(model: String, apiKey: String? = nil, baseURL: String? = nil)
    /// Plays `turns` in order, one per model call.
    case scripted(turns: [ScriptedTurn])
    /// Replays the model answers recorded in a session log, offline.
    case replay(logPath: String)
    /// A provider written in Swift.
    case custom(any Provider)
    /// Any provider configuration the engine accepts, as JSON (`{"type": "anthropic", …}`).
    case json(JSONValue)

    func native() throws(RobotaError) -> NativeProvider {
        func http(_ type: String, _ model: String, _ key: String?, _ url: String?) -> JSONValue {
            var object: [String: JSONValue] = ["type": .string(type), "model": .string(model)]
            if let key { object["api_key"] = .string(key) }
            if let url { object["base_url"] = .string(url) }
            return .object(object)
        }
        let config: JSONValue
        switch self {
        case .anthropic(let model, let key, let url): config = http("anthropic", model, key, url)
        case .openAI(let model, let key, let url): config = http("openai", model, key, url)
        case .scripted(let turns): config = ["type": "scripted", "turns": .array(turns.map(\.json))]
        case .replay(let path): config = ["type": "replay", "log_path": .string(path)]
        case .json(let value): config = value
        case .custom(let provider):
            let info = provider.info
            return NativeProvider(
                json: try specJSON([
                    "name": .string(info.name), "model": .string(info.model),
                    "context_window": .number(Double(info.contextWindow)),
                ]),
                function: CallbackBridge { request, stream in
                    guard let stream else {
                        throw RobotaError.internalError("a provider call came without its stream")
                    }
                    let answer = try await provider.stream(
                        request: request, emitter: ProviderEmitter(stream: stream))
                    return answer.json
                })
        }
        return NativeProvider(json: try specJSON(config), function: nil)
    }
}

/// What a Swift provider says about itself.
public struct ProviderInfo: Sendable {
    /// The provider's name.
    public var name: String
    /// The model.
    public var model: String
    /// The context window in tokens.
    public var contextWindow: UInt64

    /// Info for a provider.
    public init(name: String, model: String, contextWindow: UInt64 = 200_000) {
        self.name = name
        self.model = model
        self.contextWindow = contextWindow
    }
}

/// Where a Swift provider streams its answer while a model call runs.
public struct ProviderEmitter: Sendable {
    let stream: ProviderStream

    private func send(_ event: JSONValue) throws(RobotaError) {
        let text = try specJSON(event)
        try callNative { try stream.send(eventJson: text) }
    }

    /// A piece of answer text.
    public func text(_ text: String) throws(RobotaError) {
        try send(["type": "text_delta", "text": .string(text)])
    }

    /// A piece of thinking text.
    public func thinking(_ text: String) throws(RobotaError) {
        try send(["type": "thinking_delta", "text": .string(text)])
    }

    /// One complete tool call.
    public func toolCall(id: String, name: String, input: JSONValue) throws(RobotaError) {
        try send(["type": "tool_call", "id": .string(id), "name": .string(name), "input": input])
    }

    /// Token usage so far.
    public func usage(inputTokens: UInt64, outputTokens: UInt64) throws(RobotaError) {
        try send([
            "type": "usage", "input_tokens": .number(Double(inputTokens)),
            "output_tokens": .number(Double(outputTokens)),
        ])
    }
}

/// How a Swift provider's model call ended.
public struct ProviderAnswer: Sendable {
    /// Why the model stopped (`end_turn`, `tool_use`, `max_tokens`; default: `tool_use` when
    /// tool calls were streamed, else `end_turn`).
    public var stopReason: String?

    /// An answer.
    public init(stopReason: String? = nil) { self.stopReason = stopReason }

    var json: JSONValue {
        guard let stopReason else { return [:] }
        return ["stop_reason": .string(stopReason)]
    }
}

/// A model written in Swift. `stream` gets the engine's request (system prompt, messages, tools
/// as JSON), streams the answer through `emitter` and returns how it ended; a thrown error is a
/// failed model call.
public protocol Provider: Sendable {
    /// The provider's name, model and context window.
    var info: ProviderInfo { get }
    /// Answers one model call.
    func stream(request: JSONValue, emitter: ProviderEmitter) async throws -> ProviderAnswer
}
