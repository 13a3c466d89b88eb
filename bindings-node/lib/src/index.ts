/**
 * `@robota/native`: the robota agent engine for Node.js.
 *
 * - {@link InteractiveSession}: a typed `EventEmitter` session with a prompt queue, abort,
 *   commands and state getters; `await session.submit(prompt)`.
 * - {@link createQuery}: `await createQuery({ provider })('prompt')`.
 * - {@link RemoteSession}: a session hosted by `robota serve`, with the same surface over HTTP.
 * - Providers: {@link AnthropicProvider}, {@link OpenAIProvider}, {@link ScriptedProvider},
 *   {@link ReplayProvider}, {@link CustomProvider}.
 * - Extensions: {@link tool}, permission handlers, hook callbacks, command modules.
 * - {@link evaluatePermission}: the permission rule engine as a pure function.
 * - {@link getModelInfo} / {@link listModels}: the model catalog (context window, prices, …).
 *
 * @module @robota/native
 */

import { RobotaError, describeValue, expectString, native } from './errors.js';
import { nativeAddon } from './native.js';
import type { PermissionDecision, PermissionMode } from './types.js';

export { RobotaError, type RobotaErrorCode } from './errors.js';
export * from './types.js';
export * from './providers.js';
export {
  tool,
  createSdkMcpServer,
  type SdkMcpServer,
  type McpAuthorizationHandler,
  type McpAuthorizationRequest,
  type Tool,
  type ToolContext,
  type ToolReturn,
  type PermissionAnswer,
  type PermissionHandler,
  type PermissionRequest,
  type HookEventName,
  type HookInput,
  type HookResult,
  type HookRegistration,
  type HookCallback,
  type HookJSONOutput,
  type HookMatcher,
  type HookOnFailure,
  type HooksOption,
  type Command,
  type CommandContext,
  type CommandModule,
  type SettingsScope,
} from './extensions.js';
export type {
  CommonOptions,
  Persistence,
  QueryOptions,
  SessionOptions,
  SkillRegistration,
  CommandRegistration,
  TelemetryOptions,
} from './options.js';
export {
  InteractiveSession,
  type SubmitOptions,
  type ShutdownReason,
  type SubagentOptions,
} from './session.js';
export {
  runStoreConformance,
  type SessionStore,
  type SessionSummary,
  type SessionLease,
  type LogChunk,
  type StoreCheck,
  type MaybePromise,
} from './stores.js';
export { createQuery, type Query, type QueryCallOptions } from './query.js';
export {
  RemoteSession,
  DEFAULT_REMOTE_TIMEOUT_MS,
  type RemoteOptions,
  type RemoteCreateOptions,
  type RemoteSubmitOptions,
  type RemoteSessionInfo,
  type RemoteEvent,
  type GapEvent,
} from './remote.js';
export {
  getModelInfo,
  listModels,
  type ModelInfo,
  type ModelInfoDefault,
  type ModelPrice,
  type LongPromptPrice,
} from './models.js';
export type { FromSchema, JsonSchema, JsonValue, OutputFormat } from './structured.js';

/** The context `evaluatePermission` decides in. */
export interface PermissionContext {
  /** The permission mode. */
  mode?: PermissionMode;
  /** The project directory (absolute). */
  cwd: string;
  /** Rules in Claude Code syntax. */
  rules?: {
    /** Calls these rules match run without asking. */
    allow?: string[];
    /** Calls these rules match are refused (deny wins over ask and allow). */
    deny?: string[];
    /** Calls these rules match are asked about. */
    ask?: string[];
  };
  [key: string]: unknown;
}

/**
 * Decides whether a tool call is allowed by the rules, without a session:
 * `evaluatePermission('Bash', { command: 'rm -rf /' }, { cwd, rules: { deny: ['Bash(rm *)'] } })`.
 */
export function evaluatePermission(tool: string, input: unknown, context: PermissionContext): PermissionDecision {
  expectString(tool, 'evaluatePermission(tool, input, context): `tool`');
  if (context === null || typeof context !== 'object') {
    throw new RobotaError(
      'invalid_argument',
      `evaluatePermission(tool, input, context): \`context\` must be {cwd, mode?, rules?}, not ${describeValue(context)}`,
    );
  }
  const engineContext: Record<string, unknown> = { ...context };
  const rules = context.rules;
  if (rules !== undefined && !Array.isArray(rules)) {
    // The engine's rule set is a list of `{rule, list}` entries; accept the settings shape too.
    engineContext.rules = (['allow', 'ask', 'deny'] as const).flatMap((list) =>
      (rules[list] ?? []).map((rule, index) => ({ rule, list, index })),
    );
  }
  return JSON.parse(
    native(() => nativeAddon.evaluatePermission(tool, JSON.stringify(input ?? {}), JSON.stringify(engineContext))),
  ) as PermissionDecision;
}

/** The engine version the addon was built from. */
export function engineVersion(): string {
  return nativeAddon.engineVersion();
}
