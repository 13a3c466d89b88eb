/**
 * Host extensions written in JavaScript — tools, the permission handler, hook callbacks,
 * command modules — and the one dispatcher through which the engine calls them.
 *
 * Every callback may be async and may await session methods: the engine waits for it on its own
 * threads, never on the JavaScript thread. A callback that throws becomes an error result (tools),
 * a denial (permission handler), a failed hook, or a failed command — never a crash.
 */

import { messageOf } from './errors.js';
import type { CommandResult, PermissionMode } from './types.js';
import { CustomProvider, type ProviderLike, type ProviderRequest, type ScriptedTurn } from './providers.js';

/** What a tool's `execute` gets besides its input. */
export interface ToolContext {
  /** The provider's id of this call. */
  toolUseId: string;
  /** The session's working directory. */
  cwd: string;
  /** Fires when the run is aborted; the engine has already recorded the call as `aborted`. */
  signal: AbortSignal;
}

/** What a tool may return: text, `{content, isError?, response?}`, or any JSON value. */
export type ToolReturn = string | { content: string; isError?: boolean; response?: unknown } | unknown;

/** A tool the model can call, implemented in JavaScript. */
export interface Tool<Input = any> {
  /** The name the model uses. */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** JSON Schema of the input object. */
  inputSchema: Record<string, unknown>;
  /** True when it changes nothing: no approval needed, may run concurrently. */
  readOnly?: boolean;
  /** Runs one call; a throw becomes an error result the model sees. */
  execute(input: Input, context: ToolContext): ToolReturn | Promise<ToolReturn>;
}

/** Declares a tool (identity helper that checks the shape early). */
export function tool<Input = any>(definition: Tool<Input>): Tool<Input> {
  if (typeof definition?.name !== 'string' || definition.name.length === 0) {
    throw new TypeError('tool(): `name` must be a non-empty string');
  }
  if (typeof definition.execute !== 'function') {
    throw new TypeError(`tool(${definition.name}): \`execute\` must be a function`);
  }
  if (typeof definition.inputSchema !== 'object' || definition.inputSchema === null) {
    throw new TypeError(`tool(${definition.name}): \`inputSchema\` must be a JSON Schema object`);
  }
  return definition;
}

/** A tool call waiting for the host's decision (the engine's `PermissionRequest`). */
export interface PermissionRequest {
  /** Unique within the session. */
  request_id: string;
  /** The tool. */
  tool_name: string;
  /** The arguments it would run with. */
  input: unknown;
  /** The provider's id of the call. */
  tool_use_id: string;
  /** Why approval is needed. */
  reason: string;
  /** Rules that would approve calls like this one. */
  suggested_rules: string[];
  /** The session's permission mode. */
  permission_mode: PermissionMode;
  /** Basis, settings targets, … */
  [key: string]: unknown;
}

/** The host's answer: `true`/`'allow_once'` runs the call, `'allow_session'` also remembers
 * the suggested rules, `false`/`'deny'` refuses (optionally with a message for the model). */
export type PermissionAnswer =
  | boolean
  | 'allow_once'
  | 'allow_session'
  | 'deny'
  | { type: 'allow_once' }
  | { type: 'allow_session'; rules?: string[] }
  | { type: 'allow_always'; rules?: string[]; destination: 'localSettings' | 'projectSettings' | 'userSettings' }
  | { type: 'deny'; message?: string };

/** Answers permission prompts; `signal` fires when the run is aborted while it decides. */
export type PermissionHandler = (
  request: PermissionRequest,
  context: { signal: AbortSignal },
) => PermissionAnswer | Promise<PermissionAnswer>;

/** Hook event names, as in Claude Code's settings. */
export type HookEventName =
  | 'SessionStart'
  | 'Setup'
  | 'SessionEnd'
  | 'UserPromptSubmit'
  | 'PreToolUse'
  | 'PostToolUse'
  | 'PostToolUseFailure'
  | 'PermissionRequest'
  | 'Stop'
  | 'StopFailure'
  | 'SubagentStart'
  | 'SubagentStop'
  | 'PreCompact'
  | 'PostCompact'
  | 'Notification'
  | 'WorktreeCreate'
  | 'WorktreeRemove';

/** What a hook receives: the JSON a Claude Code hook script reads on stdin. */
export interface HookInput {
  /** The event. */
  hook_event_name: HookEventName;
  /** The session. */
  session_id: string;
  /** Its working directory. */
  cwd: string;
  /** The event's own fields (`prompt`, `tool_name`, `tool_input`, …). */
  [key: string]: unknown;
}

/** What a hook answers; nothing (`undefined`) means "continue", a string is added context. */
export type HookResult =
  | void
  | undefined
  | string
  | { type: 'continue' }
  | { type: 'text'; text: string }
  | { type: 'block'; reason: string }
  | { type: 'output'; output: Record<string, unknown> }
  | { type: 'error'; message: string };

/** A hook callback registration. */
export interface HookRegistration {
  /** The event. */
  event: HookEventName;
  /** Claude Code matcher syntax (`''`/`'*'` for all, `'Edit|Write'`, a regex). */
  matcher?: string;
  /** Timeout in milliseconds (the event's default when absent). */
  timeoutMs?: number;
  /** The callback; a throw counts as a failed hook. */
  callback(input: HookInput): HookResult | Promise<HookResult>;
}

/** What a command's `execute` gets. */
export interface CommandContext {
  /** The session's id. */
  sessionId: string;
}

/** A command of a {@link CommandModule}. */
export interface Command {
  /** Canonical, slash-free name. */
  name: string;
  /** One line for help and palettes. */
  description: string;
  /** Other names. */
  aliases?: string[];
  /** Argument grammar shown after the name. */
  argumentHint?: string;
  /** True when the model may run it through its `robota_command_<name>` tool. */
  modelInvocable?: boolean;
  /** False hides it from users (model-only). */
  userInvocable?: boolean;
  /** True: refused while a prompt runs. */
  blocking?: boolean;
  /** Runs it; a string is a successful message, a throw a failed result. */
  execute(args: string, context: CommandContext): string | CommandResult | Promise<string | CommandResult>;
}

/** A group of commands added to a session. */
export interface CommandModule {
  /** Module id, used in collision reports. */
  name: string;
  /** Its commands. */
  commands: Command[];
}

/** The extensions of one session or query, as passed to the native constructor. */
export interface HostExtensions {
  provider: ProviderLike;
  tools?: Tool[] | undefined;
  permissionHandler?: PermissionHandler | undefined;
  hooks?: HookRegistration[] | undefined;
  commandModules?: CommandModule[] | undefined;
}

/** A call from the engine: `request` is what the engine's host adapter asks (see the table in
 * `core/src/api/host.rs`); `index`/`module` route hook and command calls. */
interface HostRequest {
  call_id: number;
  kind: 'tool' | 'permission' | 'hook' | 'command' | 'provider' | 'next' | 'cancel';
  request?: unknown;
  index?: number;
  module?: string;
}

/** A tool answer in the engine's shape: `{content, is_error?, response?}`. */
function normalizeToolResult(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') {
    return { content: value };
  }
  if (value !== null && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    const result = value as { content: string; isError?: boolean; response?: unknown };
    const out: Record<string, unknown> = { content: result.content, is_error: result.isError === true };
    if (result.response !== undefined) out.response = result.response;
    return out;
  }
  if (value === undefined) {
    return { content: '' };
  }
  return { content: JSON.stringify(value), response: value };
}

/** A permission answer in the engine's shape: `{type: 'allow_once' | ..., ...}`. */
function normalizePermission(answer: PermissionAnswer): Record<string, unknown> {
  if (answer === true || answer === 'allow_once') return { type: 'allow_once' };
  if (answer === 'allow_session') return { type: 'allow_session' };
  if (answer === false || answer === 'deny') return { type: 'deny' };
  if (answer !== null && typeof answer === 'object' && typeof answer.type === 'string') {
    return { ...answer };
  }
  throw new TypeError(
    `the permission handler returned ${JSON.stringify(answer)}; return true/false, 'allow_once', ` +
      `'allow_session', 'deny' or {type, ...}`,
  );
}

/** A hook result in the engine's shape: `{type: 'continue' | 'text' | ..., ...}`. */
function normalizeHook(result: HookResult): unknown {
  if (result === undefined || result === null) return { type: 'continue' };
  if (typeof result === 'string') return { type: 'text', text: result };
  return result;
}

/** A command result in the engine's shape: `{message, success, ...}`. */
function normalizeCommand(result: string | CommandResult): Record<string, unknown> {
  if (typeof result === 'string') return { message: result, success: true };
  if (result === null || typeof result !== 'object' || typeof result.message !== 'string') {
    throw new TypeError('a command must return a string or {message, success}');
  }
  return { ...result, success: result.success !== false };
}

/** The provider events of one model call, streamed in batches; returns the final answer. */
type TurnStream = AsyncGenerator<unknown[], Record<string, unknown>, undefined>;

/** Marks a provider call's stream among the dispatcher's results. */
class ProviderStream {
  constructor(readonly events: TurnStream) {}
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new Error('aborted'));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Streams a {@link ScriptedTurn} the way the scripted provider plays one, as the engine's host
 * provider events (`retry`, `thinking_delta`, `text_delta`, `tool_call`) and final answer
 * (`{stop_reason?, usage?, model?, error?}`).
 */
async function* streamTurn(turn: ScriptedTurn, signal: AbortSignal): TurnStream {
  if (turn === null || typeof turn !== 'object') {
    throw new TypeError(
      `the custom provider returned ${JSON.stringify(turn)}; return a turn {text?, thinking?, tool_calls?, usage?, stop_reason?}`,
    );
  }
  const delay = turn.delay_ms_per_chunk ?? 0;
  let batch: unknown[] = [];
  // Sends what is pending, waits `delay_ms_per_chunk`, then queues `event`.
  const afterDelay = async function* (event: unknown): AsyncGenerator<unknown[], void, undefined> {
    if (delay > 0) {
      if (batch.length > 0) yield batch;
      batch = [];
      await sleep(delay, signal);
    }
    batch.push(event);
  };
  const retries = turn.retries ?? [];
  for (const [i, retry] of retries.entries()) {
    const { delay_ms: delayMs, error } = retry;
    batch.push({ type: 'retry', attempt: i + 1, max_attempts: retries.length + 1, delay_ms: delayMs, error });
    if (delayMs > 0) {
      yield batch;
      batch = [];
      await sleep(delayMs, signal);
    }
  }
  if (turn.thinking !== undefined && turn.thinking !== '') batch.push({ type: 'thinking_delta', text: turn.thinking });
  const chunks = typeof turn.text === 'string' ? [turn.text] : (turn.text ?? []);
  for (const text of chunks) {
    if (text !== '') yield* afterDelay({ type: 'text_delta', text });
  }
  const answer: Record<string, unknown> = {};
  if (turn.usage !== undefined) answer.usage = turn.usage;
  if (turn.model !== undefined) answer.model = turn.model;
  if (turn.error !== undefined) {
    answer.error = turn.error;
  } else {
    for (const call of turn.tool_calls ?? []) {
      yield* afterDelay({
        type: 'tool_call',
        id: call.id,
        name: call.name,
        input: call.input,
        arguments: call.raw_arguments,
      });
    }
    if (turn.stop_reason !== undefined) answer.stop_reason = turn.stop_reason;
  }
  if (batch.length > 0) yield batch;
  return answer;
}

/**
 * The per-session dispatcher the engine calls: `(requestJson) => Promise<replyJson>`. It never
 * rejects; failures are `{error}` replies the engine turns into error results. A provider call
 * replies `{events}` batches (the engine asks for more with `{kind: 'next'}`) before its answer.
 */
export function createDispatcher(extensions: HostExtensions): (request: string) => Promise<string> {
  const tools = new Map<string, Tool>();
  for (const t of extensions.tools ?? []) tools.set(t.name, t);
  const commands = new Map<string, Command>();
  for (const module of extensions.commandModules ?? []) {
    for (const command of module.commands) commands.set(`${module.name}\u0000${command.name}`, command);
  }
  const hooks = extensions.hooks ?? [];
  const inFlight = new Map<number, AbortController>();
  const streams = new Map<number, TurnStream>();
  const provider = extensions.provider instanceof CustomProvider ? extensions.provider : undefined;

  async function handle(request: HostRequest, signal: AbortSignal): Promise<unknown> {
    const args = (request.request ?? {}) as Record<string, unknown>;
    switch (request.kind) {
      case 'tool': {
        const t = tools.get(String(args.tool));
        if (t === undefined) throw new Error(`no JavaScript tool named ${String(args.tool)}`);
        const result = await t.execute(args.input, {
          toolUseId: String(args.tool_use_id),
          cwd: String(args.cwd),
          signal,
        });
        return normalizeToolResult(result);
      }
      case 'permission': {
        const handler = extensions.permissionHandler;
        if (handler === undefined) return { type: 'deny' };
        return normalizePermission(await handler(args as PermissionRequest, { signal }));
      }
      case 'hook': {
        const hook = hooks[Number(request.index)];
        if (hook === undefined) throw new Error(`no JavaScript hook number ${String(request.index)}`);
        return normalizeHook(await hook.callback(args as HookInput));
      }
      case 'command': {
        const command = commands.get(`${String(request.module)}\u0000${String(args.command)}`);
        if (command === undefined) throw new Error(`no JavaScript command ${String(args.command)}`);
        return normalizeCommand(await command.execute(String(args.args), { sessionId: String(args.session_id) }));
      }
      case 'provider': {
        if (provider === undefined) throw new Error('this session has no JavaScript provider');
        const turn = await provider.options.respond(args as ProviderRequest, { signal });
        return new ProviderStream(streamTurn(turn, signal));
      }
      default:
        throw new Error(`unknown host request kind ${String(request.kind)}`);
    }
  }

  /** The next reply of a provider call: an events batch, or the answer (the call is over). */
  async function advance(callId: number, stream: TurnStream): Promise<string> {
    const next = await stream.next();
    if (next.done === true) {
      return JSON.stringify({ ok: next.value });
    }
    // A cancelled call is never asked for more.
    if (inFlight.has(callId)) streams.set(callId, stream);
    return JSON.stringify({ events: next.value });
  }

  return async (json: string): Promise<string> => {
    let request: HostRequest;
    try {
      request = JSON.parse(json) as HostRequest;
    } catch (error) {
      return JSON.stringify({ error: `invalid host request: ${messageOf(error)}` });
    }
    const callId = request.call_id;
    if (request.kind === 'cancel') {
      inFlight.get(callId)?.abort();
      inFlight.delete(callId);
      const stream = streams.get(callId);
      streams.delete(callId);
      stream?.return({}).catch(() => undefined);
      return 'null';
    }
    try {
      if (request.kind === 'next') {
        const stream = streams.get(callId);
        streams.delete(callId);
        if (stream === undefined) throw new Error(`no provider call ${callId} is streaming`);
        return await advance(callId, stream);
      }
      const controller = new AbortController();
      inFlight.set(callId, controller);
      const ok = await handle(request, controller.signal);
      if (ok instanceof ProviderStream) return await advance(callId, ok.events);
      return JSON.stringify({ ok: ok ?? null });
    } catch (error) {
      return JSON.stringify({ error: messageOf(error) });
    } finally {
      if (!streams.has(callId)) inFlight.delete(callId);
    }
  };
}

/** The extension declarations of the native options document (functions stay in JS). */
export function declareExtensions(extensions: HostExtensions): Record<string, unknown> {
  const declared: Record<string, unknown> = {
    provider: extensions.provider.toConfig(),
    tools: (extensions.tools ?? []).map((t) => ({
      name: t.name,
      description: t.description ?? '',
      input_schema: t.inputSchema,
      read_only: t.readOnly === true,
    })),
    permission_handler: typeof extensions.permissionHandler === 'function',
    hooks: (extensions.hooks ?? []).map((h) => {
      if (typeof h.callback !== 'function') {
        throw new TypeError(`hook for ${h.event}: \`callback\` must be a function`);
      }
      const hook: Record<string, unknown> = { event: h.event, matcher: h.matcher ?? '' };
      if (h.timeoutMs !== undefined) hook.timeout_ms = h.timeoutMs;
      return hook;
    }),
    command_modules: (extensions.commandModules ?? []).map((m) => ({
      name: m.name,
      commands: m.commands.map((c) => {
        if (typeof c.execute !== 'function') {
          throw new TypeError(`command ${c.name}: \`execute\` must be a function`);
        }
        const command: Record<string, unknown> = {
          name: c.name,
          description: c.description ?? '',
          aliases: c.aliases ?? [],
          model_invocable: c.modelInvocable === true,
          user_invocable: c.userInvocable !== false,
        };
        if (c.blocking === true) command.lifecycle = 'blocking';
        if (c.argumentHint !== undefined) command.argument_hint = c.argumentHint;
        return command;
      }),
    })),
  };
  return declared;
}
