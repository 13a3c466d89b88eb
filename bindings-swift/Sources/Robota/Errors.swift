// RobotaError: the one error type of the package, one case per engine error kind
// (`robota::api::ApiErrorKind`), and the translation from the native layer's errors.
import Foundation
import RobotaNative

/// A failed call into the engine. Each case is one of the engine's error kinds (the same
/// `code` in every language); the message says what went wrong and how to fix it.
public enum RobotaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An argument is out of range, names something unknown, or is missing.
    case invalidArgument(String)
    /// A JSON document (configuration, options, tool input) is malformed or has the wrong shape.
    case invalidJson(String)
    /// The provider could not be created or a model call failed.
    case provider(String)
    /// The session refused or failed the request.
    case session(String)
    /// A prompt is already queued; only one may wait. Wait for it or call `cancelQueue()`.
    case queueFull(String)
    /// The request cannot run while a prompt is executing; wait or abort first.
    case busy(String)
    /// The session was shut down.
    case shutDown(String)
    /// A slash command is unknown, ambiguous or failed.
    case command(String)
    /// The saved session is open for writing elsewhere; the message names the holder. Wait
    /// until it is closed, or fork it (`forkSession`).
    case sessionLocked(String)
    /// The answer did not match the `outputFormat` JSON Schema after the allowed follow-ups;
    /// the message lists the last validation errors.
    case structuredOutput(String)
    /// A bug in robota (please report it); the session may still be usable.
    case internalError(String)

    /// The error kind's stable name (`invalid_argument`, `queue_full`, …), as in the other
    /// languages.
    public var code: String {
        switch self {
        case .invalidArgument: "invalid_argument"
        case .invalidJson: "invalid_json"
        case .provider: "provider"
        case .session: "session"
        case .queueFull: "queue_full"
        case .busy: "busy"
        case .shutDown: "shut_down"
        case .command: "command"
        case .sessionLocked: "session_locked"
        case .structuredOutput: "structured_output"
        case .internalError: "internal"
        }
    }

    /// What went wrong.
    public var message: String {
        switch self {
        case .invalidArgument(let m), .invalidJson(let m), .provider(let m), .session(let m),
            .queueFull(let m), .busy(let m), .shutDown(let m), .command(let m),
            .sessionLocked(let m), .structuredOutput(let m), .internalError(let m):
            m
        }
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }

    /// The error for anything the native layer throws.
    init(_ error: any Error) {
        guard let native = error as? RobotaNative.RobotaError else {
            if let error = error as? RobotaError {
                self = error
            } else {
                // A Rust panic (uniffi's internal error) or a decoding failure of our own.
                self = .internalError(String(describing: error))
            }
            return
        }
        switch native {
        case .InvalidArgument(let m): self = .invalidArgument(m)
        case .InvalidJson(let m): self = .invalidJson(m)
        case .Provider(let m): self = .provider(m)
        case .Session(let m): self = .session(m)
        case .QueueFull(let m): self = .queueFull(m)
        case .Busy(let m): self = .busy(m)
        case .ShutDown(let m): self = .shutDown(m)
        case .Command(let m): self = .command(m)
        case .SessionLocked(let m): self = .sessionLocked(m)
        case .StructuredOutput(let m): self = .structuredOutput(m)
        case .Internal(let m): self = .internalError(m)
        }
    }
}

/// Runs a native call, translating its errors into `RobotaError`.
@inline(__always)
func callNative<T>(_ body: () throws -> T) throws(RobotaError) -> T {
    do { return try body() } catch { throw RobotaError(error) }
}

/// Runs an async native call, translating its errors into `RobotaError`.
@inline(__always)
func callNative<T>(_ body: () async throws -> T) async throws(RobotaError) -> T {
    do { return try await body() } catch { throw RobotaError(error) }
}

/// Decodes engine JSON text into `T`.
func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws(RobotaError) -> T {
    do {
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    } catch {
        throw .internalError("cannot decode the engine's answer as \(T.self): \(error)")
    }
}
