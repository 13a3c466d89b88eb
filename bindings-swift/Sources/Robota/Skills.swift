// Skills from Swift: `Skill`, what a host registers (a folder or data); `SkillInfo`, a skill as
// `InteractiveSession.listSkills()` reports it; `SkillActivation`, the `skillActivation` event.
import Foundation

/// A skill the host registers for a session, ahead of the project's and the user's.
public enum Skill: Sendable, Equatable {
    /// A skill folder (with a `SKILL.md`) or a folder of skill folders.
    case folder(URL)
    /// A skill given as data: `content` is what a `SKILL.md` would hold.
    case content(name: String, content: String)

    /// The engine's skill registration.
    var json: JSONValue {
        switch self {
        case .folder(let url): ["dir": .string(url.path)]
        case .content(let name, let content): ["name": .string(name), "content": .string(content)]
        }
    }
}

/// A skill of a session, as the engine discovered it.
public struct SkillInfo: Sendable, Decodable, Equatable {
    /// Where a skill came from.
    public struct Source: Sendable, Decodable, Equatable {
        /// `project`, `user`, `plugin` or `host`.
        public let kind: String
        /// The plugin it belongs to (for `plugin` skills, named `plugin:skill`).
        public let plugin: String?
        /// The skills folder it was found in or registered from (`nil` for a skill given as
        /// data).
        public let root: String?
    }

    /// Its name: what `executeCommand(name)` and the model's `Skill` tool use.
    public let name: String
    /// What it does and when to use it (shown to the model).
    public let description: String
    /// Where it came from.
    public let source: Source
    /// Its folder (`nil` for a skill given as data).
    public let dir: String?
    /// Its `SKILL.md` (`nil` for a skill given as data).
    public let file: String?
    /// Tools pre-approved while it runs (for a forked skill also the subagent's only tools).
    public let allowedTools: [String]
    /// The model it asks for.
    public let model: String?
    /// `inline` (in the conversation) or `fork` (in a subagent).
    public let context: String
    /// The agent type a forked skill runs as.
    public let agent: String?
    /// The argument grammar shown after its name.
    public let argumentHint: String?
    /// True: only the user may activate it.
    public let disableModelInvocation: Bool
    /// False: only the model may activate it.
    public let userInvocable: Bool

    enum CodingKeys: String, CodingKey {
        case name, description, source, dir, file, model, context, agent
        case allowedTools = "allowed_tools", argumentHint = "argument_hint"
        case disableModelInvocation = "disable_model_invocation", userInvocable = "user_invocable"
    }

    /// Decodes the engine's skill (absent lists and flags take the engine's defaults).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decodeIfPresent(String.self, forKey: .description) ?? ""
        source = try c.decode(Source.self, forKey: .source)
        dir = try c.decodeIfPresent(String.self, forKey: .dir)
        file = try c.decodeIfPresent(String.self, forKey: .file)
        allowedTools = try c.decodeIfPresent([String].self, forKey: .allowedTools) ?? []
        model = try c.decodeIfPresent(String.self, forKey: .model)
        context = try c.decodeIfPresent(String.self, forKey: .context) ?? "inline"
        agent = try c.decodeIfPresent(String.self, forKey: .agent)
        argumentHint = try c.decodeIfPresent(String.self, forKey: .argumentHint)
        disableModelInvocation =
            try c.decodeIfPresent(Bool.self, forKey: .disableModelInvocation) ?? false
        userInvocable = try c.decodeIfPresent(Bool.self, forKey: .userInvocable) ?? true
    }
}

/// A skill was activated, or its activation ended (the `skillActivation` event).
public struct SkillActivation: Sendable, Decodable, Equatable {
    /// The skill.
    public let skillName: String
    /// Where it came from: `project`, `user` or `host`.
    public let source: String
    /// Its `SKILL.md` (`nil` for a skill given as data).
    public let path: String?
    /// Who activated it: `user_slash` or `model_tool`.
    public let invocation: String
    /// How it runs: `inject` (in the conversation) or `fork` (in a subagent).
    public let mode: String
    /// `started`, `completed` or `failed`.
    public let status: String
    /// The arguments it was given.
    public let arguments: String
    /// When this record was made (RFC 3339, UTC).
    public let timestamp: String
    /// What went wrong, for `failed`.
    public let error: String?
    /// Things worth knowing (a model the skill asks for that the session does not switch to, …).
    public let notes: [String]

    enum CodingKeys: String, CodingKey {
        case skillName = "skill_name", source, path, invocation, mode, status, arguments
        case timestamp, error, notes
    }

    /// Decodes the engine's activation record (absent texts are empty).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) throws -> String {
            try c.decodeIfPresent(String.self, forKey: key) ?? ""
        }
        skillName = try text(.skillName)
        source = try text(.source)
        path = try c.decodeIfPresent(String.self, forKey: .path)
        invocation = try text(.invocation)
        mode = try text(.mode)
        status = try text(.status)
        arguments = try text(.arguments)
        timestamp = try text(.timestamp)
        error = try c.decodeIfPresent(String.self, forKey: .error)
        notes = try c.decodeIfPresent([String].self, forKey: .notes) ?? []
    }
}
