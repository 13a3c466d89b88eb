/**
 * {@link InteractiveSession}: the engine's interactive session as a typed `EventEmitter`.
 *
 * Events arrive in order through one weak threadsafe function (it never keeps Node alive) in
 * batches; each is emitted under its `type` (`session.on('text_delta', ev => …)`) and under
 * `event`. `submit()` resolves when its prompt has ended (the engine's prompt ticket says how),
 * after the prompt's events have reached the listeners; while a prompt runs, its pending native
 * call keeps the process alive, so a script that is done with its session exits by itself.
 */

import { EventEmitter } from 'node:events';

import { RobotaError, describeValue, expectString, native, nativeAsync, toRobotaError } from './errors.js';
import { createDispatcher, declareExtensions } from './extensions.js';
import { nativeAddon } from './native.js';
import { sessionConfig, type SessionOptions } from './options.js';
import { toOutputFormat, type JsonSchema, type OutputFormat } from './structured.js';
import { EVENT_TYPES } from './types.js';
import type {
  BackgroundTask,
  BackgroundTaskLogPage,
  CommandEntry,
  CommandResult,
  ConfigWarning,
  ContextState,
  EditCheckpoint,
  EditCheckpointInspection,
  EditCheckpointRestore,
  Message,
  PromptResult,
  RecoveryReport,
  RobotaEvent,
  SandboxStatus,
  McpServerInfo,
  SessionEventMap,
  PluginListing,
  SkillInfo,
  SubagentReport,
  ToolState,
} from './types.js';

/** Options of {@link InteractiveSession.submit}. */
export interface SubmitOptions {
  /** What `getPendingPrompt()` shows while the prompt waits (default: the prompt). */
  displayInput?: string;
  /** What the user typed when `prompt` was built from it (a template, an expanded command):
   * UserPromptSubmit hooks get it as their `prompt`; the model and the history get `prompt`. */
  rawInput?: string;
  /** Aborting it aborts this prompt (or drops it from the queue); other prompts are left alone. */
  signal?: AbortSignal;
  /** Your W3C `traceparent` for this prompt only (with the session's `telemetry`): its span
   * joins your trace under that span. */
  traceparent?: string;
  /** The W3C `tracestate` that goes with `traceparent`. */
  tracestate?: string;
  /** This prompt's answer must match this schema (instead of the session's `outputFormat`);
   * the result's `outcome.structured_output` holds the validated value. */
  outputFormat?: OutputFormat | JsonSchema;
}

/** Why a session ended (`SessionEnd` hook `reason`). */
export type ShutdownReason = 'other' | 'clear' | 'logout' | 'prompt_input_exit';

/** How a host-started subagent runs (`runSubagent`, `startBackgroundSubagent`). */
export interface SubagentOptions {
  /** The agent definition (default `general-purpose`). */
  agentType?: string;
  /** Overrides the definition's model: `sonnet`, `opus`, `haiku`, `inherit` or a model id. */
  model?: string;
  /** `worktree`: in a git worktree of its own. Default `none`. */
  isolation?: 'none' | 'worktree';
}

/** The optional strings of `options`, checked (a wrong type is a TypeError naming it). */
function subagentOptions(
  method: string,
  options: SubagentOptions,
): { agentType: string | undefined; model: string | undefined; isolation: string | undefined } {
  const read = (key: keyof SubagentOptions): string | undefined => {
    const value = options[key];
    if (value === undefined || value === null) return undefined;
    expectString(value, `${method}(prompt, options): \`options.${key}\``);
    return value;
  };
  return { agentType: read('agentType'), model: read('model'), isolation: read('isolation') };
}

/** A caller waiting until the events up to `seq` have been emitted. */
interface EventWaiter {
  seq: number;
  resolve(): void;
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
  /** Set by the constructor, or by {@link InteractiveSession.open} once the session is open. */
  #native!: NativeSession;
  /** True while {@link InteractiveSession.open} runs the constructor. */
  static #opening = false;
  /** What {@link InteractiveSession.open} opens the native session from. */
  #pendingOpen: { document: string; dispatch: (request: string) => Promise<string> } | undefined;
  readonly #iterators = new Set<(event: RobotaEvent | null) => void>();
  readonly #eventWaiters: EventWaiter[] = [];
  /** The `seq` of the last event emitted. */
  #emittedSeq = 0;
  #closed = false;
  /** Permission requests whose event was emitted before the handler asked (ids). */
  readonly #emittedRequests = new Set<string>();
  /** Permission handler calls waiting for their request's event, by request id. */
  readonly #requestWaiters = new Map<string, () => void>();
  readonly #hasPermissionHandler: boolean;

  /** Creates the session. Throws a {@link RobotaError} (`invalid_argument`, `invalid_json`,
   * `provider`, `session`) when the options are unusable; the message names the option. A
   * session with a `sessionStore` is created with {@link InteractiveSession.open}. */
  constructor(options: SessionOptions) {
    super();
    if (options === null || typeof options !== 'object' || options.provider === undefined) {
      throw new RobotaError('invalid_argument', 'InteractiveSession needs options with a `provider`');
    }
    if (options.sessionStore !== undefined && !InteractiveSession.#opening) {
      throw new RobotaError(
        'invalid_argument',
        'a session saved in a `sessionStore` is created with `await InteractiveSession.open(options)` (opening it calls the store)',
      );
    }
    // A listener for an event that does not exist would never fire: refuse the name.
    (this as EventEmitter).on('newListener', (name: string | symbol) => checkEventName(name));
    const document: Record<string, unknown> = {
      ...native(() => declareExtensions(options)),
      session: native(() => sessionConfig(options)),
      builtin_commands: options.builtinCommands !== false,
    };
    if (options.eventBuffer !== undefined) {
      const buffer: unknown = options.eventBuffer;
      if (typeof buffer !== 'number' || !Number.isInteger(buffer) || buffer < 1) {
        throw new RobotaError('invalid_argument', `\`eventBuffer\` must be a whole number of at least 1, not ${describeValue(buffer)}`);
      }
      document.event_buffer = buffer;
    }
    this.#hasPermissionHandler = typeof options.permissionHandler === 'function';
    const dispatch = createDispatcher(options, {
      permissionRequestEmitted: (requestId) => this.#permissionRequestEmitted(requestId),
    });
    if (InteractiveSession.#opening) {
      this.#pendingOpen = { document: JSON.stringify(document), dispatch };
      return;
    }
    this.#native = native(
      () => new nativeAddon.NativeSession(JSON.stringify(document), dispatch, (batch: string) => this.#deliver(batch)),
    );
  }

  /**
   * Creates the session without blocking the JavaScript thread: required with a `sessionStore`
   * (opening a session reads and writes the store, whose methods run on this thread), and
   * usable for any session. Rejects like the constructor throws.
   *
   * ```ts
   * const session = await InteractiveSession.open({ provider, sessionStore: new MyStore() });
   * ```
   */
  static async open(options: SessionOptions): Promise<InteractiveSession> {
    InteractiveSession.#opening = true;
    let session: InteractiveSession;
    try {
      session = new InteractiveSession(options);
    } finally {
      InteractiveSession.#opening = false;
    }
    const pending = session.#pendingOpen;
    session.#pendingOpen = undefined;
    if (pending === undefined) throw new RobotaError('invalid_argument', 'the session could not be prepared');
    session.#native = await nativeAsync(() =>
      nativeAddon.openSession(pending.document, pending.dispatch, (batch: string) => session.#deliver(batch)),
    );
    return session;
  }

  #deliver(batch: string): void {
    let events: RobotaEvent[];
    try {
      events = JSON.parse(batch) as RobotaEvent[];
    } catch {
      return;
    }
    for (const event of events) {
      this.#emittedSeq = Math.max(this.#emittedSeq, event.seq);
      if (event.type === 'permission_request' && this.#hasPermissionHandler) {
        this.#permissionRequestDelivered(event.request_id);
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
    this.#wakeEventWaiters();
  }

  /** Marks the `permission_request` event of `requestId` as emitted; the handler call waiting
   * for it goes ahead once the listeners have had the event (after this batch is delivered). */
  #permissionRequestDelivered(requestId: string): void {
    const waiter = this.#requestWaiters.get(requestId);
    if (waiter === undefined) {
      this.#emittedRequests.add(requestId);
      return;
    }
    this.#requestWaiters.delete(requestId);
    queueMicrotask(waiter);
  }

  /** Resolves once the `permission_request` event of `requestId` has reached the listeners, so a
   * permission handler never overtakes the events (streamed text) that led up to the call.
   * Gives up when delivery has stopped. */
  #permissionRequestEmitted(requestId: string): Promise<void> {
    if (this.#emittedRequests.delete(requestId) || this.#closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#requestWaiters.set(requestId, resolve);
    });
  }

  #wakeEventWaiters(): void {
    for (let i = this.#eventWaiters.length - 1; i >= 0; i--) {
      const waiter = this.#eventWaiters[i]!;
      if (waiter.seq <= this.#emittedSeq || this.#closed) {
        this.#eventWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  /** Resolves once the events up to `seq` (the event that ended a prompt) have been emitted.
   * The engine has queued them for delivery already; they arrive through another queue, so wait
   * for them (keeping Node alive), and give up only when delivery makes no progress for ~2 s
   * (the environment is going away). */
  async #eventsEmitted(seq: number): Promise<void> {
    if (seq <= this.#emittedSeq || this.#closed) return;
    await new Promise<void>((resolve) => {
      let last = this.#emittedSeq;
      let stalled = 0;
      const timer = setInterval(() => {
        stalled = this.#emittedSeq === last ? stalled + 1 : 0;
        last = this.#emittedSeq;
        if (stalled >= 40) finish();
      }, 50);
      const waiter: EventWaiter = { seq, resolve: () => finish() };
      const finish = (): void => {
        clearInterval(timer);
        const index = this.#eventWaiters.indexOf(waiter);
        if (index >= 0) this.#eventWaiters.splice(index, 1);
        resolve();
      };
      this.#eventWaiters.push(waiter);
    });
  }

  /**
   * Submits a prompt and resolves when it has ended: `complete` (the model answered),
   * `refused`, `truncated` (cut off at the output token limit), `error` (a model call failed —
   * 401, unreachable host, retries exhausted — or the prompt could not run; `error` has the
   * kind, HTTP status and whether a retry may help), `interrupted`, or `cancelled` when it was
   * dropped from the queue. While a prompt runs one more may be queued;
   * a third is refused with a `queue_full` {@link RobotaError}. An aborted `signal` aborts the
   * prompt (or drops it from the queue) and leaves any other prompt alone.
   */
  async submit(prompt: string, options: SubmitOptions = {}): Promise<PromptResult> {
    if (typeof prompt !== 'string') {
      throw new RobotaError('invalid_argument', 'submit(prompt): `prompt` must be a string');
    }
    const { signal, displayInput, rawInput, traceparent, tracestate, outputFormat } = options;
    if (signal?.aborted === true) {
      return { status: 'cancelled' };
    }
    // Synchronous: accepted in call order.
    let ticket: InstanceType<typeof nativeAddon.NativePromptTicket>;
    try {
      const format = outputFormat === undefined ? undefined : JSON.stringify(toOutputFormat(outputFormat));
      ticket = this.#native.submit(prompt, displayInput, rawInput, traceparent, tracestate, format);
    } catch (error) {
      throw toRobotaError(error);
    }
    const ended = ticket.result();
    let onAbort: (() => void) | undefined;
    if (signal !== undefined) {
      // Cancels exactly this prompt: dropped while it waits, interrupted while it runs (the
      // prompt queued behind it is kept); nothing once it has ended.
      onAbort = () => {
        ticket.cancel();
      };
      signal.addEventListener('abort', onAbort, { once: true });
    }
    let json: string;
    try {
      json = await ended;
    } catch (error) {
      throw toRobotaError(error);
    } finally {
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    }
    const { seq, result } = JSON.parse(json) as { seq: number; result: PromptResult };
    // Its events (the terminal one included) reach the listeners before the Promise settles.
    await this.#eventsEmitted(seq);
    return result;
  }

  /**
   * Asks the model to go on with an answer that was cut off at the output token limit (a prompt
   * that resolved `truncated`): submits the engine's continuation prompt like {@link submit},
   * shown as `(continue)`. The cut-off answer is in the history, so the model sees where it
   * stopped.
   */
  async continueAnswer(options: Omit<SubmitOptions, 'displayInput'> = {}): Promise<PromptResult> {
    const [prompt, displayInput] = nativeAddon.continuePrompt();
    return this.submit(prompt ?? '', { ...options, displayInput });
  }

  /** Aborts the running prompt (its `submit()` resolves `interrupted`) and drops the queued
   * one (`cancelled`). */
  abort(): void {
    this.cancelQueue();
    this.#native.abort();
  }

  /** Drops the queued prompt, if any; returns it as displayed. */
  cancelQueue(): string | null {
    return this.#native.cancelQueue() ?? null;
  }

  /** Resolves when no prompt is running or queued, after the events of the finished work
   * (a command's skill run included) have reached the listeners. */
  async waitIdle(): Promise<void> {
    const seq = await this.#native.waitIdle();
    await this.#eventsEmitted(seq);
  }

  /** Runs a slash command (name without `/`) on the user's behalf. Unknown or failing commands
   * reject with a `command` {@link RobotaError}; `busy` while a prompt runs for blocking ones;
   * `shut_down` after {@link shutdown}. */
  async executeCommand(name: string, args = ''): Promise<CommandResult> {
    expectString(name, 'executeCommand(name, args): `name`');
    expectString(args, 'executeCommand(name, args): `args`');
    const json = await nativeAsync(() => this.#native.executeCommand(name, args));
    return JSON.parse(json) as CommandResult;
  }

  /** The commands users can run, in registry order. */
  listCommands(): CommandEntry[] {
    return JSON.parse(native(() => this.#native.listCommands())) as CommandEntry[];
  }
  /** The skills of this session, by name, with their source. Run one with
   * `executeCommand(name, args)`; each activation emits `skill_activation` events. */
  listSkills(): SkillInfo[] {
    return JSON.parse(native(() => this.#native.listSkills())) as SkillInfo[];
  }
  /** The background tasks (Bash with `run_in_background`), oldest first. A resumed session
   * lists those of its earlier runs too; one that was running when that run's process ended is
   * `lost`. Their lifecycle also arrives as `background_task_event` events. */
  listBackgroundTasks(): BackgroundTask[] {
    return JSON.parse(native(() => this.#native.listBackgroundTasks())) as BackgroundTask[];
  }
  /** One background task, or `null` for an unknown id. */
  getBackgroundTask(id: string): BackgroundTask | null {
    expectString(id, 'getBackgroundTask(id): `id`');
    return JSON.parse(native(() => this.#native.getBackgroundTask(id))) as BackgroundTask | null;
  }
  /** Stops a running task with its whole process tree; resolves to it once stopped. An unknown
   * or already ended task rejects with an `invalid_argument` {@link RobotaError}. */
  async cancelBackgroundTask(id: string): Promise<BackgroundTask> {
    expectString(id, 'cancelBackgroundTask(id): `id`');
    return JSON.parse(await nativeAsync(() => this.#native.cancelBackgroundTask(id))) as BackgroundTask;
  }
  /** Waits until the task has ended, at most `timeoutMs`, and resolves to it as it is then
   * (still running when the time ran out). */
  async waitBackgroundTask(id: string, timeoutMs = 30_000): Promise<BackgroundTask> {
    expectString(id, 'waitBackgroundTask(id, timeoutMs): `id`');
    return JSON.parse(
      await nativeAsync(() => this.#native.waitBackgroundTask(id, timeoutMs)),
    ) as BackgroundTask;
  }
  /** Removes an ended task from the list (its log files stay). A running task throws an
   * `invalid_argument` {@link RobotaError}: cancel it first. */
  closeBackgroundTask(id: string): BackgroundTask {
    expectString(id, 'closeBackgroundTask(id): `id`');
    return JSON.parse(native(() => this.#native.closeBackgroundTask(id))) as BackgroundTask;
  }
  /** A page of the task's output file (at most 1 MiB) from byte `offset`. */
  readBackgroundTaskLog(
    id: string,
    options: { stream?: 'stdout' | 'stderr'; offset?: number; maxBytes?: number } = {},
  ): BackgroundTaskLogPage {
    expectString(id, 'readBackgroundTaskLog(id): `id`');
    const { stream = 'stdout', offset = 0, maxBytes = 65_536 } = options;
    return JSON.parse(
      native(() => this.#native.readBackgroundTaskLog(id, stream, offset, maxBytes)),
    ) as BackgroundTaskLogPage;
  }
  /** Runs a subagent from host code (as `/agent` does) and resolves to its report.
   * `agentType` names an agent definition (default `general-purpose`); `model` overrides the
   * definition's (`sonnet`, `opus`, `haiku`, `inherit` or a model id); `isolation: 'worktree'`
   * runs it in a git worktree of its own. Its progress arrives as `background_task_event`
   * events; `abort()` stops it. An unknown agent, an empty prompt or a model the provider cannot
   * serve rejects with an `invalid_argument` {@link RobotaError}; a run that failed resolves to
   * a report with `error`. */
  async runSubagent(prompt: string, options: SubagentOptions = {}): Promise<SubagentReport> {
    expectString(prompt, 'runSubagent(prompt, options): `prompt`');
    const { agentType, model, isolation } = subagentOptions('runSubagent', options);
    return JSON.parse(
      await nativeAsync(() => this.#native.runSubagent(prompt, agentType, model, isolation)),
    ) as SubagentReport;
  }
  /** Starts a subagent from host code as a background task (`kind: 'agent'`) and resolves to
   * the task at once; options as for {@link runSubagent}. Wait for it with
   * `waitBackgroundTask`, read its report with `readBackgroundTaskLog`, stop it with
   * `cancelBackgroundTask`. The concurrency limit refuses one task too many with an
   * `invalid_argument` {@link RobotaError}. */
  async startBackgroundSubagent(prompt: string, options: SubagentOptions = {}): Promise<BackgroundTask> {
    expectString(prompt, 'startBackgroundSubagent(prompt, options): `prompt`');
    const { agentType, model, isolation } = subagentOptions('startBackgroundSubagent', options);
    return JSON.parse(
      await nativeAsync(() => this.#native.startBackgroundSubagent(prompt, agentType, model, isolation)),
    ) as BackgroundTask;
  }
  /** The plugins of this session's user and project with their state, the known marketplaces
   * and the problems found. Install one with `executeCommand('plugin', 'marketplace add DIR')`
   * and `executeCommand('plugin', 'install NAME@MARKETPLACE')`; sessions created afterwards
   * load it (its skills are named `plugin:skill`). */
  listPlugins(): PluginListing {
    return JSON.parse(native(() => this.#native.listPlugins())) as PluginListing;
  }

  /** The edit checkpoints, one per prompt, oldest first. Files that Write, Edit, MultiEdit,
   * NotebookEdit and tools declaring `mutatesFiles` change are saved before each prompt first
   * changes them; changes made by Bash are not tracked. */
  listEditCheckpoints(): EditCheckpoint[] {
    return JSON.parse(native(() => this.#native.listEditCheckpoints())) as EditCheckpoint[];
  }

  /** One checkpoint: its files and which checkpoints restoring or rolling back undoes. An
   * unknown id throws an `invalid_argument` {@link RobotaError}. */
  inspectEditCheckpoint(id: string): EditCheckpointInspection {
    expectString(id, 'inspectEditCheckpoint(id): `id`');
    return JSON.parse(native(() => this.#native.inspectEditCheckpoint(id))) as EditCheckpointInspection;
  }

  /** Puts files back as checkpoint `id`'s prompt left them: later prompts' changes are undone
   * newest first (saved contents written back, files they created deleted). Throws a `busy`
   * {@link RobotaError} while a prompt runs. */
  restoreEditCheckpoint(id: string): EditCheckpointRestore {
    expectString(id, 'restoreEditCheckpoint(id): `id`');
    return JSON.parse(native(() => this.#native.restoreEditCheckpoint(id, false))) as EditCheckpointRestore;
  }

  /** Like `restoreEditCheckpoint`, and also undoes checkpoint `id`'s own prompt. */
  rollbackEditCheckpoint(id: string): EditCheckpointRestore {
    expectString(id, 'rollbackEditCheckpoint(id): `id`');
    return JSON.parse(native(() => this.#native.restoreEditCheckpoint(id, true))) as EditCheckpointRestore;
  }

  /** The MCP servers of this session (from `mcpServers` in the options, `.mcp.json` and
   * settings) with their status, tools (`mcp__<server>__<tool>`, offered to the model) and
   * prompts (run with `executeCommand('mcp__<server>__<prompt>', args)`). Servers connect in the
   * background from the moment the session is created, so right after it they are `pending`
   * (each change is an `mcp_server_status` event; see `waitForMcpServers`). */
  listMcpServers(): McpServerInfo[] {
    return JSON.parse(native(() => this.#native.listMcpServers())) as McpServerInfo[];
  }

  /** Resolves when the MCP servers are done starting (each `connected`, `failed`, `needs_auth`
   * or `disabled`), or after `timeoutMs` (default: when they are, which the start-up timeout
   * bounds): `true` when none is still starting. Prompts need not wait first: each waits for
   * servers still starting before its first model call. */
  async waitForMcpServers(timeoutMs?: number): Promise<boolean> {
    if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0)) {
      throw new RobotaError('invalid_argument', `waitForMcpServers(timeoutMs): \`timeoutMs\` must be a number of milliseconds, not ${describeValue(timeoutMs)}`);
    }
    return nativeAsync(() => this.#native.waitForMcpServers(timeoutMs));
  }


  /** Sends the spans and metrics recorded so far to the collector now (with `telemetry`),
   * waiting the export timeout at most; `true` when all went out in time. `shutdown()` flushes
   * too. */
  async flushTelemetry(): Promise<boolean> {
    return nativeAsync(() => this.#native.flushTelemetry());
  }

  /** Ends the session: aborts any run, fires `SessionEnd`, stops events and releases every
   * callback. Pending `submit()`s resolve. Afterwards every method that acts (`submit`,
   * `executeCommand`, `compact`, `listCommands`, `setName`, `events`) throws a `shut_down`
   * {@link RobotaError}; `abort` and `cancelQueue` do nothing; the getters still return the
   * final state. Calling it again does nothing. */
  async shutdown(reason: ShutdownReason = 'other'): Promise<void> {
    if (this.#closed) return;
    this.cancelQueue();
    await nativeAsync(() => this.#native.shutdown(reason));
    this.#closed = true;
    this.#wakeEventWaiters();
    for (const waiter of this.#requestWaiters.values()) waiter();
    this.#requestWaiters.clear();
    this.#emittedRequests.clear();
    for (const push of this.#iterators) push(null);
    this.#iterators.clear();
  }

  /**
   * Every event from now on, in order, until the session shuts down or the loop breaks:
   * `for await (const ev of session.events()) { … }`.
   */
  events(): AsyncIterableIterator<RobotaEvent> {
    if (this.#closed) {
      throw new RobotaError('shut_down', 'the session was shut down; create a new session (or resume this one) to go on');
    }
    const queue: RobotaEvent[] = [];
    let wake: (() => void) | null = null;
    let ended = false;
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

  /**
   * What opening the saved session found damaged, repaired or unfinished, or `null` when there
   * is nothing to tell. `report.unfinished_turn?.prompt` is the prompt a killed process never
   * finished (offer to send it again); the same report comes once as a `session_recovered`
   * event when the session starts.
   */
  getRecoveryReport(): RecoveryReport | null {
    return JSON.parse(native(() => this.#native.getRecoveryReport())) as RecoveryReport | null;
  }

  /**
   * The configuration problems the session worked around when it opened, each with its file and
   * JSON path: a permission rule it could not parse (skipped, or for deny/ask rules, every call
   * of its tool asks), an unknown settings key, an agent definition file it could not use, a
   * tool an agent lists that the session does not have. They are also sent as
   * `settings_warning` session events while the session opens, before `on()` can be called;
   * this is where a host reads them.
   */
  getWarnings(): ConfigWarning[] {
    return JSON.parse(native(() => this.#native.getWarnings())) as ConfigWarning[];
  }

  /** The OS sandbox Bash commands run in: enabled, active (enabled *and* working here),
   * backend, why not when unavailable, writable roots, network policy and which guarantees
   * hold. */
  sandboxStatus(): SandboxStatus {
    return JSON.parse(native(() => this.#native.sandboxStatus())) as SandboxStatus;
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

  /** Names the session (`null` clears it). A session in a `sessionStore` is renamed with
   * {@link rename} (renaming saves it through the store). */
  setName(name: string | null): void {
    if (name !== null) expectString(name, 'setName(name): `name`');
    native(() => this.#native.setName(name));
  }

  /** Names the session (`null` clears it) and saves it, off the JavaScript thread; works with
   * any store. */
  async rename(name: string | null): Promise<void> {
    if (name !== null) expectString(name, 'rename(name): `name`');
    await nativeAsync(() => this.#native.renameSession(name));
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
    if (instructions !== undefined) expectString(instructions, 'compact(instructions): `instructions`');
    return JSON.parse(await nativeAsync(() => this.#native.compact(instructions))) as unknown;
  }
}

/** Names that are not events but `EventEmitter`'s own. */
const EMITTER_EVENTS: ReadonlySet<string> = new Set(['newListener', 'removeListener', 'event']);

/** Refuses a listener for an event no session emits (a typo would never fire). */
function checkEventName(name: string | symbol): void {
  if (typeof name !== 'string' || EMITTER_EVENTS.has(name) || (EVENT_TYPES as readonly string[]).includes(name)) return;
  throw new RobotaError(
    'invalid_argument',
    `unknown event \`${name}\` (expected 'event' for every event, or one of ${EVENT_TYPES.join(', ')})`,
  );
}
