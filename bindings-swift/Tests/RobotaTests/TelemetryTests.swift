// OpenTelemetry options through the Swift API: a malformed `traceparent` is refused by the
// engine with a typed error, and a session exporting to a collector that is not there still
// answers and shuts down within the export timeout.
import Foundation
import Robota
import XCTest

final class TelemetryTests: XCTestCase {
    func testAMalformedTraceparentIsRefused() throws {
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: "http://127.0.0.1:9"),
            cwd: try temporaryDirectory())
        options.loadProjectContext = false
        options.telemetry = TelemetryOptions(endpoint: "http://127.0.0.1:9")
        options.traceparent = "00-not-a-trace"
        XCTAssertThrowsError(try InteractiveSession(options: options)) { error in
            guard case .invalidArgument(let message)? = error as? RobotaError else {
                return XCTFail("expected invalidArgument, got \(error)")
            }
            XCTAssertTrue(message.contains("W3C"), message)
        }
    }

    func testAnUnreachableCollectorDoesNotHoldShutdown() async throws {
        let mock = try MockLLM(script: #"{"turns": [{"text": "traced"}]}"#)
        var options = SessionOptions(
            provider: .anthropic(model: "claude-test", apiKey: "sk-test", baseURL: mock.baseURL),
            cwd: try temporaryDirectory())
        options.home = try temporaryDirectory()
        options.loadProjectContext = false
        options.telemetry = TelemetryOptions(
            endpoint: "http://127.0.0.1:9", otlpProtocol: "http", serviceName: "swift-host",
            timeoutMs: 300)
        options.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let session = try InteractiveSession(options: options)
        let result = try await session.submit("hello")
        XCTAssertEqual(result.response, "traced")
        let started = Date()
        try await session.shutdown()
        XCTAssertLessThan(Date().timeIntervalSince(started), 4.0)
    }
}
