// Slash commands written in Swift, grouped in command modules.
import Foundation
import RobotaNative

/// What a command knows about the session it runs in.
public struct CommandContext: Sendable {
    /// The arguments after the command name.
    public let args: String
    /// The session id.
    public let sessionId: String
    /// The whole request (session name, permission mode, model, context state).
    public let raw: JSONValue
}

/// What a command answers.
public struct CommandResult: Sendable, Decodable, Equatable, ExpressibleByStringInterpolation {
    /// The message for the user.
    public var message: String
    /// False when the command failed.
    public var success: Bool
    /// Structured data.
    public var data: JSONValue?
    /// Actions for the host to apply, in order (`session_renamed`, …), as the engine sent them.
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
    public init(message: String, success: Bool = true, data: JSONValue? = nil) {
        self.message = message
        self.success = success
        self.data = data
        self.effects = []
    }

    /// A successful result.
    public init(stringLiteral value: String) { self.init(message: value) }

    var json: JSONValue {
        var object: [String: JSONValue] = ["message": .string(message), "success": .bool(success)]
        if let data { object["data"] = data }
        return .object(object)
    }
}

/// A slash command. A thrown error is a failed command.
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
            function: CallbackBridge { request, _ in
                let context = CommandContext(
                    args: request["args"]?.stringValue ?? "",
                    sessionId: request["session_id"]?.stringValue ?? "", raw: request)
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
