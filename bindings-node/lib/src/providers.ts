import { RobotaError } from './errors.js';

/**
 * Model providers. Each class only describes the provider; the engine creates it (HTTP clients
 * live in Rust). {@link CustomProvider} is implemented in JavaScript.
 */

/** Options shared by the HTTP providers. Unset `apiKey` / `baseUrl` fall back to the official
 * SDKs' environment variables (`ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, …). */
export interface HttpProviderOptions {
  /** The model id, e.g. `claude-sonnet-4-6` or `gpt-4.1`. */
  model: string;
  /** The API key. */
  apiKey?: string;
  /** The base URL, with its scheme (`https://…`, `http://localhost:…`), without the endpoint
   * path. For {@link AnthropicProvider} it does **not** include `/v1` (default
   * `https://api.anthropic.com`; requests go to `<baseUrl>/v1/messages`); for
   * {@link OpenAIProvider} it **does** (default `https://api.openai.com/v1`; Ollama:
   * `http://localhost:11434/v1`; requests go to `<baseUrl>/chat/completions`). */
  baseUrl?: string;
  /** Output token cap per model call. */
  maxTokens?: number;
  /** Retries of a failed call before the error is reported. */
  maxRetries?: number;
  /** How long a stream may stay silent before the call fails, in milliseconds. */
  idleTimeoutMs?: number;
  /** The retry budget: the longest `retry-after` waited out before a retry, in milliseconds
   * (default 60000). A longer one fails the call at once with a rate-limit error carrying it. */
  maxRetryWaitMs?: number;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
}

/** Anything that can be a session's provider. */
export interface ProviderLike {
  /** The provider as the engine's JSON configuration. */
  toConfig(): Record<string, unknown>;
}

function httpConfig(type: string, options: HttpProviderOptions): Record<string, unknown> {
  if (typeof options?.model !== 'string' || options.model.length === 0) {
    throw new RobotaError('invalid_argument', `${type} provider: \`model\` must be a non-empty string`);
  }
  const config: Record<string, unknown> = { type, model: options.model };
  if (options.apiKey !== undefined) config.api_key = options.apiKey;
  if (options.baseUrl !== undefined) config.base_url = options.baseUrl;
  if (options.maxTokens !== undefined) config.max_tokens = options.maxTokens;
  if (options.maxRetries !== undefined) config.max_retries = options.maxRetries;
  if (options.idleTimeoutMs !== undefined) config.idle_timeout_ms = options.idleTimeoutMs;
  if (options.maxRetryWaitMs !== undefined) config.max_retry_wait_ms = options.maxRetryWaitMs;
  if (options.headers !== undefined) config.headers = options.headers;
  return config;
}

/** Options of {@link AnthropicProvider}. */
export interface AnthropicProviderOptions extends HttpProviderOptions {
  /**
   * Prompt caching (default `true`): `cache_control` breakpoints on the tool definitions, the
   * system prompt and the conversation prefix, so each call pays full price only for what is new
   * since the last one. `false` sends none (as does `DISABLE_PROMPT_CACHING=1` when unset).
   */
  promptCaching?: boolean;
  /** How long the cache is kept: `'5m'` (default) or `'1h'` (cache writes cost 2× the input price). */
  promptCacheTtl?: '5m' | '1h';
}

/** The Anthropic Messages API. */
export class AnthropicProvider implements ProviderLike {
  /** The options given. */
  readonly options: AnthropicProviderOptions;
  /** A provider for `options.model`. */
  constructor(options: AnthropicProviderOptions) {
    this.options = { ...options };
  }
  /** @inheritdoc */
  toConfig(): Record<string, unknown> {
    const config = httpConfig('anthropic', this.options);
    if (this.options.promptCaching !== undefined) config.prompt_caching = this.options.promptCaching;
    if (this.options.promptCacheTtl !== undefined) config.prompt_cache_ttl = this.options.promptCacheTtl;
    return config;
  }
}

/** An OpenAI-compatible Chat Completions API (OpenAI, Ollama, vLLM, … via `baseUrl`). */
export class OpenAIProvider implements ProviderLike {
  /** The options given. */
  readonly options: HttpProviderOptions;
  /** A provider for `options.model`. */
  constructor(options: HttpProviderOptions) {
    this.options = { ...options };
  }
  /** @inheritdoc */
  toConfig(): Record<string, unknown> {
    return httpConfig('openai', this.options);
  }
}

/** The provider types given as a settings profile (see {@link ProfileProvider}). */
export type ProfileProviderType = 'gemini' | 'bedrock' | 'vertex' | 'deepseek' | 'qwen' | 'gemma';

/** Options of {@link ProfileProvider}: a settings profile's fields. */
export interface ProfileProviderOptions {
  /** The model id (default: the type's default; `gemma` needs one). */
  model?: string;
  /** The key (Bedrock: a Bedrock API key; Vertex: an access token); default: the type's
   * environment variables. */
  apiKey?: string;
  /** The endpoint. */
  baseUrl?: string;
  /** Output token cap per model call. */
  maxTokens?: number;
  /** Retries of a failed call before the error is reported. */
  maxRetries?: number;
  /** How long a stream may stay silent before the call fails, in milliseconds. */
  idleTimeoutMs?: number;
  /** The longest `retry-after` waited out before a retry, in milliseconds. */
  maxRetryWaitMs?: number;
  /** The profile's provider-owned options: Bedrock's `region` / `profile`, Vertex's `project` /
   * `region`, DeepSeek's `thinking` / `reasoningEffort`, Qwen's `webSearch`, … */
  options?: Record<string, unknown>;
}

/**
 * Any provider type robota builds from a settings profile — `gemini` (Gemini API), `bedrock` /
 * `vertex` (Anthropic on Amazon Bedrock / Google Vertex AI), `deepseek`, `qwen`, `gemma` — built
 * exactly as a `providers.<name>` profile of that type would be.
 */
export class ProfileProvider implements ProviderLike {
  /** The profile type. */
  readonly type: ProfileProviderType;
  /** The options given. */
  readonly options: ProfileProviderOptions;
  /** A provider of profile type `type`. */
  constructor(type: ProfileProviderType, options: ProfileProviderOptions = {}) {
    if (typeof type !== 'string' || type.length === 0) {
      throw new RobotaError('invalid_argument', 'ProfileProvider: `type` must name a provider type');
    }
    this.type = type;
    this.options = { ...options };
  }
  /** @inheritdoc */
  toConfig(): Record<string, unknown> {
    const o = this.options;
    const config: Record<string, unknown> = { type: this.type };
    if (o.model !== undefined) config.model = o.model;
    if (o.apiKey !== undefined) config.api_key = o.apiKey;
    if (o.baseUrl !== undefined) config.base_url = o.baseUrl;
    if (o.maxTokens !== undefined) config.max_tokens = o.maxTokens;
    if (o.maxRetries !== undefined) config.max_retries = o.maxRetries;
    if (o.idleTimeoutMs !== undefined) config.idle_timeout_ms = o.idleTimeoutMs;
    if (o.maxRetryWaitMs !== undefined) config.max_retry_wait_ms = o.maxRetryWaitMs;
    if (o.options !== undefined) config.options = o.options;
    return config;
  }
}

/** One scripted model turn (the engine's `ScriptedTurn`, snake_case keys). */
export interface ScriptedTurn {
  /** Answer text; an array streams as separate deltas. */
  text?: string | string[];
  /** Reasoning, streamed before the text. */
  thinking?: string;
  /** Tool calls, streamed after the text. */
  tool_calls?: Array<{
    /** The call's id (`tool_use_id` in results and events). */
    id: string;
    /** The tool to call. */
    name: string;
    /** Its arguments. */
    input?: unknown;
    /** The arguments as raw text, sent as-is (to test invalid JSON from a model); wins over `input`. */
    raw_arguments?: string;
  }>;
  /** Reported usage. */
  usage?: {
    /** Prompt tokens. */
    input_tokens: number;
    /** Generated tokens. */
    output_tokens: number;
    /** Further counts (cache reads and writes). */
    [key: string]: unknown;
  };
  /** `end_turn`, `tool_use`, … (default from the content). */
  stop_reason?: string;
  /** Wait before each chunk; an abort ends it. */
  delay_ms_per_chunk?: number;
  /** Failed attempts reported before the turn. */
  retries?: Array<{
    /** The wait reported before the next attempt. */
    delay_ms: number;
    /** The failure reported. */
    error: {
      /** Its kind (`rate_limit`, `overloaded`, …, as in {@link ErrorInfo.kind}). */
      kind: string;
      /** Its message. */
      message: string;
    };
  }>;
  /** The call fails after streaming the text. */
  error?: {
    /** Its kind (`auth`, `network`, …, as in {@link ErrorInfo.kind}). */
    kind: string;
    /** Its message. */
    message: string;
  };
  /** Model name reported. */
  model?: string;
}

/** Plays scripted turns in order, one per model call (tests and demos; no network). */
export class ScriptedProvider implements ProviderLike {
  /** The turns. */
  readonly turns: ScriptedTurn[];
  /** The context window to report, in tokens. */
  readonly contextWindow: number | undefined;
  /** A provider playing `turns`. */
  constructor(turns: ScriptedTurn[], options: { contextWindow?: number } = {}) {
    if (!Array.isArray(turns)) {
      throw new RobotaError('invalid_argument', 'ScriptedProvider: `turns` must be an array of scripted turns');
    }
    this.turns = turns;
    this.contextWindow = options.contextWindow;
  }
  /** @inheritdoc */
  toConfig(): Record<string, unknown> {
    const config: Record<string, unknown> = { type: 'scripted', turns: this.turns };
    if (this.contextWindow !== undefined) config.context_window = this.contextWindow;
    return config;
  }
}

/** Replays the model answers recorded in a session log (JSONL), offline. */
export class ReplayProvider implements ProviderLike {
  /** The log file. */
  readonly logPath: string;
  /** A provider replaying `logPath`. */
  constructor(logPath: string) {
    if (typeof logPath !== 'string' || logPath.length === 0) {
      throw new RobotaError('invalid_argument', 'ReplayProvider: `logPath` must be the path of a session log');
    }
    this.logPath = logPath;
  }
  /** @inheritdoc */
  toConfig(): Record<string, unknown> {
    return { type: 'replay', log_path: this.logPath };
  }
}

/** What the engine asks a {@link CustomProvider} (the engine's `ProviderRequest`). */
export interface ProviderRequest {
  /** The system prompt. */
  system?: string;
  /** The conversation (no system messages). */
  messages: Array<{
    /** `user` or `assistant`. */
    role: string;
    /** Its content blocks (see {@link ContentBlock}). */
    content: unknown[];
    /** Further fields. */
    [key: string]: unknown;
  }>;
  /** Tools the model may call this round. */
  tools: Array<{
    /** The tool's name. */
    name: string;
    /** What it does, for the model. */
    description: string;
    /** The JSON Schema of its arguments. */
    input_schema: unknown;
  }>;
  /** Output token cap. */
  max_tokens?: number;
  /** Temperature, thinking, tool choice. */
  [key: string]: unknown;
}

/** A provider implemented in JavaScript: `respond` answers one model call with one turn,
 * which the engine then streams like a scripted turn. */
export interface CustomProviderOptions {
  /** Provider name (default `javascript`). */
  name?: string;
  /** Model name (default `javascript`). */
  model?: string;
  /** The context window to report, in tokens. */
  contextWindow?: number;
  /** Answers one model call; `signal` fires when the run is aborted. */
  respond(request: ProviderRequest, context: { signal: AbortSignal }): ScriptedTurn | Promise<ScriptedTurn>;
}

/** A provider implemented in JavaScript (see {@link CustomProviderOptions}). */
export class CustomProvider implements ProviderLike {
  /** The options given. */
  readonly options: CustomProviderOptions;
  /** A provider answering with `options.respond`. */
  constructor(options: CustomProviderOptions) {
    if (typeof options?.respond !== 'function') {
      throw new RobotaError('invalid_argument', 'CustomProvider: `respond(request)` must be a function');
    }
    this.options = options;
  }
  /** @inheritdoc */
  toConfig(): Record<string, unknown> {
    const config: Record<string, unknown> = { type: 'host' };
    if (this.options.name !== undefined) config.name = this.options.name;
    if (this.options.model !== undefined) config.model = this.options.model;
    if (this.options.contextWindow !== undefined) config.context_window = this.options.contextWindow;
    return config;
  }
}
