// Host tools: the `Tool` protocol a Swift type implements (or `FunctionTool` around a closure),
// with a `Codable` helper for the input.
import Foundation
import RobotaNative

/// What a tool call knows besides its input.
public struct ToolContext: Sendable {
    /// The provider's id of the call.
    public let toolUseId: String
    /// The session's working directory.
    public let cwd: String
}

/// What a tool answers: the text the model sees, and whether the call failed.
public struct ToolResult: Sendable, ExpressibleByStringInterpolation {
    /// The text for the model.
    public var content: String
    /// True when the call failed (the model is told so).
    public var isError: Bool
    /// Structured data for hooks and hosts (not shown to the model).
    public var response: JSONValue?

    /// A result.
    public init(content: String, isError: Bool = false, response: JSONValue? = nil) {
        self.content = content
        self.isError = isError
        self.response = response
    }

    /// A successful result.
    public init(stringLiteral value: String) { self.init(content: value) }

    /// A failed call, with what the model is told.
    public static func error(_ message: String) -> ToolResult {
        ToolResult(content: message, isError: true)
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["content": .string(content), "is_error": .bool(isError)]
        if let response { object["response"] = response }
        return .object(object)
    }
}

/// A tool the model can call, implemented in Swift. A thrown error is a failed tool result
/// carrying the error's description.
public protocol Tool: Sendable {
    /// The name the model calls.
    var name: String { get }
    /// What it does, for the model.
    var description: String { get }
    /// The JSON Schema of its input.
    var inputSchema: JSONValue { get }
    /// Changes nothing (needs no approval, may run beside other read-only tools).
    var isReadOnly: Bool { get }
    /// Input fields holding paths of files a call creates, changes or deletes: the session
    /// saves them first, so edit checkpoints can rewind the change.
    var mutatedFileFields: [String] { get }
    /// Runs one call.
    func call(input: JSONValue, context: ToolContext) async throws -> ToolResult
}

extension Tool {
    /// By default a tool may change things.
    public var isReadOnly: Bool { false }

    /// By default a tool declares no files it changes.
    public var mutatedFileFields: [String] { [] }

    /// Decodes the input into a `Decodable` type (name JSON keys with `CodingKeys` as usual).
    public func decodeInput<T: Decodable>(_ type: T.Type, from input: JSONValue) throws -> T {
        do { return try input.decode(type) } catch {
            throw RobotaError.invalidJson("invalid input for tool `\(name)`: \(error)")
        }
    }

    func native() throws(RobotaError) -> NativeTool {
        let spec: JSONValue = [
            "name": .string(name), "description": .string(description),
            "input_schema": inputSchema, "read_only": .bool(isReadOnly),
            "mutates_files": .array(mutatedFileFields.map(JSONValue.string)),
        ]
        let tool = self
        return NativeTool(
            specJson: try specJSON(spec),
            function: CallbackBridge { request, _ in
                let context = ToolContext(
                    toolUseId: request["tool_use_id"]?.stringValue ?? "",
                    cwd: request["cwd"]?.stringValue ?? "")
                return try await tool.call(input: request["input"] ?? [:], context: context).json
            })
    }
}

/// A tool made of a closure.
public struct FunctionTool: Tool {
    /// The name the model calls.
    public let name: String
    /// What it does, for the model.
    public let description: String
    /// The JSON Schema of its input.
    public let inputSchema: JSONValue
    /// Changes nothing (needs no approval).
    public let isReadOnly: Bool
    /// Input fields holding paths of files a call changes (see `Tool.mutatedFileFields`).
    public let mutatedFileFields: [String]
    private let body: @Sendable (JSONValue, ToolContext) async throws -> ToolResult

    /// A tool named `name` running `body`.
    public init(
        name: String, description: String, inputSchema: JSONValue = ["type": "object"],
        isReadOnly: Bool = false, mutatedFileFields: [String] = [],
        _ body: @escaping @Sendable (JSONValue, ToolContext) async throws -> ToolResult
    ) {
        self.name = name
        self.description = description
        self.inputSchema = inputSchema
        self.isReadOnly = isReadOnly
        self.mutatedFileFields = mutatedFileFields
        self.body = body
    }

    /// Runs the closure.
    public func call(input: JSONValue, context: ToolContext) async throws -> ToolResult {
        try await body(input, context)
    }
}
