// In-process hooks: Swift closures run at the engine's hook events (PreToolUse, Stop, …), with
// the same meaning as command hooks in settings.json.
import Foundation
import RobotaNative

/// What a hook answers.
public enum HookResult: Sendable, Equatable {
    /// Nothing to say.
    case proceed
    /// Block (the effect depends on the event: a PreToolUse block denies the call).
    case block(reason: String)
    /// Context text (UserPromptSubmit, SessionStart).
    case text(String)
    /// Structured output, as a command hook's JSON output.
    case output(JSONValue)

    var json: JSONValue {
        switch self {
        case .proceed: ["type": "continue"]
        case .block(let reason): ["type": "block", "reason": .string(reason)]
        case .text(let text): ["type": "text", "text": .string(text)]
        case .output(let output): ["type": "output", "output": output]
        }
    }
}

/// A hook: a closure run at `event` (as named in settings, e.g. `PreToolUse`) for the tools
/// `matcher` matches (Claude Code syntax; empty: all). A thrown error is a failed hook.
public struct Hook: Sendable {
    /// The event.
    public let event: String
    /// The matcher.
    public let matcher: String
    /// The hook's label in hook events and messages.
    public let name: String?
    /// The timeout in milliseconds (the event's default when `nil`).
    public let timeoutMs: UInt64?
    let body: @Sendable (JSONValue) async throws -> HookResult

    /// A hook running `body` with the hook input (the same JSON a command hook reads).
    public init(
        event: String, matcher: String = "", name: String? = nil, timeoutMs: UInt64? = nil,
        _ body: @escaping @Sendable (JSONValue) async throws -> HookResult
    ) {
        self.event = event
        self.matcher = matcher
        self.name = name
        self.timeoutMs = timeoutMs
        self.body = body
    }

    func native() throws(RobotaError) -> NativeHook {
        var spec: [String: JSONValue] = ["event": .string(event), "matcher": .string(matcher)]
        if let name { spec["name"] = .string(name) }
        if let timeoutMs { spec["timeout_ms"] = .number(Double(timeoutMs)) }
        let body = self.body
        return NativeHook(
            specJson: try specJSON(.object(spec)),
            function: CallbackBridge { input, _ in try await body(input).json })
    }
}
