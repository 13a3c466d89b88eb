/**
 * `RemoteSession`: a session hosted by a `robota serve` server, with the surface of
 * {@link InteractiveSession} (submit, abort, events, commands, permissions) over HTTP +
 * Server-Sent Events. The protocol is implemented once, in Rust (crate `robota-remote`); this
 * module only adapts it.
 *
 * Code written against a local session runs against a remote one by changing how the session
 * is made: the methods that are synchronous on a local session (`abort`, `listCommands`,
 * `getFullHistory`, `getMessages`, `getContextState`, `getName`, `setName`, `isExecuting`,
 * `getPendingPrompt`) are synchronous here too — each blocks the calling thread until the
 * server answers, bounded by `timeoutMs`, so the server must not run on the same JavaScript
 * thread — and the async ones (`submit`, `executeCommand`, `shutdown`, …) return Promises.
 */

import { RobotaError, native, nativeAsync, toRobotaError } from './errors.js';
import { normalizePermission, type PermissionAnswer, type PermissionRequest } from './extensions.js';
import { nativeAddon } from './native.js';
import { toOutputFormat, type JsonSchema, type OutputFormat } from './structured.js';
import type { ShutdownReason } from './session.js';
import type { CommandEntry, CommandResult, ContextState, Message, PromptResult, RobotaEvent } from './types.js';

/** The default timeout of one call to the server, in milliseconds. */
export const DEFAULT_REMOTE_TIMEOUT_MS = 30_000;

/** Where the server is and how to call it. */
export interface RemoteOptions {
  /** The server's bearer token (printed by `robota serve` at start, or its `--token-env`). */
  token?: string;
  /** The timeout of each call, in milliseconds (default 30 000). */
  timeoutMs?: number;
}

/** What {@link RemoteSession.create} makes. */
export interface RemoteCreateOptions extends RemoteOptions {
  /** The project folder; it must be inside one of the server's `--root` folders (default:
   * the first root). */
  cwd?: string;
  /** A name for the session. */
  name?: string;
  /** Resume the saved session with this id. */
  resume?: string;
  /** With `resume`: continue in a copy with a new id. */
  fork?: boolean;
}

/** The options of {@link RemoteSession.submit}. */
export interface RemoteSubmitOptions {
  /** What the session shows for the prompt (default: the prompt). */
  displayInput?: string;
  /** Structured output for this prompt (as {@link InteractiveSession.submit}'s). */
  outputFormat?: OutputFormat | JsonSchema;
  /** Aborting it cancels this prompt on the server. */
  signal?: AbortSignal;
}

/** The session as the server reports it. */
export interface RemoteSessionInfo {
  /** The session id. */
  id: string;
  /** Its name, when it has one. */
  name: string | null;
  /** Its project folder (as resolved by the server). */
  cwd: string;
  /** True while a prompt runs or is queued. */
  executing: boolean;
  /** The queued prompt, as displayed. */
  pending_prompt: string | null;
  /** The `seq` of the last event it emitted (0 before the first). */
  last_seq: number;
  /** How full the context window is. */
  context: ContextState;
  /** Permission requests waiting for an answer. */
  pending_permissions: number;
  /** True while a WebSocket client holds control. */
  has_controller: boolean;
}

/** Only from a remote session's event stream: the server no longer buffered the events after
 * `missed_after` and before `resumed_at`. Refresh state from `getFullHistory()` / `info()`. */
export interface GapEvent {
  /** The event's kind. */
  type: 'gap';
  /** The session. */
  session_id: string;
  /** `resumed_at - 1`. */
  seq: number;
  /** The `seq` of the last event received before the gap. */
  missed_after: number;
  /** The `seq` of the first event received after it. */
  resumed_at: number;
}

/** What a remote event stream yields. */
export type RemoteEvent = RobotaEvent | GapEvent;

type NativeRemoteSession = InstanceType<typeof nativeAddon.NativeRemoteSession>;
type NativeRemoteEvents = InstanceType<typeof nativeAddon.NativeRemoteEvents>;

function timeoutOf(options: RemoteOptions): number {
  return options.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS;
}

/** A session on a `robota serve` server. */
export class RemoteSession {
  readonly #native: NativeRemoteSession;
  /** Streams being subscribed: prompts and commands wait for them, so they miss no event. */
  readonly #subscribing = new Set<Promise<unknown>>();
  #closed = false;

  /** Internal: use {@link RemoteSession.create} or {@link RemoteSession.connect}. */
  private constructor(native: NativeRemoteSession) {
    this.#native = native;
  }

  /**
   * Creates a session on the server at `url`: a new one in `cwd`, or the saved session
   * `resume`. `await RemoteSession.create('http://127.0.0.1:7420', { token, cwd })`.
   */
  static async create(url: string, options: RemoteCreateOptions = {}): Promise<RemoteSession> {
    const request: Record<string, unknown> = { fork: options.fork === true };
    if (options.cwd !== undefined) request.cwd = options.cwd;
    if (options.name !== undefined) request.name = options.name;
    if (options.resume !== undefined) request.resume = options.resume;
    const native = await nativeAsync(() =>
      nativeAddon.remoteCreate(url, options.token, JSON.stringify(request), timeoutOf(options)),
    );
    return new RemoteSession(native);
  }

  /** Attaches to the session `sessionId` the server at `url` hosts. */
  static async connect(url: string, sessionId: string, options: RemoteOptions = {}): Promise<RemoteSession> {
    const native = await nativeAsync(() => nativeAddon.remoteConnect(url, sessionId, options.token, timeoutOf(options)));
    return new RemoteSession(native);
  }

  /** The session id. */
  get sessionId(): string {
    return this.#native.sessionId;
  }

  /** The session id. */
  getSessionId(): string {
    return this.#native.sessionId;
  }

  async #streamsReady(): Promise<void> {
    // Their own failures surface when they are read.
    await Promise.allSettled([...this.#subscribing]);
  }

  /**
   * Submits a prompt and resolves when it has ended, like {@link InteractiveSession.submit}.
   * An aborted `signal` cancels this prompt on the server.
   */
  async submit(prompt: string, options: RemoteSubmitOptions = {}): Promise<PromptResult> {
    if (typeof prompt !== 'string') {
      throw new RobotaError('invalid_argument', 'submit(prompt): `prompt` must be a string');
    }
    const { signal, displayInput, outputFormat } = options;
    if (signal?.aborted === true) {
      return { status: 'cancelled' };
    }
    await this.#streamsReady();
    const format = outputFormat === undefined ? undefined : JSON.stringify(toOutputFormat(outputFormat));
    const ticket = await nativeAsync(() => this.#native.submit(prompt, displayInput, format));
    let onAbort: (() => void) | undefined;
    if (signal !== undefined) {
      // Cancels exactly this prompt: dropped while it waits, interrupted while it runs.
      onAbort = () => {
        ticket.cancel().catch(() => undefined);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    try {
      return JSON.parse(await ticket.result()) as PromptResult;
    } catch (error) {
      throw toRobotaError(error);
    } finally {
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Aborts the running prompt and drops the queued one (returns once the server has done so). */
  abort(): void {
    native(() => this.#native.abort());
  }

  /** Cancels one prompt by id; false when it had already ended. */
  async cancelPrompt(promptId: number): Promise<boolean> {
    return nativeAsync(() => this.#native.cancelPrompt(promptId));
  }

  /** Runs a slash command (without the slash): `executeCommand('rename', 'Chat')`. */
  async executeCommand(name: string, args = ''): Promise<CommandResult> {
    await this.#streamsReady();
    return JSON.parse(await nativeAsync(() => this.#native.executeCommand(name, args))) as CommandResult;
  }

  /** The commands users can run. */
  listCommands(): CommandEntry[] {
    return JSON.parse(native(() => this.#native.listCommands())) as CommandEntry[];
  }

  /** The full history: chat messages and event entries. */
  getFullHistory(): unknown[] {
    return JSON.parse(native(() => this.#native.getFullHistory())) as unknown[];
  }

  /** The conversation messages only (the chat entries of {@link getFullHistory}). */
  getMessages(): Message[] {
    const messages: Message[] = [];
    for (const entry of this.getFullHistory()) {
      const chat = entry as { category?: unknown; data?: unknown };
      if (chat.category === 'chat' && typeof chat.data === 'object' && chat.data !== null) {
        messages.push(chat.data as Message);
      }
    }
    return messages;
  }

  /** How full the context window is. */
  getContextState(): ContextState {
    return JSON.parse(native(() => this.#native.getContextState())) as ContextState;
  }

  /** The session as the server reports it. */
  info(): RemoteSessionInfo {
    return JSON.parse(native(() => this.#native.info())) as RemoteSessionInfo;
  }

  /** Whether a prompt is running. */
  isExecuting(): boolean {
    return this.info().executing;
  }

  /** The queued prompt's text, if one waits. */
  getPendingPrompt(): string | null {
    return this.info().pending_prompt;
  }

  /** The session's name. */
  getName(): string | null {
    return native(() => this.#native.getName()) ?? null;
  }

  /** Names the session (`null` clears the name). */
  setName(name: string | null): void {
    native(() => this.#native.setName(name ?? undefined));
  }

  /** Names the session, like {@link InteractiveSession.rename}. */
  async rename(name: string | null): Promise<void> {
    this.setName(name);
  }

  /** Answers the permission request `requestId` (from a `permission_request` event or
   * {@link pendingPermissions}). */
  async answerPermission(requestId: string, answer: PermissionAnswer): Promise<void> {
    const response = JSON.stringify(normalizePermission(answer));
    await nativeAsync(() => this.#native.answerPermission(requestId, response));
  }

  /** The permission requests waiting for an answer. */
  async pendingPermissions(): Promise<PermissionRequest[]> {
    return JSON.parse(await nativeAsync(() => this.#native.pendingPermissions())) as PermissionRequest[];
  }

  /** Copies the session on the server into a new hosted session. */
  async fork(name?: string): Promise<RemoteSession> {
    return new RemoteSession(await nativeAsync(() => this.#native.fork(name)));
  }

  /** Closes the session on the server: aborted, saved, no longer hosted (event streams end).
   * Calling it again does nothing. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Streams opened before see the session end.
    await this.#streamsReady();
    await nativeAsync(() => this.#native.close());
  }

  /** Same as {@link close} (the name a local session's method has); `reason` is accepted
   * for that reason and not sent — the server records its own. */
  async shutdown(reason?: ShutdownReason): Promise<void> {
    void reason;
    await this.close();
  }

  /** `await using session = await RemoteSession.create(…)` closes it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * The session's events from now on (or, with `after`, those after that `seq` the server
   * still buffers; `0`: all), in order: `for await (const ev of session.events()) { … }`. A
   * dropped connection is resumed without loss; if the server no longer had the missed events
   * a `gap` item says so. Ends when the session is closed on the server or the loop breaks;
   * throws a {@link RobotaError} when the stream cannot be resumed.
   */
  events(after?: number): AsyncIterableIterator<RemoteEvent> {
    const subscribing = nativeAsync(() => this.#native.subscribe(after));
    const tracked = subscribing.catch(() => undefined);
    this.#subscribing.add(tracked);
    void tracked.finally(() => this.#subscribing.delete(tracked));
    let stream: NativeRemoteEvents | undefined;
    let queue: RemoteEvent[] = [];
    let done = false;
    const finish = (): IteratorResult<RemoteEvent> => {
      done = true;
      stream?.close();
      if (stream === undefined) void subscribing.then((s) => s.close()).catch(() => undefined);
      return { value: undefined, done: true };
    };
    const iterator: AsyncIterableIterator<RemoteEvent> = {
      async next(): Promise<IteratorResult<RemoteEvent>> {
        for (;;) {
          if (done) return { value: undefined, done: true };
          const event = queue.shift();
          if (event !== undefined) {
            if ((event.type as string) === 'session_closed') return finish();
            return { value: event, done: false };
          }
          stream ??= await subscribing;
          let batch: string;
          try {
            batch = await stream.nextBatch(1024, 250);
          } catch (error) {
            finish();
            throw toRobotaError(error);
          }
          queue = JSON.parse(batch) as RemoteEvent[];
        }
      },
      async return(): Promise<IteratorResult<RemoteEvent>> {
        return finish();
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }
}
