/**
 * {@link InteractiveSession}: the engine's interactive session as a typed `EventEmitter`.
 *
 * Events arrive in order through one weak threadsafe function (it never keeps Node alive) in
 * batches; each is emitted under its `type` (`session.on('text_delta', ev => …)`) and under
 * `event`. `submit()` resolves when its prompt has ended; while a prompt runs, a pending native
 * call keeps the process alive, so a script that is done with its session exits by itself.
 */

import { EventEmitter } from 'node:events';

import { RobotaError, native, nativeAsync, toRobotaError } from './errors.js';
import { createDispatcher, declareExtensions } from './extensions.js';
import { nativeAddon } from './native.js';
import { sessionConfig, type SessionOptions } from './options.js';
import type {
  CommandEntry,
  CommandResult,
  ContextState,
  Message,
  PromptResult,
  RobotaEvent,
  SessionEventMap,
  ToolState,
} from './types.js';

/** Options of {@link InteractiveSession.submit}. */
export interface SubmitOptions {
  /** What `getPendingPrompt()` shows while the prompt waits (default: the prompt). */
  displayInput?: string;
  /** Aborting it aborts this prompt (or drops it from the queue). */
  signal?: AbortSignal;
}

/** Why a session ended (`SessionEnd` hook `reason`). */
export type ShutdownReason = 'other' | 'clear' | 'logout' | 'prompt_input_exit';

interface PendingPrompt {
  settle(result: PromptResult): void;
  cleanup(): void;
}

type NativeSession = InstanceType<typeof nativeAddon.NativeSession>;

/**
 * An interactive agent session: a prompt queue (one prompt may wait while another runs), abort,
 * slash commands, typed events and state getters.
 *
 * ```ts
 * const session = new InteractiveSession({ provider, cwd });
 * session.on('text_delta', (ev) => process.stdout.write(ev.text));
 * const result = await session.submit('What is in this project?');
 * await session.shutdown();
 * ```
 *
 * The engine's `error` event is emitted as `'error'` only when an `'error'` listener is
 * attached (an unhandled `'error'` would otherwise throw); it always reaches `'event'`
 * listeners, `events()` iterators and the prompt's `submit()` result.
 */
export class InteractiveSession extends EventEmitter<SessionEventMap> {
  readonly #native: NativeSession;
  readonly #pending: PendingPrompt[] = [];
  readonly #iterators = new Set<(event: RobotaEvent | null) => void>();
  readonly #rejected: string[] = [];
  #keepAlive: Promise<void> | null = null;
  #closed = false;

  /** Creates the session. Throws a {@link RobotaError} (`invalid_argument`, `invalid_json`,
   * `provider`, `session`) when the options are unusable. */
  constructor(options: SessionOptions) {
    super();
    if (options === null || typeof options !== 'object' || options.provider === undefined) {
      throw new RobotaError('invalid_argument', 'InteractiveSession needs options with a `provider`');
    }
    const document: Record<string, unknown> = {
      ...declareExtensions(options),
      session: native(() => sessionConfig(options)),
      builtin_commands: options.builtinCommands !== false,
    };
    if (options.eventBuffer !== undefined) document.event_buffer = options.eventBuffer;
    const dispatch = createDispatcher(options);
    this.#native = native(
      () => new nativeAddon.NativeSession(JSON.stringify(document), dispatch, (batch: string) => this.#deliver(batch)),
    );
  }

  #deliver(batch: string): void {
    let events: RobotaEvent[];
    try {
      events = JSON.parse(batch) as RobotaEvent[];
    } catch {
      return;
    }
    for (const event of events) {
      if (event.type === 'complete') {
        this.#settleFirst({ status: 'complete', outcome: event.outcome });
      } else if (event.type === 'interrupted') {
        this.#settleFirst(
          event.outcome === undefined ? { status: 'interrupted' } : { status: 'interrupted', outcome: event.outcome },
        );
      } else if (event.type === 'error') {
        const rejected = this.#rejected.indexOf(event.message);
        if (rejected >= 0) this.#rejected.splice(rejected, 1);
        else this.#settleFirst({ status: 'error', message: event.message });
      }
      for (const push of this.#iterators) push(event);
      try {
        if (event.type !== 'error' || this.listenerCount('error') > 0) {
          (this.emit as (name: string, event: RobotaEvent) => boolean)(event.type, event);
        }
        (this.emit as (name: 'event', event: RobotaEvent) => boolean)('event', event);
      } catch (error) {
        // A throwing listener behaves as in any EventEmitter: an uncaught exception, reported
        // after the rest of the batch has been delivered.
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }

  #settleFirst(result: PromptResult): void {
    const first = this.#pending.shift();
    if (first !== undefined) {
      first.cleanup();
      first.settle(result);
    }
  }

  #settleLast(result: PromptResult): void {
    const last = this.#pending.pop();
    if (last !== undefined) {
      last.cleanup();
      last.settle(result);
    }
  }

  /** Keeps Node alive while prompts are pending: a pending native `waitIdle()` holds a
   * reference; once idle, the terminal event may still be on its way, so wait briefly. */
  #ensureKeepAlive(): void {
    if (this.#keepAlive !== null) return;
    this.#keepAlive = (async () => {
      let idleRounds = 0;
      while (this.#pending.length > 0 && !this.#closed) {
        try {
          await this.#native.waitIdle();
        } catch {
          // Only an environment being torn down makes waitIdle fail: nothing to keep alive.
          this.#closed = true;
          return;
        }
        if (this.#pending.length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
        idleRounds = this.#native.isExecuting() ? 0 : idleRounds + 1;
        if (idleRounds > 2500) {
          // Idle for ~5 s and still no terminal event: the prompt was dropped; do not hang.
          while (this.#pending.length > 0) this.#settleFirst({ status: 'cancelled' });
        }
      }
    })().finally(() => {
      this.#keepAlive = null;
      // A prompt submitted while this loop was finishing found it still set.
      if (this.#pending.length > 0 && !this.#closed) this.#ensureKeepAlive();
    });
  }


  /**
   * Submits a prompt and resolves when it has ended: `complete`, `interrupted`, `error`, or
   * `cancelled` when it was dropped from the queue. While a prompt runs one more may be queued;
   * a third is refused with a `queue_full` {@link RobotaError}. An aborted `signal` aborts the
   * prompt (or drops it from the queue).
   */
  async submit(prompt: string, options: SubmitOptions = {}): Promise<PromptResult> {
    if (typeof prompt !== 'string') {
      throw new RobotaError('invalid_argument', 'submit(prompt): `prompt` must be a string');
    }
    const { signal, displayInput } = options;
    if (signal?.aborted === true) {
      return { status: 'cancelled' };
    }
    let settle!: (result: PromptResult) => void;
    const done = new Promise<PromptResult>((resolve) => {
      settle = resolve;
    });
    let onAbort: (() => void) | undefined;
    const entry: PendingPrompt = {
      settle,
      cleanup: () => {
        if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
      },
    };
    // Synchronous: accepted in call order, and registered before any event can arrive.
    try {
      this.#native.submit(prompt, displayInput);
    } catch (error) {
      const robotaError = toRobotaError(error);
      // A rejected prompt (an `@file` that cannot be attached) also emits an `error` event; it
      // must not settle the prompt that is running.
      if (robotaError.code === 'invalid_argument') this.#rejected.push(robotaError.message);
      throw robotaError;
    }
    this.#pending.push(entry);
    if (signal !== undefined) {
      onAbort = () => {
        const index = this.#pending.indexOf(entry);
        if (index === 0) this.abort();
        else if (index > 0) this.cancelQueue();
      };
      signal.addEventListener('abort', onAbort, { once: true });
    }
    this.#ensureKeepAlive();
    return done;
  }

  /** Aborts the running prompt (its `submit()` resolves `interrupted`) and drops the queued
   * one (`cancelled`). */
  abort(): void {
    this.cancelQueue();
    this.#native.abort();
  }

  /** Drops the queued prompt, if any; returns it as displayed. */
  cancelQueue(): string | null {
    const dropped = this.#native.cancelQueue() ?? null;
    if (dropped !== null) this.#settleLast({ status: 'cancelled' });
    return dropped;
  }

  /** Resolves when no prompt is running or queued. */
  async waitIdle(): Promise<void> {
    await this.#native.waitIdle();
  }

  /** Runs a slash command (name without `/`) on the user's behalf. Unknown or failing commands
   * reject with a `command` {@link RobotaError}; `busy` while a prompt runs for blocking ones. */
  async executeCommand(name: string, args = ''): Promise<CommandResult> {
    const json = await nativeAsync(() => this.#native.executeCommand(name, args));
    return JSON.parse(json) as CommandResult;
  }

  /** The commands users can run, in registry order. */
  listCommands(): CommandEntry[] {
    return JSON.parse(native(() => this.#native.listCommands())) as CommandEntry[];
  }

  /** Ends the session: aborts any run, fires `SessionEnd`, stops events and releases every
   * callback. Pending `submit()`s resolve; later calls reject with `shut_down`. */
  async shutdown(reason: ShutdownReason = 'other'): Promise<void> {
    if (this.#closed) return;
    this.cancelQueue();
    await nativeAsync(() => this.#native.shutdown(reason));
    this.#closed = true;
    while (this.#pending.length > 0) this.#settleFirst({ status: 'interrupted' });
    for (const push of this.#iterators) push(null);
    this.#iterators.clear();
  }

  /**
   * Every event from now on, in order, until the session shuts down or the loop breaks:
   * `for await (const ev of session.events()) { … }`.
   */
  events(): AsyncIterableIterator<RobotaEvent> {
    const queue: RobotaEvent[] = [];
    let wake: (() => void) | null = null;
    let ended = this.#closed;
    const push = (event: RobotaEvent | null): void => {
      if (event === null) ended = true;
      else queue.push(event);
      wake?.();
      wake = null;
    };
    this.#iterators.add(push);
    const iterators = this.#iterators;
    const iterator: AsyncIterableIterator<RobotaEvent> = {
      async next(): Promise<IteratorResult<RobotaEvent>> {
        while (queue.length === 0 && !ended) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        const event = queue.shift();
        if (event !== undefined) return { value: event, done: false };
        iterators.delete(push);
        return { value: undefined, done: true };
      },
      async return(): Promise<IteratorResult<RobotaEvent>> {
        iterators.delete(push);
        ended = true;
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  /** True while a prompt runs or waits. */
  isExecuting(): boolean {
    return this.#native.isExecuting();
  }

  /** The queued prompt as displayed, if any. */
  getPendingPrompt(): string | null {
    return this.#native.getPendingPrompt() ?? null;
  }

  /** The chat messages. */
  getMessages(): Message[] {
    return JSON.parse(native(() => this.#native.getMessages())) as Message[];
  }

  /** The full history: chat messages and event entries. */
  getFullHistory(): unknown[] {
    return JSON.parse(native(() => this.#native.getFullHistory())) as unknown[];
  }

  /** How full the context window is. */
  getContextState(): ContextState {
    return JSON.parse(native(() => this.#native.getContextState())) as ContextState;
  }

  /** The current prompt's answer so far. */
  getStreamingText(): string {
    return this.#native.getStreamingText();
  }

  /** The current prompt's tool calls. */
  getActiveTools(): ToolState[] {
    return JSON.parse(native(() => this.#native.getActiveTools())) as ToolState[];
  }

  /** The session's name. */
  getName(): string | null {
    return this.#native.getName() ?? null;
  }

  /** Names the session (`null` clears it). */
  setName(name: string | null): void {
    this.#native.setName(name);
  }

  /** The session id. */
  getSessionId(): string {
    return this.#native.getSessionId();
  }

  /** The session id (same as {@link getSessionId}). */
  get sessionId(): string {
    return this.#native.getSessionId();
  }

  /** Compacts the conversation now (refused with `busy` while a prompt runs). */
  async compact(instructions?: string): Promise<unknown> {
    return JSON.parse(await nativeAsync(() => this.#native.compact(instructions))) as unknown;
  }
}
