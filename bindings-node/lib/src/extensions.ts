/**
 * Host extensions written in JavaScript — tools, the permission handler, hook callbacks,
 * command modules — and the one dispatcher through which the engine calls them.
 *
 * Every callback may be async and may await session methods: the engine waits for it on its own
 * threads, never on the JavaScript thread. A callback that throws becomes an error result (tools),
 * a denial (permission handler), a failed hook, or a failed command — never a crash.
 */

import { checkStore, storeAnswer, storeName, type SessionStore } from './stores.js';
import { RobotaError, describeValue, messageOf, toRobotaError } from './errors.js';
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

/** What a tool may return: text; a result `{content, isError?, response?}` (`is_error` works too:
 * a result with `isError: true` is an error result the model sees as one); or any other JSON
 * value, which the model sees as JSON text. */
export type ToolReturn =
  | string
  | {
      /** The text the model sees. */
      content: string;
      /** True: the model sees an error result. */
      isError?: boolean;
      /** The same as `isError` (the wire name). */
      is_error?: boolean;
      /** Structured data for the host, kept with the call (the model does not see it). */
      response?: unknown;
    }
  | unknown;

/** A tool the model can call, implemented in JavaScript. */
export interface Tool<Input = any> {
  /** The name the model uses: 1-64 letters, digits, `_` or `-` (checked when the session is
   * created). */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** JSON Schema of the input object (`{type: 'object', properties, required}`). */
  inputSchema: Record<string, unknown>;
  /** True when it changes nothing: no approval needed, may run concurrently. */
  readOnly?: boolean;
  /** True when the tool takes the place of the built-in tool of the same name (`Read`, `Bash`,
   * …). Without it, a tool named like a built-in is refused when the session is created. */
  replacesBuiltin?: boolean;
  /** Input fields holding paths of files a call creates, changes or deletes (e.g. `['path']`):
   * the session saves them first, so edit checkpoints can rewind the change. */
  mutatesFiles?: string[];
  /** MCP annotations (`{readOnlyHint: true, title}`) when the tool is served by an in-process
   * MCP server (see {@link createSdkMcpServer}). */
  annotations?: Record<string, unknown>;
  /** Runs one call. A throw becomes an error result the model sees (`TypeError: message`) and a
   * process warning for the developer. */
  execute(input: Input, context: ToolContext): ToolReturn | Promise<ToolReturn>;
}

/** Declares a tool (identity helper that checks the shape early; the name and schema are
 * checked when the session is created). Throws an `invalid_argument` {@link RobotaError}.
 *
 * The Claude Agent SDK's form, for tools of an in-process MCP server
 * ({@link createSdkMcpServer}), is accepted too: `tool(name, description, inputSchema, handler,
 * {annotations}?)`, where `handler(args)` may answer MCP content blocks
 * (`{content: [{type: 'text', text}]}`). */
export function tool<Input = any>(definition: Tool<Input>): Tool<Input>;
export function tool<Input = any>(
  name: string,
  description: string,
  inputSchema: Record<string, unknown>,
  handler: (args: Input, context: ToolContext) => ToolReturn | Promise<ToolReturn>,
  extras?: { annotations?: Record<string, unknown> },
): Tool<Input>;
export function tool<Input = any>(
  first: Tool<Input> | string,
  description?: string,
  inputSchema?: Record<string, unknown>,
  handler?: (args: Input, context: ToolContext) => ToolReturn | Promise<ToolReturn>,
  extras?: { annotations?: Record<string, unknown> },
): Tool<Input> {
  const definition: Tool<Input> =
    typeof first === 'string'
      ? {
          name: first,
          description: description ?? '',
          inputSchema: inputSchema as Record<string, unknown>,
          readOnly: extras?.annotations?.readOnlyHint === true,
          ...(extras?.annotations === undefined ? {} : { annotations: extras.annotations }),
          execute: handler as Tool<Input>['execute'],
        }
      : first;
  if (typeof definition?.name !== 'string' || definition.name.length === 0) {
    throw new RobotaError('invalid_argument', 'tool(): `name` must be a non-empty string');
  }
  if (typeof definition.execute !== 'function') {
    throw new RobotaError('invalid_argument', `tool \`${definition.name}\`: \`execute\` must be a function`);
  }
  if (typeof definition.inputSchema !== 'object' || definition.inputSchema === null) {
    throw new RobotaError(
      'invalid_argument',
      `tool \`${definition.name}\`: \`inputSchema\` must be a JSON Schema object`,
    );
  }
  return definition;
}

/** An MCP server whose tools are JavaScript functions, run inside the session's process (the
 * Claude Agent SDK's SDK server). Give it in `mcpServers: {name: server}` beside configured
 * servers; its tools reach the model as `mcp__<name>__<tool>` (the key is the name). */
export interface SdkMcpServer {
  /** Marks an in-process server in `mcpServers`. */
  type: 'sdk';
  /** The server's own name. */
  name: string;
  /** The version it reports. */
  version: string;
  /** Its tools (see {@link tool}). */
  tools: Tool[];
}

/** An in-process MCP server serving `tools`. A tool that throws is a tool error the model sees
 * (and a process warning); a name shared with a configured server is refused when the session
 * is created. */
export function createSdkMcpServer(options: { name: string; version?: string; tools?: Tool[] }): SdkMcpServer {
  if (typeof options?.name !== 'string' || options.name.length === 0) {
    throw new RobotaError('invalid_argument', 'createSdkMcpServer(): `name` must be a non-empty string');
  }
  const tools = (options.tools ?? []).map((t) => tool(t));
  return { type: 'sdk', name: options.name, version: options.version ?? '1.0.0', tools };
}

/** True for a server made by {@link createSdkMcpServer}. */
export function isSdkMcpServer(value: unknown): value is SdkMcpServer {
  return (
    value !== null &&
    typeof value === 'object' &&
    (value as { type?: unknown }).type === 'sdk' &&
    Array.isArray((value as { tools?: unknown }).tools)
  );
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
 * the suggested rules, `allow_with_input` runs it with other arguments (checked against the deny
 * rules first; the Claude Agent SDK's `updatedInput`), `false`/`'deny'` refuses (optionally
 * with a message for the model). */
export type PermissionAnswer =
  | boolean
  | 'allow_once'
  | 'allow_session'
  | 'deny'
  | {
      /** Run this call. */
      type: 'allow_once';
    }
  | {
      /** Run this call and allow matching calls for the rest of the session. */
      type: 'allow_session';
      /** The rules to remember (default: the request's suggested rules). */
      rules?: string[];
    }
  | {
      /** Run this call and save rules to a settings file. */
      type: 'allow_always';
      /** The rules to save (default: the request's suggested rules). */
      rules?: string[];
      /** The settings file to write them to. */
      destination: 'localSettings' | 'projectSettings' | 'userSettings';
    }
  | {
      /** Run the call with other arguments. */
      type: 'allow_with_input';
      /** The arguments to run it with (checked against the deny rules first). */
      input: Record<string, unknown>;
      /** Rules to remember as well. */
      rules?: string[];
      /** Where to save `rules`; without it they hold for the session. */
      destination?: 'localSettings' | 'projectSettings' | 'userSettings';
    }
  | {
      /** Refuse the call. */
      type: 'deny';
      /** What the model is told. */
      message?: string;
    };

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

/** Claude Code's hook JSON output, as a hook script prints it (every field optional). */
export interface HookJSONOutput {
  /** `false` stops the agent (takes precedence over everything). */
  continue?: boolean;
  /** Shown to the user when `continue` is false. */
  stopReason?: string;
  /** Accepted for compatibility. */
  suppressOutput?: boolean;
  /** A warning for the user. */
  systemMessage?: string;
  /** `'block'` (on PreToolUse also the deprecated `'approve'`). */
  decision?: 'block' | 'approve';
  /** Why, for `decision`. */
  reason?: string;
  /** Event-specific fields (`permissionDecision`, `updatedInput`, `additionalContext`, …). */
  hookSpecificOutput?: {
    /** The event this output answers. */
    hookEventName?: HookEventName;
    /** PreToolUse: allow or deny the call, ask the user, or leave it to the usual rules (`defer`). */
    permissionDecision?: 'allow' | 'deny' | 'ask' | 'defer';
    /** Why, shown to the user (and to the model on `deny`). */
    permissionDecisionReason?: string;
    /** PreToolUse: the arguments the call runs with instead. */
    updatedInput?: Record<string, unknown>;
    /** Text added to what the model sees (next to the call's result, or with the prompt). */
    additionalContext?: string;
    /** PermissionRequest: the answer to the permission prompt. */
    decision?: {
      /** Allow or deny the call. */
      behavior: 'allow' | 'deny';
      /** With `allow`: the arguments to run it with. */
      updatedInput?: unknown;
      /** With `deny`: what the model is told. */
      message?: string;
      /** With `deny`: also stop the run. */
      interrupt?: boolean;
    };
    /** Further event-specific fields. */
    [key: string]: unknown;
  };
}

/** What a hook answers: nothing (`undefined`) means "continue"; a string is added context;
 * Claude Code's hook JSON (`{decision: 'block', reason}`, `{hookSpecificOutput: {…}}`); or the
 * tagged forms. Anything else (another type, an unknown field such as `decison`) is a failure. */
export type HookResult =
  | void
  | undefined
  | null
  | string
  | HookJSONOutput
  | {
      /** Go on as if the hook were not there. */
      type: 'continue';
    }
  | {
      /** Add context. */
      type: 'text';
      /** The text added. */
      text: string;
    }
  | {
      /** Refuse the guarded action. */
      type: 'block';
      /** Why (the model sees it). */
      reason: string;
    }
  | {
      /** Claude Code's hook JSON. */
      type: 'output';
      /** The output. */
      output: HookJSONOutput;
    }
  | {
      /** The hook failed; its `onFailure` decides what happens. */
      type: 'error';
      /** What went wrong. */
      message: string;
    };

/** A hook callback: gets the hook input, answers a {@link HookResult} (or a Promise of one). */
export type HookCallback = (input: HookInput) => HookResult | Promise<HookResult>;

/** What a hook's failure (a throw, a timeout, an unrecognised answer) does: `'block'` refuses the
 * guarded action (the default on `PreToolUse` and `PermissionRequest`; allowed on
 * `UserPromptSubmit` too), `'allow'` lets it go ahead (the default elsewhere). */
export type HookOnFailure = 'block' | 'allow';

/** A hook callback registration. */
export interface HookRegistration {
  /** The event. */
  event: HookEventName;
  /** Claude Code matcher syntax (`''`/`'*'` for all, `'Edit|Write'`, a regex). */
  matcher?: string;
  /** Timeout in milliseconds (the event's default when absent); a timeout is a failure. */
  timeoutMs?: number;
  /** The hook's name in messages, events and warnings (default: the function's name). */
  name?: string;
  /** What a failure does (see {@link HookOnFailure}). A failing `PreToolUse` or
   * `PermissionRequest` hook blocks the call by default, naming the hook and the failure. */
  onFailure?: HookOnFailure;
  /** The callback. */
  callback: HookCallback;
}

/** A Claude Agent SDK style matcher entry of the `{EventName: [...]}` form. */
export interface HookMatcher {
  /** Claude Code matcher syntax (default: all). */
  matcher?: string;
  /** The callbacks. */
  hooks: HookCallback[];
  /** Timeout in seconds (as in the Claude Agent SDK). */
  timeout?: number;
  /** What a failure does. */
  onFailure?: HookOnFailure;
}

/** What `hooks` accepts: a list of registrations, or a map `{PreToolUse: entries, …}` whose
 * entries are a callback, a registration without `event`, a {@link HookMatcher}, or a list of
 * those. */
export type HooksOption =
  | HookRegistration[]
  | {
      [E in HookEventName]?:
        | HookCallback
        | Omit<HookRegistration, 'event'>
        | HookMatcher
        | Array<HookCallback | Omit<HookRegistration, 'event'> | HookMatcher>;
    };

/** The registrations `hooks` stands for, in order; throws an `invalid_argument`
 * {@link RobotaError} naming the hook for a malformed entry. */
export function hookRegistrations(hooks: HooksOption | undefined): HookRegistration[] {
  if (hooks === undefined || hooks === null) return [];
  if (Array.isArray(hooks)) return hooks;
  if (typeof hooks !== 'object') {
    throw new RobotaError('invalid_argument', '`hooks` must be a list of registrations or {EventName: callback}');
  }
  const out: HookRegistration[] = [];
  for (const [event, value] of Object.entries(hooks)) {
    const entries: unknown[] = Array.isArray(value) ? value : [value];
    for (const entry of entries) {
      if (typeof entry === 'function') {
        out.push({ event: event as HookEventName, callback: entry as HookCallback });
      } else if (entry !== null && typeof entry === 'object' && Array.isArray((entry as HookMatcher).hooks)) {
        const matcher = entry as HookMatcher;
        for (const callback of matcher.hooks) {
          const registration: HookRegistration = { event: event as HookEventName, callback };
          if (matcher.matcher !== undefined) registration.matcher = matcher.matcher;
          if (matcher.timeout !== undefined) registration.timeoutMs = matcher.timeout * 1000;
          if (matcher.onFailure !== undefined) registration.onFailure = matcher.onFailure;
          out.push(registration);
        }
      } else if (entry !== null && typeof entry === 'object' && 'callback' in entry) {
        out.push({ ...(entry as Omit<HookRegistration, 'event'>), event: event as HookEventName });
      } else {
        throw new RobotaError(
          'invalid_argument',
          `hooks.${event}: an entry must be a function, {callback, matcher?, …} or {matcher?, hooks: [functions]}, ` +
            `not ${JSON.stringify(entry) ?? String(entry)}`,
        );
      }
    }
  }
  return out;
}

/** The name a hook goes by in messages: its `name`, else its function's own name, else its event
 * and position (`PreToolUse hook #2`). An arrow function takes the name of the property it is
 * written in (`callback`, `PreToolUse`), which names nothing: those count as unnamed. */
function hookName(hook: HookRegistration, index: number): string {
  if (typeof hook.name === 'string' && hook.name.length > 0) return hook.name;
  const fn = typeof hook.callback === 'function' ? hook.callback.name : '';
  const named = fn.length > 0 && fn !== 'callback' && fn !== String(hook.event);
  return named ? fn : `${String(hook.event)} hook #${index + 1}`;
}

/** What a command's `execute` gets. */
/** The settings file a command reads or patches: `.claude/settings.local.json` of the project,
 * `.claude/settings.json` of the project, or the user's `~/.claude/settings.json`. */
export type SettingsScope = 'localSettings' | 'projectSettings' | 'userSettings';

/** The session a command runs in: a snapshot taken when the command starts, and methods that
 * act on the live session — the same facade the built-in commands use. The methods work only
 * while the command runs; afterwards they reject with a `command` {@link RobotaError}. Host
 * actions (switch the model, exit, open a picker) are returned as `effects` of the result. */
export interface CommandContext {
  /** The session's id. */
  sessionId: string;
  /** The session's name, if it has one. */
  sessionName: string | null;
  /** The permission mode when the command started. */
  permissionMode: PermissionMode;
  /** The model, if known. */
  model: string | null;
  /** The live state: `session_id`, `session_name`, `permission_mode`, `model`, `context_state`,
   * `usage`, `invoked_by_model`, `project_dir`. */
  state(): Promise<Record<string, unknown>>;
  /** The session's full history (chat messages and event entries). */
  history(): Promise<Record<string, unknown>[]>;
  /** The descriptors of the user-invocable commands. */
  commands(): Promise<Record<string, unknown>[]>;
  /** Clears the conversation (return the `conversation_history_cleared` effect so the host
   * clears what it shows too). */
  clear(): Promise<void>;
  /** Compacts the conversation now; resolves with the summary (`removed_messages`, …). */
  compact(instructions?: string): Promise<Record<string, unknown>>;
  /** Changes the permission mode; an unknown mode rejects with `invalid_argument`. */
  setPermissionMode(mode: PermissionMode): Promise<void>;
  /** Renames the session. */
  setSessionName(name: string): Promise<void>;
  /** Runs a subagent to its final answer (needs the agent command module). */
  runSubagent(
    prompt: string,
    options?: { agentType?: string; isolation?: 'none' | 'worktree' },
  ): Promise<Record<string, unknown>>;
  /** One settings file (`{}` when it does not exist). */
  readSettings(scope?: SettingsScope): Promise<Record<string, unknown>>;
  /** Applies a JSON merge patch (`null` removes a key) to one settings file; resolves with the
   * file's path. */
  updateSettings(patch: Record<string, unknown>, scope?: SettingsScope): Promise<string>;
  /** Sends the session's later prompts to `model` on its provider; resolves with the model and
   * its context window (`null` when the host applies model changes itself). */
  switchModel(model: string): Promise<{
    /** The model now in use. */
    model: string;
    /** Its context window in tokens. */
    contextWindow: number | null;
  }>;
  /** Turns the live session's automatic compaction on or off, optionally at `threshold` (a
   * fraction of the context window in (0, 1]); not saved in settings. */
  setAutoCompact(
    enabled: boolean,
    threshold?: number,
  ): Promise<{
    /** Whether automatic compaction is now on. */
    enabled: boolean;
    /** The fraction of the context window at which it compacts. */
    threshold: number;
  }>;
}

/** One run of a JavaScript command: the messages it sends the engine (context operations,
 * then its answer), one per round trip, and the results of its operations, in order. */
class CommandRun {
  private readonly outbox: string[] = [];
  private wake: (() => void) | undefined;
  private readonly pending: { resolve: (value: unknown) => void; reject: (error: unknown) => void }[] = [];
  private closed = false;

  constructor(private readonly command: string) {}

  /** Sends one context operation; resolves with its result. */
  request(op: Record<string, unknown>): Promise<unknown> {
    if (this.closed) {
      return Promise.reject(
        new RobotaError(
          'command',
          `the context of command \`${this.command}\` is no longer valid: the command has returned; ` +
            'use the context only while the command runs',
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.post(JSON.stringify({ context_op: op }));
    });
  }

  /** The command's answer: the last message. */
  finish(message: string): void {
    this.closed = true;
    this.post(message);
  }

  /** The call was cancelled: nothing more is sent; waiting operations fail. */
  cancel(): void {
    this.closed = true;
    for (const waiter of this.pending.splice(0)) waiter.reject(new RobotaError('command', 'the command was cancelled'));
  }

  /** The engine's result of the oldest waiting operation. */
  deliver(result: { ok?: unknown; error?: unknown }): void {
    const waiter = this.pending.shift();
    if (waiter === undefined) return;
    const error = result.error as { kind?: string; message?: string } | string | undefined;
    if (error === undefined) {
      waiter.resolve(result.ok ?? null);
    } else if (typeof error === 'string') {
      waiter.reject(new RobotaError('command', error));
    } else {
      waiter.reject(toRobotaError(new Error(`[${String(error.kind)}] ${String(error.message)}`)));
    }
  }

  /** True once the answer has been handed over. */
  get over(): boolean {
    return this.closed && this.outbox.length === 0;
  }

  /** The next message for the engine. */
  async next(): Promise<string> {
    while (this.outbox.length === 0) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
    return this.outbox.shift() as string;
  }

  private post(message: string): void {
    this.outbox.push(message);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** The context object a command's `execute` gets. */
function commandContext(args: Record<string, unknown>, run: CommandRun): CommandContext {
  const op = (o: Record<string, unknown>): Promise<unknown> => run.request(o);
  return {
    sessionId: String(args.session_id),
    sessionName: typeof args.session_name === 'string' ? args.session_name : null,
    permissionMode: String(args.permission_mode) as PermissionMode,
    model: typeof args.model === 'string' ? args.model : null,
    state: async () => (await op({ op: 'state' })) as Record<string, unknown>,
    history: async () => (await op({ op: 'history' })) as Record<string, unknown>[],
    commands: async () => (await op({ op: 'commands' })) as Record<string, unknown>[],
    clear: async () => {
      await op({ op: 'clear' });
    },
    compact: async (instructions?: string) =>
      (await op(instructions === undefined ? { op: 'compact' } : { op: 'compact', instructions })) as Record<
        string,
        unknown
      >,
    setPermissionMode: async (mode: PermissionMode) => {
      await op({ op: 'set_permission_mode', mode });
    },
    setSessionName: async (name: string) => {
      await op({ op: 'set_session_name', name });
    },
    runSubagent: async (prompt, options = {}) =>
      (await op({
        op: 'run_subagent',
        prompt,
        ...(options.agentType === undefined ? {} : { agent_type: options.agentType }),
        ...(options.isolation === undefined ? {} : { isolation: options.isolation }),
      })) as Record<string, unknown>,
    readSettings: async (scope: SettingsScope = 'localSettings') =>
      (await op({ op: 'read_settings', scope })) as Record<string, unknown>,
    updateSettings: async (patch: Record<string, unknown>, scope: SettingsScope = 'localSettings') =>
      String(((await op({ op: 'update_settings', scope, patch })) as { path: unknown }).path),
    switchModel: async (model: string) => {
      const answer = (await op({ op: 'switch_model', model })) as { model: string; context_window: number | null };
      return { model: answer.model, contextWindow: answer.context_window };
    },
    setAutoCompact: async (enabled: boolean, threshold?: number) =>
      (await op({
        op: 'set_auto_compact',
        enabled,
        ...(threshold === undefined ? {} : { threshold }),
      })) as { enabled: boolean; threshold: number },
  };
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

/** What `onMcpAuthorization` is called with: the remote MCP server that requires OAuth and the
 * authorization URL to open in a browser. */
export interface McpAuthorizationRequest {
  /** The server's name. */
  server: string;
  /** The authorization URL (with its PKCE challenge and state). */
  url: string;
}

/** Opens (or shows) the authorization URL of a remote MCP server that requires OAuth. Called on
 * the JavaScript thread while the servers connect in the background; the redirect comes back to
 * the session's listener on `127.0.0.1`. A throw (or a rejected Promise) is a `RobotaWarning`
 * (`ROBOTA_MCP_AUTHORIZATION_HANDLER_THREW`) and the server ends `needs_auth`. */
export type McpAuthorizationHandler = (request: McpAuthorizationRequest) => void | Promise<void>;

/** The extensions of one session or query, as passed to the native constructor. */
export interface HostExtensions {
  provider: ProviderLike;
  tools?: Tool[] | undefined;
  permissionHandler?: PermissionHandler | undefined;
  onMcpAuthorization?: McpAuthorizationHandler | undefined;
  hooks?: HooksOption | undefined;
  commandModules?: CommandModule[] | undefined;
  /** Only the in-process servers ({@link SdkMcpServer}) are read here. */
  mcpServers?: Record<string, unknown> | undefined;
  /** A session store of the host's own (answers `store` calls). */
  sessionStore?: SessionStore | undefined;
}

/** The in-process servers of `mcpServers`, by the name the session knows them under. */
function sdkServers(servers: Record<string, unknown> | undefined): [string, SdkMcpServer][] {
  return Object.entries(servers ?? {}).filter((entry): entry is [string, SdkMcpServer] => isSdkMcpServer(entry[1]));
}

/** How the dispatcher fits into its session: events already emitted reach listeners before a
 * permission handler is asked about the call they lead up to. */
export interface DispatchOrdering {
  /** Resolves once the `permission_request` event of `requestId` has been emitted (or event
   * delivery has stopped). */
  permissionRequestEmitted(requestId: string): Promise<void>;
}

/** A call from the engine: `request` is what the engine's host adapter asks (see the table in
 * `core/src/api/host.rs`); `index`/`module` route hook and command calls. */
interface HostRequest {
  call_id: number;
  kind:
    | 'tool'
    | 'mcp_tool'
    | 'mcp_authorization'
    | 'permission'
    | 'hook'
    | 'command'
    | 'provider'
    | 'store'
    | 'next'
    | 'cancel'
    | 'warning'
    | 'context_result';
  request?: unknown;
  ok?: unknown;
  error?: unknown;
  index?: number;
  module?: string;
  message?: string;
}

/** Tells the developer (a process warning, printed on stderr unless handled with
 * `process.on('warning')`). */
function warn(message: string, code: string, detail?: string): void {
  process.emitWarning(message, { type: 'RobotaWarning', code, ...(detail === undefined ? {} : { detail }) });
}

/** `TypeError: message` for anything thrown. */
function describeThrown(error: unknown): string {
  if (error instanceof Error) {
    return error.message.length > 0 ? `${error.name}: ${error.message}` : error.name;
  }
  return messageOf(error);
}

/** A tool answer for the engine, which decides what it means (text, a result object, data). */
function toolAnswer(value: unknown): unknown {
  return value === undefined ? null : value;
}

/** A permission answer in the engine's shape: `{type: 'allow_once' | ..., ...}`. */
export function normalizePermission(answer: PermissionAnswer): Record<string, unknown> {
  if (answer === true || answer === 'allow_once') return { type: 'allow_once' };
  if (answer === 'allow_session') return { type: 'allow_session' };
  if (answer === false || answer === 'deny') return { type: 'deny' };
  if (answer !== null && typeof answer === 'object' && typeof answer.type === 'string') {
    return { ...answer };
  }
  throw new RobotaError(
    'invalid_argument',
    `the permission handler returned ${JSON.stringify(answer)}; return true/false, 'allow_once', ` +
      `'allow_session', 'deny' or {type, ...}`,
  );
}

/** A command result in the engine's shape: `{message, success, ...}`. */
function normalizeCommand(result: string | CommandResult): Record<string, unknown> {
  if (typeof result === 'string') return { message: result, success: true };
  if (result === null || typeof result !== 'object' || typeof result.message !== 'string') {
    throw new RobotaError('invalid_argument', 'a command must return a string or {message, success}');
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
    throw new RobotaError(
      'invalid_argument',
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
export function createDispatcher(
  extensions: HostExtensions,
  ordering?: DispatchOrdering,
): (request: string) => Promise<string> {
  const tools = new Map<string, Tool>();
  for (const t of extensions.tools ?? []) tools.set(t.name, t);
  const mcpTools = new Map<string, Tool>();
  for (const [name, server] of sdkServers(extensions.mcpServers)) {
    for (const t of server.tools) mcpTools.set(`${name}\u0000${t.name}`, t);
  }
  const commands = new Map<string, Command>();
  for (const module of extensions.commandModules ?? []) {
    for (const command of module.commands) commands.set(`${module.name}\u0000${command.name}`, command);
  }
  const hooks = hookRegistrations(extensions.hooks);
  const inFlight = new Map<number, AbortController>();
  const streams = new Map<number, TurnStream>();
  const commandRuns = new Map<number, CommandRun>();
  const provider = extensions.provider instanceof CustomProvider ? extensions.provider : undefined;

  async function handle(request: HostRequest, signal: AbortSignal): Promise<unknown> {
    const args = (request.request ?? {}) as Record<string, unknown>;
    switch (request.kind) {
      case 'tool':
      case 'mcp_tool': {
        const t =
          request.kind === 'tool'
            ? tools.get(String(args.tool))
            : mcpTools.get(`${String(args.server)}\u0000${String(args.tool)}`);
        if (t === undefined) throw new Error(`no JavaScript tool named ${String(args.tool)}`);
        try {
          const result = await t.execute(args.input, {
            toolUseId: String(args.tool_use_id ?? ''),
            cwd: String(args.cwd ?? ''),
            signal,
          });
          return toolAnswer(result);
        } catch (error) {
          // The model sees the error class and message; the developer gets a warning too.
          const described = describeThrown(error);
          warn(`tool \`${t.name}\` threw ${described}`, 'ROBOTA_TOOL_THREW', error instanceof Error ? error.stack : undefined);
          throw new Error(described);
        }
      }
      case 'permission': {
        const handler = extensions.permissionHandler;
        if (handler === undefined) return { type: 'deny' };
        // Listeners first see what led up to the call (streamed text, the request itself).
        if (ordering !== undefined) await ordering.permissionRequestEmitted(String(args.request_id));
        try {
          return normalizePermission(await handler(args as PermissionRequest, { signal }));
        } catch (error) {
          const described = describeThrown(error);
          warn(`the permission handler threw ${described}; the call was denied`, 'ROBOTA_PERMISSION_HANDLER_THREW');
          throw new Error(`The permission handler failed (${described}); the call was denied.`);
        }
      }
      case 'mcp_authorization': {
        const open = extensions.onMcpAuthorization;
        if (open === undefined) throw new Error('this session has no onMcpAuthorization');
        const server = String(args.server);
        try {
          await open({ server, url: String(args.url) });
          return null;
        } catch (error) {
          const described = describeThrown(error);
          warn(
            `onMcpAuthorization threw ${described}; MCP server \`${server}\` needs authorization`,
            'ROBOTA_MCP_AUTHORIZATION_HANDLER_THREW',
            error instanceof Error ? error.stack : undefined,
          );
          throw new Error(`onMcpAuthorization threw ${described}`);
        }
      }
      case 'hook': {
        const hook = hooks[Number(request.index)];
        if (hook === undefined) throw new Error(`no JavaScript hook number ${String(request.index)}`);
        try {
          const answer = await hook.callback(args as HookInput);
          return answer === undefined ? null : answer;
        } catch (error) {
          // The engine names the hook, blocks when it guards a call, and reports it.
          throw new Error(`raised ${describeThrown(error)}`);
        }
      }
      case 'command': {
        const command = commands.get(`${String(request.module)}\u0000${String(args.command)}`);
        if (command === undefined) throw new Error(`no JavaScript command ${String(args.command)}`);
        // The command runs on its own; the dispatcher relays its context operations, then its
        // answer, one message per round trip (see `CommandRun`).
        const run = new CommandRun(command.name);
        const context = commandContext(args, run);
        void (async () => {
          try {
            run.finish(JSON.stringify({ ok: normalizeCommand(await command.execute(String(args.args), context)) }));
          } catch (error) {
            run.finish(JSON.stringify({ error: messageOf(error) }));
          }
        })();
        return run;
      }
      case 'store': {
        if (extensions.sessionStore === undefined) throw new Error('this session has no sessionStore');
        return await storeAnswer(extensions.sessionStore, args);
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

  /** The next message of a command run; the run is kept until its answer is handed over. */
  async function relay(callId: number, run: CommandRun): Promise<string> {
    const message = await run.next();
    if (run.over) commandRuns.delete(callId);
    else commandRuns.set(callId, run);
    return message;
  }

  return async (json: string): Promise<string> => {
    let request: HostRequest;
    try {
      request = JSON.parse(json) as HostRequest;
    } catch (error) {
      return JSON.stringify({ error: `invalid host request: ${messageOf(error)}` });
    }
    const callId = request.call_id;
    if (request.kind === 'warning') {
      warn(String(request.message), 'ROBOTA_HOOK_FAILED');
      return 'null';
    }
    if (request.kind === 'cancel') {
      inFlight.get(callId)?.abort();
      inFlight.delete(callId);
      const stream = streams.get(callId);
      streams.delete(callId);
      stream?.return({}).catch(() => undefined);
      commandRuns.get(callId)?.cancel();
      commandRuns.delete(callId);
      return 'null';
    }
    try {
      if (request.kind === 'context_result') {
        const run = commandRuns.get(callId);
        if (run === undefined) throw new Error(`no command call ${callId} is running`);
        run.deliver(request);
        return await relay(callId, run);
      }
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
      if (ok instanceof CommandRun) return await relay(callId, ok);
      return JSON.stringify({ ok: ok ?? null });
    } catch (error) {
      return JSON.stringify({ error: messageOf(error) });
    } finally {
      if (!streams.has(callId) && !commandRuns.has(callId)) inFlight.delete(callId);
    }
  };
}

/** Whether the host gave `onMcpAuthorization` (a function; anything else is refused). */
function mcpAuthorization(open: unknown): boolean {
  if (open === undefined || open === null) return false;
  if (typeof open !== 'function') {
    throw new RobotaError(
      'invalid_argument',
      `\`onMcpAuthorization\` must be a function ({server, url}) => void | Promise<void>, not ${describeValue(open)}`,
    );
  }
  return true;
}

/** The extension declarations of the native options document (functions stay in JS). Shape
 * problems throw an `invalid_argument` {@link RobotaError} naming the extension; the engine
 * checks the rest (tool names and schemas, hook events and policies) when the session is made. */
export function declareExtensions(extensions: HostExtensions): Record<string, unknown> {
  const invalid = (message: string): RobotaError => new RobotaError('invalid_argument', message);
  const list = <T>(value: T[] | undefined, what: string, shape: string): T[] => {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) throw invalid(`\`${what}\` must be a list of ${shape}, not ${describeValue(value)}`);
    return value;
  };
  const declared: Record<string, unknown> = {
    provider: extensions.provider.toConfig(),
    tools: list(extensions.tools, 'tools', 'tools (see tool())').map((t) => {
      if (t === null || typeof t !== 'object') throw invalid(`tools: ${String(t)} is not a tool (see tool())`);
      if (typeof t.execute !== 'function') throw invalid(`tool \`${String(t.name)}\`: \`execute\` must be a function`);
      const declaredTool: Record<string, unknown> = {
        name: t.name,
        description: t.description ?? '',
        input_schema: t.inputSchema,
        read_only: t.readOnly === true,
      };
      if (t.replacesBuiltin === true) declaredTool.replaces_builtin = true;
      if (t.mutatesFiles !== undefined) declaredTool.mutates_files = t.mutatesFiles;
      return declaredTool;
    }),
    mcp_in_process: sdkServers(extensions.mcpServers).map(([name, server]) => ({
      name,
      version: server.version,
      tools: server.tools.map((t) => {
        if (typeof t.execute !== 'function') throw invalid(`tool \`${String(t.name)}\`: \`execute\` must be a function`);
        const annotations: Record<string, unknown> = { ...(t.annotations ?? {}) };
        if (t.readOnly === true) annotations.readOnlyHint ??= true;
        return {
          name: t.name,
          description: t.description ?? '',
          input_schema: t.inputSchema,
          ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
        };
      }),
    })),
    permission_handler: typeof extensions.permissionHandler === 'function',
    ...(extensions.sessionStore === undefined || extensions.sessionStore === null
      ? {}
      : { session_store: storeName(checkStore(extensions.sessionStore, '`sessionStore`')) }),
    mcp_authorization: mcpAuthorization(extensions.onMcpAuthorization),
    hooks: hookRegistrations(extensions.hooks).map((h, index) => {
      if (h === null || typeof h !== 'object') throw invalid(`hooks[${index}] is not a hook registration`);
      const name = hookName(h, index);
      if (typeof h.callback !== 'function') {
        throw invalid(`hook \`${name}\` for ${String(h.event)}: \`callback\` must be a function`);
      }
      const hook: Record<string, unknown> = { event: h.event, matcher: h.matcher ?? '', name };
      if (h.timeoutMs !== undefined) {
        if (typeof h.timeoutMs !== 'number' || !Number.isFinite(h.timeoutMs) || h.timeoutMs <= 0) {
          throw invalid(`hook \`${name}\`: \`timeoutMs\` must be a positive number of milliseconds`);
        }
        hook.timeout_ms = Math.max(1, Math.round(h.timeoutMs));
      }
      if (h.onFailure !== undefined) hook.on_failure = h.onFailure;
      return hook;
    }),
    command_modules: list(extensions.commandModules, 'commandModules', '{name, commands}').map((m) => {
      if (m === null || typeof m !== 'object' || typeof m.name !== 'string') {
        throw invalid(`commandModules: ${describeValue(m)} is not a command module {name, commands}`);
      }
      if (!Array.isArray(m.commands)) {
        throw invalid(`command module \`${m.name}\`: \`commands\` must be a list of {name, description, execute}`);
      }
      const commands = m.commands.map((c) => {
        if (c === null || typeof c !== 'object') {
          throw invalid(`command module \`${m.name}\`: ${describeValue(c)} is not a command {name, description, execute}`);
        }
        if (typeof c.execute !== 'function') {
          throw invalid(`command \`${c.name}\`: \`execute\` must be a function`);
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
      });
      return { name: m.name, commands };
    }),
  };
  return declared;
}
