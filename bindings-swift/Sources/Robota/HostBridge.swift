// The bridge every Swift extension goes through: a closure answering the engine's JSON request
// becomes the native `HostCallback`. The engine's adapters (`robota::api::host`) own the answer
// shapes, defaults and cancellation rules, so answers mean the same as in C, Python and Node.
import Foundation
import RobotaNative

/// A native `HostCallback` running a Swift closure. A thrown error rejects the call with its
/// description; a cancelled call (the engine stopped waiting) cancels the closure's task.
final class CallbackBridge: HostCallback, @unchecked Sendable {
    private let body:
        @Sendable (JSONValue, ProviderStream?, NativeCommandContext?) async throws -> JSONValue

    private init(
        any body: @escaping @Sendable (JSONValue, ProviderStream?, NativeCommandContext?) async throws
            -> JSONValue
    ) {
        self.body = body
    }

    /// A bridge for every extension but commands (`stream` is set for providers only).
    convenience init(_ body: @escaping @Sendable (JSONValue, ProviderStream?) async throws -> JSONValue) {
        self.init(any: { request, stream, _ in try await body(request, stream) })
    }

    /// A bridge for a command: the closure gets the command's live context.
    static func command(
        _ body: @escaping @Sendable (JSONValue, NativeCommandContext?) async throws -> JSONValue
    ) -> CallbackBridge {
        CallbackBridge(any: { request, _, context in try await body(request, context) })
    }

    func call(
        requestJson: String, stream: ProviderStream?, context: NativeCommandContext?
    ) async throws -> String {
        do {
            let request = try JSONValue(parsing: requestJson)
            return try await body(request, stream, context).jsonText()
        } catch let error as RobotaError {
            throw HostError.Rejected(message: error.message)
        } catch let error as LocalizedError where error.errorDescription != nil {
            throw HostError.Rejected(message: error.errorDescription ?? "")
        } catch {
            throw HostError.Rejected(message: String(describing: error))
        }
    }
}

/// Encodes an extension's description for the engine.
func specJSON(_ value: JSONValue) throws(RobotaError) -> String {
    do { return try value.jsonText() } catch {
        throw .invalidJson("cannot encode an extension's description: \(error)")
    }
}
