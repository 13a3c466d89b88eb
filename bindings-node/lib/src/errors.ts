/**
 * Typed errors: every failure of a robota call is a {@link RobotaError} whose `code` is one of
 * the engine's error kinds (the same names the C ABI, Python and Swift bindings use).
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
  | 'session_locked';

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

/** Converts an error thrown by the native addon (`[kind] message`) into a {@link RobotaError}. */
export function toRobotaError(error: unknown): RobotaError {
  if (error instanceof RobotaError) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  const match = /^\[([a-z_]+)\] ([\s\S]*)$/.exec(message);
  if (match !== null && match[1] !== undefined && CODES.has(match[1])) {
    return new RobotaError(match[1] as RobotaErrorCode, match[2] ?? '', { cause: error });
  }
  return new RobotaError('session', message, { cause: error });
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
