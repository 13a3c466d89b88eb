// The permission handler: decides the tool calls the permission rules ask about.
import Foundation
import RobotaNative

/// A tool call waiting for the host's decision.
public struct PermissionRequest: Sendable, Decodable {
    /// Unique within the session (the `permissionRequest` event carries it too).
    public let requestId: String
    /// The tool.
    public let toolName: String
    /// The arguments it would run with.
    public let input: JSONValue
    /// The provider's id of the call.
    public let toolUseId: String
    /// Why approval is needed, in words a person can act on.
    public let reason: String
    /// Rules that would approve calls like this one.
    public let suggestedRules: [String]
    /// The session's permission mode.
    public let permissionMode: String

    enum CodingKeys: String, CodingKey {
        case requestId = "request_id", toolName = "tool_name", input
        case toolUseId = "tool_use_id", reason, suggestedRules = "suggested_rules"
        case permissionMode = "permission_mode"
    }
}

/// Where "allow always" saves its rules.
public enum SettingsDestination: String, Sendable {
    /// `<project>/.claude/settings.local.json` (this machine only).
    case localSettings
    /// `<project>/.claude/settings.json` (shared with the project).
    case projectSettings
    /// `~/.claude/settings.json` (every project of this user).
    case userSettings
}

/// The host's answer to a `PermissionRequest`.
public enum PermissionDecision: Sendable, Equatable {
    /// Run this call only.
    case allow
    /// Run it, and allow calls matching `rules` (default: the request's suggested rules) for
    /// the rest of the session.
    case allowForSession(rules: [String] = [])
    /// Run it, allow `rules` for the session and save them to a settings file.
    case allowAlways(rules: [String] = [], destination: SettingsDestination = .localSettings)
    /// Run it with `input` instead of the model's arguments (checked against the deny rules
    /// first; the Claude Agent SDK's `updatedInput`); `rules` are also allowed for the session,
    /// and saved to `destination` when one is given.
    case allowWithInput(JSONValue, rules: [String] = [], destination: SettingsDestination? = nil)
    /// Do not run it; `message` is what the model is told.
    case deny(message: String = "")

    /// Run it for the session with the request's suggested rules.
    public static let allowForSession = PermissionDecision.allowForSession()
    /// Do not run it, with the standard message.
    public static let deny = PermissionDecision.deny()

    var json: JSONValue {
        switch self {
        case .allow: ["type": "allow_once"]
        case .allowForSession(let rules):
            ["type": "allow_session", "rules": .array(rules.map(JSONValue.string))]
        case .allowAlways(let rules, let destination):
            [
                "type": "allow_always", "rules": .array(rules.map(JSONValue.string)),
                "destination": .string(destination.rawValue),
            ]
        case .allowWithInput(let input, let rules, let destination):
            [
                "type": "allow_with_input", "input": input,
                "rules": .array(rules.map(JSONValue.string)),
                "destination": destination.map { JSONValue.string($0.rawValue) } ?? JSONValue.null,
            ]
        case .deny(let message): ["type": "deny", "message": .string(message)]
        }
    }
}

/// Decides a tool call. Throwing denies it, with the error's description.
public typealias PermissionHandler = @Sendable (PermissionRequest) async throws -> PermissionDecision

func permissionBridge(_ handler: @escaping PermissionHandler) -> CallbackBridge {
    CallbackBridge { request, _ in
        try await handler(request.decode(PermissionRequest.self)).json
    }
}

/// What the permission rules decide about a tool call (`evaluatePermission`).
public struct PermissionEvaluation: Sendable, Decodable, Equatable {
    /// `allow`, `ask` or `deny`.
    public let decision: String
    /// Why, in words a person can act on.
    public let reason: String
    /// The rule that decided, when one did.
    public let matchedRule: JSONValue?
    /// Rules that would approve calls like this one.
    public let suggestedRules: [String]
    /// What the decision rests on.
    public let basis: JSONValue

    enum CodingKeys: String, CodingKey {
        case decision, reason, matchedRule = "matched_rule", basis
        case suggestedRules = "suggested_rules"
    }

    /// Decodes an evaluation (absent `suggested_rules`: none).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        decision = try container.decode(String.self, forKey: .decision)
        reason = try container.decode(String.self, forKey: .reason)
        matchedRule = try container.decodeIfPresent(JSONValue.self, forKey: .matchedRule)
        suggestedRules = try container.decodeIfPresent([String].self, forKey: .suggestedRules) ?? []
        basis = try container.decode(JSONValue.self, forKey: .basis)
    }
}

/// Evaluates the permission rules for one tool call without a session (the same rule engine
/// sessions use): `mode` is a permission mode (`default` when `nil`), `allow` / `ask` / `deny`
/// are rules in Claude Code syntax (`Bash(git *)`, `Read(./src/**)`), `cwd` an absolute path.
public func evaluatePermission(
    tool: String, input: JSONValue = [:], cwd: String, mode: String? = nil,
    allow: [String] = [], ask: [String] = [], deny: [String] = []
) throws -> PermissionEvaluation {
    var context: [String: JSONValue] = [
        "cwd": .string(cwd),
        "rules": [
            "allow": .array(allow.map(JSONValue.string)), "ask": .array(ask.map(JSONValue.string)),
            "deny": .array(deny.map(JSONValue.string)),
        ],
    ]
    if let mode { context["mode"] = .string(mode) }
    let inputText = try specJSON(input)
    let contextText = try specJSON(.object(context))
    let text = try callNative {
        try RobotaNative.evaluatePermission(tool: tool, inputJson: inputText, contextJson: contextText)
    }
    return try decodeJSON(PermissionEvaluation.self, text)
}
