// Structured output against mock-llm: an answer valid first time decoded into a Swift type, one
// fixed after the follow-up that names the validation errors, one that never matches
// (`RobotaError.structuredOutput` after 1 + the limit requests), and a session's prompt result.
import Foundation
import Robota
import XCTest

private struct City: Decodable, Equatable {
    let city: String
    let population: Int
}

private let citySchema: JSONValue = [
    "type": "object",
    "properties": [
        "city": ["type": "string"],
        "population": ["type": "integer", "minimum": 0],
    ],
    "required": ["city", "population"],
    "additionalProperties": false,
]

final class StructuredOutputTests: XCTestCase {
    private func query(_ mock: MockLLM, retries: UInt32? = nil) throws -> Query {
        var options = SessionOptions(provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory())
        options.builtinTools = false
        options.loadProjectContext = false
        options.maxStructuredOutputRetries = retries
        return try createQuery(options: options)
    }

    func testAValidAnswerFirstTimeDecodesIntoTheType() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"text": "{\\"city\\": \\"Lisbon\\", \\"population\\": 545000}"}]}
            """)
        let city = try await query(mock).structured(
            "Largest city of Portugal?", as: City.self, schema: citySchema)
        XCTAssertEqual(city, City(city: "Lisbon", population: 545000))
        let sent = try await mock.requests()
        XCTAssertEqual(sent.count, 1)
    }

    func testAnInvalidAnswerIsFixedAfterTheFollowUpNamesTheErrors() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"text": "{\\"city\\": \\"Porto\\", \\"population\\": \\"many\\"}"},
                       {"text": "{\\"city\\": \\"Porto\\", \\"population\\": 230000}"}]}
            """)
        let result = try await query(mock)("Second city?", outputFormat: citySchema)
        XCTAssertEqual(result.structuredOutput, ["city": "Porto", "population": 230000])
        XCTAssertEqual(try result.decodeStructuredOutput(City.self), City(city: "Porto", population: 230000))
        let sent = messagesSent(try await mock.requests())
        XCTAssertEqual(sent.count, 2)
        XCTAssertTrue(sent[1].contains("/population"), sent[1])
    }

    func testAnAnswerThatNeverMatchesThrowsAfterTheLimit() async throws {
        let mock = try MockLLM(script: """
            {"repeat": true, "turns": [{"text": "Faro, I think."}]}
            """)
        do {
            _ = try await query(mock, retries: 2).structured("Sunniest city?", as: City.self, schema: citySchema)
            XCTFail("an answer that never matched was accepted")
        } catch let error as RobotaError {
            guard case .structuredOutput(let message) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(error.code, "structured_output")
            XCTAssertTrue(message.contains("did not match"), message)
        }
        let sent = try await mock.requests()
        XCTAssertEqual(sent.count, 3, "1 request + 2 follow-ups")
    }

    func testASessionPromptCarriesTheOutputAndFailsTyped() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"text": "{\\"city\\": \\"Lisbon\\", \\"population\\": 545000}"},
                       {"text": "no JSON"}, {"text": "still none"}]}
            """)
        var options = SessionOptions(provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory())
        options.builtinTools = false
        options.outputFormat = ["type": "json_schema", "schema": citySchema]
        options.maxStructuredOutputRetries = 1
        let session = try InteractiveSession(options: options)
        let done = try await session.submit("Largest city of Portugal?")
        XCTAssertEqual(done.status, .complete)
        XCTAssertEqual(try done.outcome?.decodeStructuredOutput(City.self), City(city: "Lisbon", population: 545000))
        let failed = try await session.submit("And of Spain?")
        XCTAssertEqual(failed.status, .error)
        XCTAssertEqual(failed.errorInfo?.kind, "structured_output")
        XCTAssertFalse((failed.outcome?.structuredOutputErrors ?? []).isEmpty)
        let sent = try await mock.requests()
        XCTAssertEqual(sent.count, 3)
        try await session.shutdown()
    }

    func testAPromptTakesItsOwnOutputFormat() async throws {
        let mock = try MockLLM(script: """
            {"turns": [{"text": "{\\"city\\": \\"Lisbon\\", \\"population\\": 545000}"},
                       {"text": "Just text."}]}
            """)
        var options = SessionOptions(provider: anthropicWithoutRetries(mock), cwd: try temporaryDirectory())
        options.builtinTools = false
        let session = try InteractiveSession(options: options)
        let shaped = try await session.submit("Largest city?", outputFormat: citySchema)
        XCTAssertEqual(try shaped.outcome?.decodeStructuredOutput(City.self), City(city: "Lisbon", population: 545000))
        let plain = try await session.submit("Thanks")
        XCTAssertNil(plain.outcome?.structuredOutput)
        XCTAssertEqual(plain.response, "Just text.")
        do {
            _ = try await session.submit("again", outputFormat: ["type": "no-such-type"])
            XCTFail("a bad schema was accepted")
        } catch let error as RobotaError {
            XCTAssertEqual(error.code, "invalid_argument")
        }
        let sent = try await mock.requests()
        XCTAssertEqual(sent.count, 2)
        try await session.shutdown()
    }
}
