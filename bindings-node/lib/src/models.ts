/** The model catalog: what robota knows about a model (context window, maximum output, prices,
 * thinking) — {@link getModelInfo} and {@link listModels}. */

import { expectString, native } from './errors.js';
import { nativeAddon } from './native.js';

/** The rates a model charges, for every token of a call, when the call's prompt (input + cache
 * read + cache write tokens) is longer than `above_tokens`. USD per million tokens. */
export interface LongPromptPrice {
  /** Prompts longer than this many tokens use these rates. */
  readonly above_tokens: number;
  /** Input tokens not served from a cache. */
  readonly input_per_mtok: number;
  /** Output tokens. */
  readonly output_per_mtok: number;
  /** Input tokens read from the prompt cache. */
  readonly cache_read_per_mtok: number;
  /** Input tokens written to the prompt cache. */
  readonly cache_write_per_mtok: number;
}

/** A model's price in USD per million tokens. */
export interface ModelPrice {
  /** Input tokens not served from a cache. */
  readonly input_per_mtok: number;
  /** Output tokens (thinking included). */
  readonly output_per_mtok: number;
  /** Input tokens read from the prompt cache. */
  readonly cache_read_per_mtok: number;
  /** Input tokens written to the prompt cache (equals `input_per_mtok` for providers without a
   * cache-write surcharge). */
  readonly cache_write_per_mtok: number;
  /** Different rates for calls whose prompt is longer than a threshold, when the model has them. */
  readonly long_prompt?: LongPromptPrice;
}

/** A figure robota filled in with its default, or could not give. */
export type ModelInfoDefault = 'context_window' | 'max_output' | 'price';

/** What robota knows about a model: the catalog's figures, with robota's defaults where the
 * catalog has none (named in `defaults`). Field names are the engine's, as in every binding. */
export interface ModelInfo {
  /** The model id as asked. */
  readonly model: string;
  /** Whether the catalog knows the model (by exact id, or id plus a snapshot suffix such as
   * `-20250929` or Bedrock's `-v1:0`, after routing prefixes such as `us.anthropic.`). */
  readonly known: boolean;
  /** The catalog id the model matched (`claude-sonnet-4-5` for `claude-sonnet-4-5-20250929`). */
  readonly catalog_id?: string;
  /** The provider type that serves it (`anthropic`, `openai`, …). */
  readonly provider?: string;
  /** Context window in tokens (robota's default when unknown); context tracking and automatic
   * compaction use it. */
  readonly context_window: number;
  /** Most output tokens per call, when known. */
  readonly max_output?: number;
  /** Whether the model can think (`false` when unknown). */
  readonly thinking: boolean;
  /** USD per million tokens, when known; cost tracking reports "unknown" without it. */
  readonly price?: ModelPrice;
  /** The figures robota filled in with its defaults or could not give. */
  readonly defaults: readonly ModelInfoDefault[];
  /** The URLs the figures come from. */
  readonly sources: readonly string[];
  /** When the catalog was last checked against its sources (`YYYY-MM`). */
  readonly checked: string;
}

/**
 * What robota knows about `model`: context window, maximum output, prices and thinking.
 *
 * An unknown model is not an error: it answers `known: false` with robota's defaults (listed in
 * `defaults`) and no price. An empty or blank id, or one longer than 1024 bytes, throws a
 * `RobotaError` with code `invalid_argument`.
 */
export function getModelInfo(model: string): ModelInfo {
  expectString(model, 'getModelInfo(model): `model`');
  return JSON.parse(native(() => nativeAddon.modelInfo(model))) as ModelInfo;
}

/** Every model in robota's catalog, or only those of `provider` (a provider type such as
 * `"anthropic"`), in catalog order. */
export function listModels(provider?: string): ModelInfo[] {
  if (provider !== undefined) expectString(provider, 'listModels(provider): `provider`');
  return JSON.parse(native(() => nativeAddon.listModels(provider))) as ModelInfo[];
}
