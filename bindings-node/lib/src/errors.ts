/**
 * Typed errors: every failure of a robota call is a {@link RobotaError} whose `code` is one of
 * the engine's error kinds (the same names the C ABI, Python and Swift bindings use), or for a
 * `RemoteSession` one of the remote failures (`unauthorized`, `not_found`, `connection`, …).
 */

/** What kind of failure a {@link RobotaError} is (mirrors the engine's `ApiErrorKind`). */
export type RobotaErrorCode =
  | 'invalid_argument'
  | 'invalid_json'
  | 'provider'
  | 'session'
  | 'queue_full'
  | 'busy'
  | 'shut_down'
  | 'command'
  /** The saved session is open for writing elsewhere; the message names the holder. Wait, or fork it. */
  | 'session_locked'
  /** The answer did not match the `outputFormat` schema after the allowed follow-ups; the
   * message lists the last validation errors. */
  | 'structured_output'
  /** A `RemoteSession`'s server refused the token. */
  | 'unauthorized'
  /** The server hosts no such session, prompt or permission request. */
  | 'not_found'
  /** The folder is outside the server's project roots (`robota serve --root`). */
  | 'path_outside_roots'
  /** The server refused the operation to this client. */
  | 'forbidden'
  /** The server could not be reached, the connection broke, or it did not answer in time. */
  | 'connection'
  /** The server answered something this client does not understand. */
  | 'protocol'
  /** Any other error the server reported. */
  | 'remote';

const CODES: ReadonlySet<string> = new Set<RobotaErrorCode>([
  'invalid_argument',
  'invalid_json',
  'provider',
  'session',
  'queue_full',
  'busy',
  'shut_down',
  'command',
  'session_locked',
  'structured_output',
  'unauthorized',
  'not_found',
  'path_outside_roots',
  'forbidden',
  'connection',
  'protocol',
  'remote',
]);

/** A failure of a robota call; `message` says what went wrong and how to fix it. */
export class RobotaError extends Error {
  /** The failure's kind; stable across releases and languages. */
  readonly code: RobotaErrorCode;

  /** An error of kind `code` saying `message`. */
  constructor(code: RobotaErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RobotaError';
    this.code = code;
  }
}

/** The engine's (snake_case) names of the options this package spells in camelCase. */
const OPTION_NAMES: Readonly<Record<string, string>> = {
  permission_mode: 'permissionMode',
  system_prompt: 'systemPrompt',
  append_system_prompt: 'appendSystemPrompt',
  max_turns: 'maxTurns',
  session_id: 'sessionId',
  load_project_context: 'loadProjectContext',
  settings_from_environment: 'settingsFromEnvironment',
  builtin_tools: 'builtinTools',
  resume_session_id: 'resumeSessionId',
  fork_session: 'forkSession',
  max_budget_usd: 'maxBudgetUsd',
  fallback_model: 'fallbackModel',
  auto_compact: 'autoCompact',
  context_window: 'contextWindow',
  sessions_dir: 'sessionsDir',
  logs_dir: 'logsDir',
  api_key: 'apiKey',
  base_url: 'baseUrl',
  max_tokens: 'maxTokens',
  max_retries: 'maxRetries',
  idle_timeout_ms: 'idleTimeoutMs',
  max_retry_wait_ms: 'maxRetryWaitMs',
  log_path: 'logPath',
  input_schema: 'inputSchema',
  read_only: 'readOnly',
  replaces_builtin: 'replacesBuiltin',
  mutates_files: 'mutatesFiles',
  edit_checkpoints: 'editCheckpoints',
  timeout_ms: 'timeoutMs',
  on_failure: 'onFailure',
  argument_hint: 'argumentHint',
  model_invocable: 'modelInvocable',
  user_invocable: 'userInvocable',
  event_buffer: 'eventBuffer',
  builtin_commands: 'builtinCommands',
  allowed_tools: 'allowedTools',
  disallowed_tools: 'disallowedTools',
  output_format: 'outputFormat',
  max_structured_output_retries: 'maxStructuredOutputRetries',
};

/** `message` with the engine's option names (in backticks) spelled as this package spells them:
 * `` `max_turns` `` becomes `` `maxTurns` ``, `` `input_schema.properties` `` becomes
 * `` `inputSchema.properties` ``. Wire fields (event and hook JSON) keep their names. */
export function inCallerNames(message: string): string {
  return message.replace(/`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?=[`.[])/g, (whole, name: string) => {
    const camel = OPTION_NAMES[name];
    return camel === undefined ? whole : `\`${camel}`;
  });
}

/** `a number (5)`, `null`, `an object`: what a caller passed, for a message. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return `a string (${JSON.stringify(value)})`;
    case 'number':
    case 'bigint':
    case 'boolean':
      return `a ${typeof value} (${String(value)})`;
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    default:
      return `an ${typeof value}`;
  }
}

/** Throws an `invalid_argument` {@link RobotaError} unless `value` is a string; `what` names it
 * (`` setName(name): `name` ``). */
export function expectString(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string') {
    throw new RobotaError('invalid_argument', `${what} must be a string, not ${describeValue(value)}`);
  }
}

/** The addon's own message for an argument of the wrong type (`Failed to convert JavaScript value
 * \`Number 5 \` into rust type \`String\``), in the caller's words. */
function wrongArgumentType(message: string): string | undefined {
  const match = /^Failed to convert JavaScript value `(\w+) ?(.*?) ?` into rust type `(.+?)`/.exec(message);
  if (match === null) return undefined;
  const [, jsType = '', shown = '', rustType = ''] = match;
  const expected = rustType === 'String' ? 'a string' : rustType === 'bool' ? 'true or false' : /^[iuf]\d+$|^[iu]size$/.test(rustType) ? 'a number' : 'another type';
  const got = shown.length > 0 ? `${jsType.toLowerCase()} ${shown}` : jsType.toLowerCase();
  return `an argument has the wrong type: expected ${expected}, got ${got}`;
}

/** Converts an error thrown by the native addon (`[kind] message`) into a {@link RobotaError}. */
export function toRobotaError(error: unknown): RobotaError {
  if (error instanceof RobotaError) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  const match = /^\[([a-z_]+)\] ([\s\S]*)$/.exec(message);
  if (match !== null && match[1] !== undefined && CODES.has(match[1])) {
    return new RobotaError(match[1] as RobotaErrorCode, inCallerNames(match[2] ?? ''), { cause: error });
  }
  const wrongType = wrongArgumentType(message);
  if (wrongType !== undefined) {
    return new RobotaError('invalid_argument', wrongType, { cause: error });
  }
  // A JavaScript error from the package's own checks (`TypeError` and the like).
  const code: RobotaErrorCode = error instanceof TypeError || error instanceof RangeError ? 'invalid_argument' : 'session';
  return new RobotaError(code, inCallerNames(message), { cause: error });
}

/** Runs `f`, rethrowing native errors as {@link RobotaError}s. */
export function native<T>(f: () => T): T {
  try {
    return f();
  } catch (error) {
    throw toRobotaError(error);
  }
}

/** Awaits `p`, rethrowing native errors as {@link RobotaError}s. */
export async function nativeAsync<T>(p: () => Promise<T>): Promise<T> {
  try {
    return await p();
  } catch (error) {
    throw toRobotaError(error);
  }
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return typeof error === 'string' ? error : JSON.stringify(error) ?? String(error);
}
