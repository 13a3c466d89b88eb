// MCP from Swift: `McpServer`, a server a host gives in `SessionOptions.mcpServers` (a
// configured one, or an in-process server whose tools are Swift functions); the OAuth browser
// step of remote servers; `McpServerInfo`, a server as `InteractiveSession.listMcpServers()`
// reports it.
import Foundation
import RobotaNative

/// An MCP server given in `SessionOptions.mcpServers` (the key is its name).
public enum McpServer: Sendable, Equatable {
    /// A child process speaking MCP on stdin/stdout.
    case stdio(command: String, args: [String] = [], env: [String: String] = [:])
    /// A remote server over streamable HTTP (one that requires OAuth is authorized through
    /// `SessionOptions.onMcpAuthorization`).
    case http(url: String, headers: [String: String] = [:])
    /// A server inside the session's process whose tools are Swift functions (see `sdk`).
    case inProcess(InProcessMcpServer)

    /// An in-process MCP server serving `tools` (the Claude Agent SDK's
    /// `createSdkMcpServer`). Its tools reach the model as `mcp__<name>__<tool>`, `<name>`
    /// being its key in `mcpServers`; permission rules and hook matchers treat them like any
    /// MCP server's. A tool that throws is an error result the model sees; a read-only tool
    /// (`isReadOnly`) is announced with `readOnlyHint`.
    public static func sdk(version: String = "1.0.0", tools: [any Tool]) -> McpServer {
        .inProcess(InProcessMcpServer(version: version, tools: tools))
    }

    /// The engine's definition (`nil` for an in-process server, which is no configuration).
    var json: JSONValue? {
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
        case .inProcess: nil
        }
    }
}

/// An MCP server whose tools are Swift functions, run inside the session's process. Made by
/// `McpServer.sdk(version:tools:)`.
public struct InProcessMcpServer: Sendable, Equatable {
    /// The version it reports.
    public let version: String
    /// Its tools.
    public let tools: [any Tool]

    /// Two servers are equal when they report the same version and tool names.
    public static func == (a: InProcessMcpServer, b: InProcessMcpServer) -> Bool {
        a.version == b.version && a.tools.map(\.name) == b.tools.map(\.name)
    }

    func native(name: String) throws(RobotaError) -> NativeMcpServer {
        var built: [NativeMcpTool] = []
        for tool in tools {
            var annotations: [String: JSONValue] = [:]
            if tool.isReadOnly { annotations["readOnlyHint"] = true }
            let spec: JSONValue = [
                "name": .string(tool.name), "description": .string(tool.description),
                "input_schema": tool.inputSchema,
                "annotations": annotations.isEmpty ? .null : .object(annotations),
            ]
            built.append(
                NativeMcpTool(
                    specJson: try specJSON(spec),
                    function: CallbackBridge { request, _ in
                        // An MCP call has no tool call id or working directory of its own.
                        let context = ToolContext(toolUseId: "", cwd: "")
                        return try await tool.call(input: request["input"] ?? [:], context: context)
                            .json
                    }))
        }
        return NativeMcpServer(name: name, version: version, tools: built)
    }
}

/// The browser step of a remote MCP server's OAuth: called with the server's name and the
/// authorization URL while the session starts; open the URL in a browser (or show it). The
/// authorization completes through the session's redirect listener on 127.0.0.1, so the
/// session does not wait for this to return; the tokens are kept in the user's robota folder
/// and later sessions reuse them without asking.
public typealias McpAuthorizationHandler = @Sendable (_ server: String, _ url: URL) async throws -> Void

func authorizationBridge(_ handler: @escaping McpAuthorizationHandler) -> CallbackBridge {
    CallbackBridge { request, _ in
        guard let server = request["server"]?.stringValue,
            let text = request["url"]?.stringValue, let url = URL(string: text)
        else { throw RobotaError.invalidJson("an authorization request without server or url") }
        try await handler(server, url)
        return .null
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
