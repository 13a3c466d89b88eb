// The model catalog (`getModelInfo`, `listModels`) and the `fallbackModel` option, the latter
// against mock-llm over loopback (an overloaded main model, then the fallback's answer).
import Foundation
import Robota
import XCTest

/// An Anthropic provider for `model` on `mock` that never retries.
private func anthropic(_ mock: MockLLM, model: String) -> ProviderConfig {
    .json([
        "type": "anthropic", "model": .string(model), "api_key": "sk-test",
        "base_url": .string(mock.baseURL), "max_retries": 0,
    ])
}

private let overloadedThenText = """
    {"turns": [{"fault": {"kind": "status", "status": 529}}, {"text": "from the fallback"}]}
    """

/// The `model` of every request mock-llm received.
private func modelsSent(_ mock: MockLLM) async throws -> [String] {
    try await mock.requests().map { request in
        ((request["body"] as? [String: Any])?["model"] as? String) ?? ""
    }
}

/// Options for `claude-opus-4-6` on `mock` with `claude-haiku-4-5` as the fallback model.
private func optionsWithFallback(_ mock: MockLLM) throws -> SessionOptions {
    var options = SessionOptions(
        provider: anthropic(mock, model: "claude-opus-4-6"), cwd: try temporaryDirectory())
    options.fallbackModel = "claude-haiku-4-5"
    return options
}

final class ModelCatalogTests: XCTestCase {
    func testASnapshotOfAKnownModelHasTheCatalogFigures() throws {
        let info = try getModelInfo("claude-sonnet-4-5-20250929")
        XCTAssertEqual(info.model, "claude-sonnet-4-5-20250929")
        XCTAssertTrue(info.known)
        XCTAssertEqual(info.catalogId, "claude-sonnet-4-5")
        XCTAssertEqual(info.provider, "anthropic")
        XCTAssertEqual(info.contextWindow, 200_000)
        XCTAssertEqual(info.maxOutput, 64_000)
        XCTAssertTrue(info.thinking)
        XCTAssertEqual(info.price?.inputPerMtok, 3.0)
        XCTAssertEqual(info.price?.outputPerMtok, 15.0)
        XCTAssertEqual(info.defaults, [])
        XCTAssertFalse(info.sources.isEmpty)
        XCTAssertTrue(info.sources.allSatisfy { $0.hasPrefix("https://") }, "\(info.sources)")
        XCTAssertEqual(info.checked.count, 7, info.checked)
    }

    func testABedrockIdMatchesTheCatalogModel() throws {
        let info = try getModelInfo("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        XCTAssertTrue(info.known)
        XCTAssertEqual(info.catalogId, "claude-sonnet-4-5")
        XCTAssertEqual(info.contextWindow, 200_000)
        XCTAssertEqual(info.price?.inputPerMtok, 3.0)
    }

    func testAnUnknownModelGetsTheDefaultsAndNoPrice() throws {
        let info = try getModelInfo("my-local-llama")
        XCTAssertFalse(info.known)
        XCTAssertNil(info.catalogId)
        XCTAssertNil(info.price)
        XCTAssertNil(info.maxOutput)
        XCTAssertFalse(info.thinking)
        XCTAssertGreaterThan(info.contextWindow, 0)
        XCTAssertEqual(Set(info.defaults), ["context_window", "max_output", "price"])
        XCTAssertEqual(info.sources, [])
    }

    func testAnEmptyBlankOrOverlongModelIdIsAnInvalidArgument() {
        for model in ["", "   ", String(repeating: "x", count: 1025)] {
            XCTAssertThrowsError(try getModelInfo(model)) { error in
                guard case .invalidArgument(let message) = error as? RobotaError else {
                    return XCTFail("\(error)")
                }
                XCTAssertTrue(message.contains("model id"), message)
            }
        }
    }

    func testListModelsFiltersByProvider() throws {
        let everything = try listModels()
        let anthropic = try listModels(provider: "anthropic")
        XCTAssertFalse(anthropic.isEmpty)
        XCTAssertLessThan(anthropic.count, everything.count)
        XCTAssertTrue(anthropic.allSatisfy { $0.known && $0.provider == "anthropic" })
        XCTAssertTrue(anthropic.contains { $0.catalogId == "claude-sonnet-4-5" })
        XCTAssertEqual(try listModels(provider: "no-such-provider"), [])
    }

    func testTheFallbackModelAnswersWhenTheMainModelIsOverloaded() async throws {
        let mock = try MockLLM(script: overloadedThenText)
        let options = try optionsWithFallback(mock)
        let session = try InteractiveSession(options: options)
        let events = session.events
        let warnings = Task { () -> [JSONValue] in
            for await event in events {
                if case .session(let inner) = event.kind, inner["type"]?.stringValue == "warning" {
                    return [inner]
                }
                if case .complete = event.kind { return [] }
            }
            return []
        }
        let result = try await session.submit("hello")
        XCTAssertEqual(result.status, .complete)
        XCTAssertEqual(result.response, "from the fallback")
        let models = try await modelsSent(mock)
        XCTAssertEqual(models, ["claude-opus-4-6", "claude-haiku-4-5"])
        let warned = await warnings.value
        XCTAssertEqual(warned.count, 1)
        XCTAssertEqual(warned.first?["source"]?.stringValue, "fallback_model")
        XCTAssertTrue(
            warned.first?["message"]?.stringValue?.contains("claude-haiku-4-5") ?? false, "\(warned)")
        try await session.shutdown()
    }

    func testQueriesTakeAFallbackModelToo() async throws {
        let mock = try MockLLM(script: overloadedThenText)
        let options = try optionsWithFallback(mock)
        let query = try createQuery(options: options)
        let result = try await query("hello")
        XCTAssertEqual(result.response, "from the fallback")
        let models = try await modelsSent(mock)
        XCTAssertEqual(models, ["claude-opus-4-6", "claude-haiku-4-5"])
    }
}
