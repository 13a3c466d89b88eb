// Slash commands written in Swift, grouped in command modules.
import Foundation
import RobotaNative

/// The session a command runs in: a snapshot taken when the command started (`args`,
/// `sessionId`, `raw`), and async methods that act on the live session — the same facade the
/// built-in commands use.
///
/// The methods work only while the command runs: a context kept and used after the command
/// returned throws `RobotaError.command`. Host actions (exit, open a picker) are not methods:
/// return them as `effects` of the `CommandResult`.
public struct CommandContext: Sendable {
    /// The arguments after the command name.
    public let args: String
    /// The session id.
    public let sessionId: String
    /// The whole request (session name, permission mode, model, context state).
    public let raw: JSONValue
    private let native: NativeCommandContext?

    /// A snapshot without a live session (for testing a command's body on its own): its
    /// methods throw `RobotaError.command`.
    public init(args: String, sessionId: String, raw: JSONValue = [:]) {
        self.init(args: args, sessionId: sessionId, raw: raw, native: nil)
    }

    init(args: String, sessionId: String, raw: JSONValue, native: NativeCommandContext?) {
        self.args = args
        self.sessionId = sessionId
        self.raw = raw
        self.native = native
    }

    /// True while the command runs (the methods act on the session).
    public var isValid: Bool { (try? native?.isValid()) ?? false }

    private func call(_ op: JSONValue) async throws -> JSONValue {
        guard let native else {
            throw RobotaError.command("this CommandContext is a snapshot without a live session")
        }
        let text = try await callNative { try await native.call(opJson: try specJSON(op)) }
        return try decodeJSON(JSONValue.self, text)
    }

    /// The live state: session id and name, permission mode, model, context window use and
    /// token usage.
    public func state() async throws -> CommandSessionState {
        try await call(["op": "state"]).decodeAnswer(CommandSessionState.self)
    }

    /// The session's full history (chat messages and event entries).
    public func history() async throws -> [JSONValue] {
        try await call(["op": "history"]).arrayValue ?? []
    }

    /// The descriptors of the user-invocable commands.
    public func commands() async throws -> [JSONValue] {
        try await call(["op": "commands"]).arrayValue ?? []
    }

    /// Clears the conversation (return the `conversation_history_cleared` effect so the host
    /// clears what it shows too).
    public func clear() async throws { _ = try await call(["op": "clear"]) }

    /// Compacts the conversation now; returns the summary (`removed_messages`, …).
    @discardableResult
    public func compact(instructions: String? = nil) async throws -> JSONValue {
        var op: [String: JSONValue] = ["op": "compact"]
        if let instructions { op["instructions"] = .string(instructions) }
        return try await call(.object(op))
    }

    /// Changes the permission mode (`default`, `plan`, `acceptEdits`, `bypassPermissions`,
    /// `dontAsk`); an unknown mode throws `invalidArgument`.
    public func setPermissionMode(_ mode: String) async throws {
        _ = try await call(["op": "set_permission_mode", "mode": .string(mode)])
    }

    /// Renames the session.
    public func setSessionName(_ name: String) async throws {
        _ = try await call(["op": "set_session_name", "name": .string(name)])
    }

    /// Runs a subagent to its final report (see `InteractiveSession.runSubagent`).
    public func runSubagent(_ request: SubagentRequest) async throws -> SubagentReport {
        var op = request.fields
        op["op"] = "run_subagent"
        return try await call(.object(op)).decodeAnswer(SubagentReport.self)
    }

    /// One settings file (`{}` when it does not exist).
    public func readSettings(_ scope: SettingsDestination = .localSettings) async throws -> JSONValue {
        try await call(["op": "read_settings", "scope": .string(scope.rawValue)])
    }

    /// Applies a JSON merge patch (`null` removes a key) to one settings file; returns the
    /// file's path.
    @discardableResult
    public func updateSettings(
        _ patch: JSONValue, scope: SettingsDestination = .localSettings
    ) async throws -> String {
        let answer = try await call(
            ["op": "update_settings", "scope": .string(scope.rawValue), "patch": patch])
        return answer["path"]?.stringValue ?? ""
    }

    /// Sends the session's later prompts to `model` on its provider; returns the model's
    /// context window (`nil` when the host applies model changes itself).
    @discardableResult
    public func switchModel(_ model: String) async throws -> UInt64? {
        let answer = try await call(["op": "switch_model", "model": .string(model)])
        return answer["context_window"]?.numberValue.map { UInt64($0) }
    }

    /// Turns the live session's automatic compaction on or off, optionally at `threshold` (a
    /// fraction of the context window in (0, 1]; anything else throws `invalidArgument`). Not
    /// saved in settings (use `updateSettings` with `autoCompactThreshold` for that). Returns
    /// the policy now in force.
    @discardableResult
    public func setAutoCompact(enabled: Bool, threshold: Double? = nil) async throws
        -> AutoCompactPolicy
    {
        var op: [String: JSONValue] = ["op": "set_auto_compact", "enabled": .bool(enabled)]
        if let threshold { op["threshold"] = .number(threshold) }
        return try await call(.object(op)).decodeAnswer(AutoCompactPolicy.self)
    }
}

/// The live state of the session a command runs in (`CommandContext.state()`).
public struct CommandSessionState: Sendable, Decodable, Equatable {
    /// The session id.
    public let sessionId: String
    /// The session's name.
    public let sessionName: String?
    /// The permission mode (`default`, `plan`, …).
    public let permissionMode: String
    /// The model prompts go to.
    public let model: String?
    /// How full the context window is.
    public let contextState: JSONValue
    /// Token usage so far.
    public let usage: JSONValue
    /// True when the model invoked the command (as a `robota_command_*` tool).
    public let invokedByModel: Bool
    /// The project directory.
    public let projectDir: String?

    enum CodingKeys: String, CodingKey {
        case sessionId = "session_id", sessionName = "session_name"
        case permissionMode = "permission_mode", model, contextState = "context_state", usage
        case invokedByModel = "invoked_by_model", projectDir = "project_dir"
    }
}

/// A session's automatic compaction policy.
public struct AutoCompactPolicy: Sendable, Decodable, Equatable {
    /// Whether it runs.
    public let enabled: Bool
    /// The fraction of the context window at which it runs.
    public let threshold: Double
}

extension JSONValue {
    /// Decodes an answer of the engine into `T`.
    func decodeAnswer<T: Decodable>(_ type: T.Type) throws(RobotaError) -> T {
        do { return try decode(type) } catch {
            throw .internalError("cannot decode the engine's answer as \(T.self): \(error)")
        }
    }
}

/// What a command answers.
public struct CommandResult: Sendable, Decodable, Equatable, ExpressibleByStringInterpolation {
    /// The message for the user.
    public var message: String
    /// False when the command failed.
    public var success: Bool
    /// Structured data.
    public var data: JSONValue?
    /// Actions for the host to apply, in order (`session_renamed`,
    /// `conversation_history_cleared`, …), as the engine sends them; a command written in Swift
    /// returns its own the same way.
    public var effects: [JSONValue]

    enum CodingKeys: String, CodingKey { case message, success, data, effects }

    /// Decodes a result (absent `effects`: none).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        message = try container.decode(String.self, forKey: .message)
        success = try container.decode(Bool.self, forKey: .success)
        data = try container.decodeIfPresent(JSONValue.self, forKey: .data)
        effects = try container.decodeIfPresent([JSONValue].self, forKey: .effects) ?? []
    }

    /// A result.
    public init(
        message: String, success: Bool = true, data: JSONValue? = nil, effects: [JSONValue] = []
    ) {
        self.message = message
        self.success = success
        self.data = data
        self.effects = effects
    }

    /// A successful result.
    public init(stringLiteral value: String) { self.init(message: value) }

    var json: JSONValue {
        var object: [String: JSONValue] = ["message": .string(message), "success": .bool(success)]
        if let data { object["data"] = data }
        if !effects.isEmpty { object["effects"] = .array(effects) }
        return .object(object)
    }
}

/// A slash command. A thrown error is a failed command. The body acts on the session through
/// its `CommandContext` while it runs.
public struct Command: Sendable {
    /// The name, without the slash.
    public let name: String
    /// What it does.
    public let description: String
    /// Other names.
    public let aliases: [String]
    let body: @Sendable (CommandContext) async throws -> CommandResult

    /// A command running `body`.
    public init(
        name: String, description: String, aliases: [String] = [],
        _ body: @escaping @Sendable (CommandContext) async throws -> CommandResult
    ) {
        self.name = name
        self.description = description
        self.aliases = aliases
        self.body = body
    }

    func native() throws(RobotaError) -> NativeCommand {
        let descriptor: JSONValue = [
            "name": .string(name), "description": .string(description),
            "aliases": .array(aliases.map(JSONValue.string)),
        ]
        let body = self.body
        return NativeCommand(
            descriptorJson: try specJSON(descriptor),
            function: CallbackBridge.command { request, native in
                let context = CommandContext(
                    args: request["args"]?.stringValue ?? "",
                    sessionId: request["session_id"]?.stringValue ?? "", raw: request,
                    native: native)
                return try await body(context).json
            })
    }
}

/// A group of commands.
public struct CommandModule: Sendable {
    /// The module's name.
    public let name: String
    /// Its commands.
    public let commands: [Command]

    /// A module.
    public init(name: String, commands: [Command]) {
        self.name = name
        self.commands = commands
    }

    func native() throws(RobotaError) -> NativeCommandModule {
        var built: [NativeCommand] = []
        for command in commands { built.append(try command.native()) }
        return NativeCommandModule(name: name, sourceJson: nil, commands: built)
    }
}

/// A command the session offers (`listCommands()`).
public struct CommandEntry: Sendable, Decodable {
    /// Where a command came from.
    public struct Source: Sendable, Decodable, Equatable {
        /// `builtin`, `project`, `user`, `host` or `plugin`.
        public let kind: String
        /// The plugin's name, for a plugin's command.
        public let plugin: String?
    }

    /// The name to invoke it by, without the slash.
    public let name: String
    /// The module that contributed it.
    public let module: String
    /// Where it came from (a custom command's `.claude/commands` folder is `project`, …).
    public let source: Source
    /// Its metadata (`name`, `description`, `aliases`, …).
    public let descriptor: JSONValue

    /// What it does.
    public var description: String { descriptor["description"]?.stringValue ?? "" }
}
