// MCP from Swift: `McpServer`, a server a host gives in `SessionOptions.mcpServers`;
// `McpServerInfo`, a server as `InteractiveSession.listMcpServers()` reports it.
import Foundation

/// An MCP server definition, as in `.mcp.json`'s `mcpServers`.
public enum McpServer: Sendable, Equatable {
    /// A child process speaking MCP on stdin/stdout.
    case stdio(command: String, args: [String] = [], env: [String: String] = [:])
    /// A remote server over streamable HTTP.
    case http(url: String, headers: [String: String] = [:])

    /// The engine's definition.
    var json: JSONValue {
        switch self {
        case .stdio(let command, let args, let env):
            [
                "command": .string(command), "args": .array(args.map(JSONValue.string)),
                "env": .object(env.mapValues(JSONValue.string)),
            ]
        case .http(let url, let headers):
            [
                "type": "http", "url": .string(url),
                "headers": .object(headers.mapValues(JSONValue.string)),
            ]
        }
    }
}

/// An MCP server of a session.
public struct McpServerInfo: Sendable, Decodable, Equatable {
    /// Where it was defined: `kind` is `host`, `project`, `settings` or `plugin`.
    public struct Origin: Sendable, Decodable, Equatable {
        /// `host`, `project`, `settings` or `plugin`.
        public let kind: String
        /// The file it was defined in, when there is one.
        public let file: String?
    }

    /// Its status: `state` is `pending`, `connected`, `failed`, `disabled` or `needs_auth`.
    public struct Status: Sendable, Decodable, Equatable {
        /// `pending`, `connected`, `failed`, `disabled` or `needs_auth` (a remote server that
        /// requires OAuth authorization robota does not have yet).
        public let state: String
        /// Why it failed, is disabled or needs authorization.
        public let reason: String?
    }

    /// Its name.
    public let name: String
    /// Where it was defined.
    public let origin: Origin
    /// `stdio` or `http`.
    public let transport: String
    /// Its status.
    public let status: Status
    /// Its tools' session names (`mcp__<server>__<tool>`).
    public let tools: [String]
    /// Its prompts' names.
    public let prompts: [String]
}
