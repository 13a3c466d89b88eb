// The permission handler: decides the tool calls the permission rules ask about.
import Foundation

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
