/** `createQuery`: one-shot agent turns over a reusable session. */

import { RobotaError, native, nativeAsync } from './errors.js';
import { createDispatcher, declareExtensions } from './extensions.js';
import { nativeAddon } from './native.js';
import { sessionConfig, type QueryOptions } from './options.js';
import type { Message, QueryResult } from './types.js';

/** A query function: `await query('prompt')` runs one full agent turn (tools included). */
export interface Query {
  /** Runs one full agent turn; rejects with a `provider` {@link RobotaError} when the model
   * call fails. An aborted query resolves with `stop_reason: 'interrupted'`. */
  (prompt: string, options?: { signal?: AbortSignal }): Promise<QueryResult>;
  /** Aborts the running query. */
  abort(): void;
  /** The session's chat messages so far. */
  getMessages(): Message[];
  /** The session id (the same for every call). */
  readonly sessionId: string;
}

/**
 * Builds a query over one session: `const query = createQuery({ provider }); const result =
 * await query('What is in this project?')`. Later calls continue the same conversation.
 */
export function createQuery(options: QueryOptions): Query {
  if (options === null || typeof options !== 'object' || options.provider === undefined) {
    throw new RobotaError('invalid_argument', 'createQuery needs options with a `provider`');
  }
  const document: Record<string, unknown> = {
    ...declareExtensions(options),
    session: native(() => sessionConfig(options)),
    allowed_tools: options.allowedTools ?? [],
    disallowed_tools: options.disallowedTools ?? [],
  };
  const onTextDelta = options.onTextDelta;
  const textListener =
    onTextDelta === undefined
      ? undefined
      : (text: string): void => {
          try {
            onTextDelta(text);
          } catch (error) {
            process.nextTick(() => {
              throw error;
            });
          }
        };
  const handle = native(
    () => new nativeAddon.NativeQuery(JSON.stringify(document), createDispatcher(options), textListener),
  );
  const run = async (prompt: string, runOptions: { signal?: AbortSignal } = {}): Promise<QueryResult> => {
    if (typeof prompt !== 'string') {
      throw new RobotaError('invalid_argument', 'query(prompt): `prompt` must be a string');
    }
    const signal = runOptions.signal;
    const onAbort = (): void => handle.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return JSON.parse(await nativeAsync(() => handle.query(prompt))) as QueryResult;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  };
  return Object.defineProperties(run, {
    abort: { value: () => handle.abort() },
    getMessages: { value: () => JSON.parse(native(() => handle.getMessages())) as Message[] },
    sessionId: { get: () => handle.getSessionId() },
  }) as Query;
}
