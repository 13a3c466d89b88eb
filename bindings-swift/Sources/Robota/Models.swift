// The model catalog: what robota knows about a model (context window, maximum output, prices,
// thinking) — `getModelInfo(_:)` and `listModels(provider:)`.
import Foundation
import RobotaNative

/// The rates a model charges, for every token of a call, when the call's prompt (input + cache
/// read + cache write tokens) is longer than `aboveTokens`. USD per million tokens.
public struct LongPromptPrice: Sendable, Decodable, Equatable {
    /// Prompts longer than this many tokens use these rates.
    public let aboveTokens: UInt64
    /// Input tokens not served from a cache.
    public let inputPerMtok: Double
    /// Output tokens.
    public let outputPerMtok: Double
    /// Input tokens read from the prompt cache.
    public let cacheReadPerMtok: Double
    /// Input tokens written to the prompt cache.
    public let cacheWritePerMtok: Double

    enum CodingKeys: String, CodingKey {
        case aboveTokens = "above_tokens", inputPerMtok = "input_per_mtok"
        case outputPerMtok = "output_per_mtok", cacheReadPerMtok = "cache_read_per_mtok"
        case cacheWritePerMtok = "cache_write_per_mtok"
    }
}

/// A model's price in USD per million tokens.
public struct ModelPrice: Sendable, Decodable, Equatable {
    /// Input tokens not served from a cache.
    public let inputPerMtok: Double
    /// Output tokens (thinking included).
    public let outputPerMtok: Double
    /// Input tokens read from the prompt cache.
    public let cacheReadPerMtok: Double
    /// Input tokens written to the prompt cache (equals `inputPerMtok` for providers without a
    /// cache-write surcharge).
    public let cacheWritePerMtok: Double
    /// Different rates for calls whose prompt is longer than a threshold, when the model has
    /// them.
    public let longPrompt: LongPromptPrice?

    enum CodingKeys: String, CodingKey {
        case inputPerMtok = "input_per_mtok", outputPerMtok = "output_per_mtok"
        case cacheReadPerMtok = "cache_read_per_mtok", cacheWritePerMtok = "cache_write_per_mtok"
        case longPrompt = "long_prompt"
    }
}

/// What robota knows about a model: the catalog's figures, with robota's defaults where the
/// catalog has none (named in `defaults`).
public struct ModelInfo: Sendable, Decodable, Equatable {
    /// The model id as asked.
    public let model: String
    /// Whether the catalog knows the model (by exact id, or id plus a snapshot suffix such as
    /// `-20250929` or Bedrock's `-v1:0`, after routing prefixes such as `us.anthropic.`).
    public let known: Bool
    /// The catalog id the model matched (`claude-sonnet-4-5` for `claude-sonnet-4-5-20250929`).
    public let catalogId: String?
    /// The provider type that serves it (`anthropic`, `openai`, …).
    public let provider: String?
    /// Context window in tokens (robota's default when unknown); context tracking and automatic
    /// compaction use it.
    public let contextWindow: UInt64
    /// Most output tokens per call, when known.
    public let maxOutput: UInt32?
    /// Whether the model can think (`false` when unknown).
    public let thinking: Bool
    /// USD per million tokens, when known; cost tracking reports "unknown" without it.
    public let price: ModelPrice?
    /// The figures robota filled in with its defaults or could not give: any of
    /// `context_window`, `max_output`, `price`.
    public let defaults: [String]
    /// The URLs the figures come from.
    public let sources: [String]
    /// When the catalog was last checked against its sources (`YYYY-MM`).
    public let checked: String

    enum CodingKeys: String, CodingKey {
        case model, known, catalogId = "catalog_id", provider, contextWindow = "context_window"
        case maxOutput = "max_output", thinking, price, defaults, sources, checked
    }
}

/// What robota knows about `model`: context window, maximum output, prices and thinking.
///
/// An unknown model is not an error: it answers `known == false` with robota's defaults (listed
/// in `defaults`) and no price. An empty or blank id, or one longer than 1024 bytes, throws
/// `RobotaError.invalidArgument`.
public func getModelInfo(_ model: String) throws(RobotaError) -> ModelInfo {
    let text = try callNative { try RobotaNative.modelInfo(model: model) }
    return try decodeJSON(ModelInfo.self, text)
}

/// Every model in robota's catalog, or only those of `provider` (a provider type such as
/// `"anthropic"`), in catalog order.
public func listModels(provider: String? = nil) throws(RobotaError) -> [ModelInfo] {
    let text = try callNative { try RobotaNative.listModels(provider: provider) }
    return try decodeJSON([ModelInfo].self, text)
}
