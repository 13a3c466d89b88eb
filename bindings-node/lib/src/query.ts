/** `createQuery`: one-shot agent turns over a reusable session. */

import { RobotaError, native, nativeAsync } from './errors.js';
import { createDispatcher, declareExtensions } from './extensions.js';
import { nativeAddon } from './native.js';
import { sessionConfig, type QueryOptions } from './options.js';
import { toOutputFormat, type FromSchema, type JsonSchema, type OutputFormat } from './structured.js';
import type { Message, QueryResult } from './types.js';

/** Options of one query call. */
export interface QueryCallOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
  /** This call's answer must match this schema (instead of the query's `outputFormat`); the
   * result's `structured_output` holds the validated value. */
  outputFormat?: OutputFormat | JsonSchema;
}

/** A query function: `await query('prompt')` runs one full agent turn (tools included). */
export interface Query {
  /** Runs one full agent turn; rejects with a `provider` {@link RobotaError} when the model
   * call fails, and with a `structured_output` one when the answer never matched the
   * `outputFormat`. An aborted query resolves with `stop_reason: 'interrupted'`. */
  (prompt: string, options?: QueryCallOptions): Promise<QueryResult>;
  /**
   * Runs one full agent turn whose answer must match `schema` and resolves to the validated
   * value, typed from the schema:
   *
   * ```ts
   * const city = await query.structured('Largest city of Portugal?', {
   *   type: 'object',
   *   properties: { name: { type: 'string' }, population: { type: 'integer' } },
   *   required: ['name', 'population'],
   * });
   * city.population; // number
   * ```
   *
   * An answer that does not match is sent back to the model with the validation errors (up to
   * `maxStructuredOutputRetries` times); one that never matches rejects with a
   * `structured_output` {@link RobotaError}.
   */
  structured<const S extends JsonSchema>(
    prompt: string,
    schema: S,
    options?: { signal?: AbortSignal; name?: string },
  ): Promise<FromSchema<S>>;
  /** {@link Query.structured} with the result type given by you: `query.structured<City>(prompt,
   * citySchema)`. */
  structured<T>(prompt: string, schema: JsonSchema, options?: { signal?: AbortSignal; name?: string }): Promise<T>;
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
  const run = async (prompt: string, runOptions: QueryCallOptions = {}): Promise<QueryResult> => {
    if (typeof prompt !== 'string') {
      throw new RobotaError('invalid_argument', 'query(prompt): `prompt` must be a string');
    }
    const signal = runOptions.signal;
    const format =
      runOptions.outputFormat === undefined ? undefined : JSON.stringify(toOutputFormat(runOptions.outputFormat));
    const onAbort = (): void => handle.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return JSON.parse(await nativeAsync(() => handle.query(prompt, format))) as QueryResult;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  };
  const structured = async (
    prompt: string,
    schema: JsonSchema,
    callOptions: { signal?: AbortSignal; name?: string } = {},
  ): Promise<unknown> => {
    const outputFormat: OutputFormat = { type: 'json_schema', schema };
    if (callOptions.name !== undefined) outputFormat.name = callOptions.name;
    const result = await run(prompt, { signal: callOptions.signal, outputFormat });
    return result.structured_output;
  };
  return Object.defineProperties(run, {
    structured: { value: structured },
    abort: { value: () => handle.abort() },
    getMessages: { value: () => JSON.parse(native(() => handle.getMessages())) as Message[] },
    sessionId: { get: () => handle.getSessionId() },
  }) as Query;
}
