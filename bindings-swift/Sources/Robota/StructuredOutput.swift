// Structured output: answers shaped by a JSON Schema (`outputFormat`), decoded into the host's
// own `Decodable` types.
import Foundation

/// One problem of an answer that did not match the output schema.
public struct StructuredOutputError: Sendable, Decodable, Equatable {
    /// Where in the answer (a JSON Pointer; empty for the whole answer).
    public let path: String
    /// What is wrong there.
    public let message: String
}

/// The engine's `{"type": "json_schema", "schema": …}` for `value`: a whole format as it is, a
/// bare JSON Schema wrapped.
func outputFormatJSON(_ value: JSONValue) -> JSONValue {
    if case .object(let fields) = value, fields["type"] == .string("json_schema"),
        fields["schema"] != nil
    {
        return value
    }
    return .object(["type": "json_schema", "schema": value])
}

/// `value` decoded as `T` (a validated structured output, so a mismatch is a type that does not
/// fit the schema: `RobotaError.invalidJson` naming both).
func decodedStructuredOutput<T: Decodable>(_ value: JSONValue?, as type: T.Type) throws(RobotaError) -> T {
    guard let value else {
        throw .structuredOutput("there is no structured output (no outputFormat, or the answer never matched)")
    }
    do {
        let data = try JSONEncoder().encode(value)
        return try JSONDecoder().decode(type, from: data)
    } catch {
        throw .invalidJson("the structured output does not decode as \(T.self): \(error)")
    }
}

extension QueryResult {
    /// The validated `structuredOutput` decoded as `type`:
    /// `let city = try result.decodeStructuredOutput(City.self)`.
    public func decodeStructuredOutput<T: Decodable>(_ type: T.Type) throws(RobotaError) -> T {
        try decodedStructuredOutput(structuredOutput, as: type)
    }
}

extension RunOutcome {
    /// The validated `structuredOutput` decoded as `type` (a session prompt's result or
    /// `complete` event).
    public func decodeStructuredOutput<T: Decodable>(_ type: T.Type) throws(RobotaError) -> T {
        try decodedStructuredOutput(structuredOutput, as: type)
    }
}

extension Query {
    /// Runs one prompt whose answer must match `schema` and returns it decoded as `type`:
    ///
    /// ```swift
    /// struct City: Decodable { let name: String; let population: Int }
    /// let city = try await query.structured("Largest city of Portugal?", as: City.self, schema: [
    ///     "type": "object",
    ///     "properties": ["name": ["type": "string"], "population": ["type": "integer"]],
    ///     "required": ["name", "population"],
    /// ])
    /// ```
    ///
    /// An answer that does not match is sent back to the model with the validation errors (up
    /// to `maxStructuredOutputRetries` times); one that never matches throws
    /// `RobotaError.structuredOutput`.
    public func structured<T: Decodable>(
        _ prompt: String, as type: T.Type, schema: JSONValue
    ) async throws -> T {
        let result = try await self(prompt, outputFormat: schema)
        return try result.decodeStructuredOutput(type)
    }
}

extension InteractiveSession {
    /// Submits a prompt whose answer must match `outputFormat` (a JSON Schema, or a whole
    /// `{"type": "json_schema", "schema": …}` format) instead of the session's, and waits for
    /// its end: `try result.outcome?.decodeStructuredOutput(City.self)`.
    public func submit(
        _ input: String, displayInput: String? = nil, outputFormat: JSONValue
    ) async throws -> PromptResult {
        let format = try specJSON(outputFormatJSON(outputFormat))
        let native = try await callNative {
            try await self.native.submitWithOutputFormat(
                input: input, displayInput: displayInput, outputFormatJson: format)
        }
        return try await Prompt(native: native, wasQueued: (try? native.wasQueued()) ?? false).result()
    }
}
