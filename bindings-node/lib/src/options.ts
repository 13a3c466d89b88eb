/** Session options: the camelCase options of the facade and their snake_case engine form. */

import type { SessionStore } from './stores.js';
import { RobotaError } from './errors.js';
import { isSdkMcpServer } from './extensions.js';
import type {
  CommandModule,
  HooksOption,
  McpAuthorizationHandler,
  PermissionHandler,
  SdkMcpServer,
  Tool,
} from './extensions.js';
import type { ProviderLike } from './providers.js';
import { toOutputFormat, type JsonSchema, type OutputFormat } from './structured.js';
import type { McpServerConfig, PermissionMode } from './types.js';

/** A skill the host adds: a skill folder (or a folder of skill folders), or a skill given as
 * data (`content` is what a `SKILL.md` would hold: frontmatter, then instructions). */
export type SkillRegistration =
  | {
      /** The skill folder, or a folder of skill folders. */
      dir: string;
    }
  | {
      /** The skill's name. */
      name: string;
      /** What a `SKILL.md` would hold. */
      content: string;
    };

/** A custom slash command you add: a folder searched like `.claude/commands` (`**\/*.md`), or
 * one given as data (`content` is what a command file holds: optional frontmatter, then the
 * prompt with `$ARGUMENTS` / `$1`…). */
export type CommandRegistration =
  | {
      /** The folder of command files. */
      dir: string;
    }
  | {
      /** The command's name (what follows the `/`). */
      name: string;
      /** What a command file would hold. */
      content: string;
    };

/** Where a session is saved. */
export type Persistence =
  | 'none'
  | 'project'
  /** Files in directories of your choosing. */
  | {
      /** Where session snapshots are written. */
      sessionsDir: string;
      /** Where session logs (JSONL) are written. */
      logsDir: string;
    }
  /** One SQLite database for many sessions (a relative path is in `cwd`). */
  | {
      /** The database file. */
      sqlite: string;
    }
  /** A PostgreSQL database shared by many workers: the connection string as `url`, or the
   * environment variable holding it as `urlEnv`; sessions are kept apart by `project`
   * (default: `cwd`). */
  | {
      /** The database. */
      postgres: {
        /** The connection string. */
        url?: string;
        /** The environment variable holding the connection string. */
        urlEnv?: string;
        /** The key that keeps this project's sessions apart (default: `cwd`). */
        project?: string;
      };
    };

/** Options shared by sessions and queries. */
export interface CommonOptions {
  /** The model. */
  provider: ProviderLike;
  /** The working directory (default: `process.cwd()`). */
  cwd?: string;
  /** The permission mode (default: the settings' `permissions.defaultMode`, else `default`):
   * `default` asks for anything no rule allows, `acceptEdits` also allows file edits in the
   * project, `plan` is read-only, `dontAsk` denies what is not pre-approved, and
   * `bypassPermissions` allows everything (the OS sandbox is then on for Bash). */
  permissionMode?: PermissionMode;
  /** Replaces the system prompt assembled from the project. */
  systemPrompt?: string;
  /** Appended to the system prompt. */
  appendSystemPrompt?: string;
  /** Most model/tool rounds per prompt (`0`: no cap). */
  maxTurns?: number;
  /** The session id (a fresh UUID when absent); must be a safe file name. */
  sessionId?: string;
  /** Build the system prompt from AGENTS.md/CLAUDE.md etc. (default true). */
  loadProjectContext?: boolean;
  /** The home directory for user settings (none read without it). */
  home?: string;
  /** Settings from code (a settings.json object), above every file. */
  settings?: Record<string, unknown>;
  /** Load settings exactly like the CLI (real HOME and environment). */
  settingsFromEnvironment?: boolean;
  /** Variables for `$ENV:NAME` references in settings. */
  env?: Record<string, string>;
  /** `false`: no built-in file/shell/web tools (only yours and the command tools). */
  builtinTools?: boolean;
  /** Where the session is saved (default: nowhere). */
  persistence?: Persistence;
  /** Resume this saved session (needs `persistence`). */
  resumeSessionId?: string;
  /** With `resumeSessionId`: continue in a copy with a new id. */
  forkSession?: boolean;
  /** Refuse further prompts once the session has spent this many USD. */
  maxBudgetUsd?: number;
  /** A second model of the same provider, answering while the main model is overloaded (HTTP
   * 529 or 503 after the provider's retries); each switch is a `session` event
   * `{type: 'warning', source: 'fallback_model', message}`. The main model itself, or a
   * provider that cannot switch models (scripted, replay, custom), is refused when the session
   * opens, naming `fallbackModel`. */
  fallbackModel?: string;
  /** Automatic compaction (default true). */
  autoCompact?: boolean;
  /** The model's context window in tokens, when the provider does not know it. */
  contextWindow?: number;
  /** `true`/`false`: turn the OS sandbox for Bash on or off, above the settings'
   * `sandbox.enabled`. Absent: the settings decide; without a setting the sandbox is on in
   * `bypassPermissions` sessions and off in the other modes. */
  sandbox?: boolean;
  /** Skills you add, ahead of the project's (`.claude/skills`, `.agents/skills`) and the
   * user's (`~/.claude/skills`, `~/.robota/skills`). */
  skills?: SkillRegistration[];
  /** `false` keeps no edit checkpoints. By default every prompt is a checkpoint under
   * `<cwd>/.robota/checkpoints/` that `restoreEditCheckpoint` can rewind files to. */
  editCheckpoints?: boolean;
  /** MCP servers to connect, in `.mcp.json`'s `mcpServers` shape (`{name: {command, args, env}}`
   * or `{name: {type: 'http', url, headers}}`); their tools reach the model as
   * `mcp__<name>__<tool>`. See `listMcpServers()`. A value made by `createSdkMcpServer()` is a
   * server whose tools are your JavaScript functions, run in-process. The servers connect in
   * the background: the constructor returns at once, each prompt waits for servers still
   * starting (up to `mcpStartupTimeoutMs`), and `waitForMcpServers()` waits explicitly. */
  mcpServers?: Record<string, McpServerConfig | SdkMcpServer>;
  /** How long an MCP server may take to start, in ms (default 30 000). */
  mcpStartupTimeoutMs?: number;
  /** How long one MCP call may take, in ms (default 600 000). */
  mcpCallTimeoutMs?: number;
  /** Opens the authorization URL of a remote MCP server that requires OAuth
   * (`({server, url}) => void | Promise<void>`, e.g. with a browser). The redirect comes back
   * to the session on `127.0.0.1`; tokens are kept in `~/.robota/mcp-oauth` for later sessions.
   * Without it such a server is `needs_auth`; `executeCommand('mcp', 'auth <server>')` asks
   * again. A throw is a `RobotaWarning` and the server ends `needs_auth`. */
  onMcpAuthorization?: McpAuthorizationHandler;
  /** Custom slash commands you add, ahead of the project's `.claude/commands` and the user's
   * `~/.claude/commands`. Run one with `executeCommand(name, args)`; `listCommands()` lists
   * them with their source. */
  customCommands?: CommandRegistration[];
  /** Your tools (see `tool()`). */
  tools?: Tool[];
  /** Answers permission prompts; without one, calls needing approval are denied. */
  permissionHandler?: PermissionHandler;
  /** In-process hook callbacks: `[{event, callback, matcher?, timeoutMs?, name?, onFailure?}]`
   * or `{PreToolUse: callback | [callbacks | {matcher, hooks: [callbacks]}], …}`. A callback
   * answers like a Claude Code hook (`{decision: 'block', reason}`, `{hookSpecificOutput}`,
   * nothing to carry on). A `PreToolUse`/`PermissionRequest` hook that throws, times out or
   * answers something unrecognised blocks the call (unless `onFailure: 'allow'`); every hook
   * failure is also a process warning. */
  hooks?: HooksOption;
  /** Export OpenTelemetry traces and metrics over OTLP (spans per prompt, model call, tool
   * call, hook and compaction; GenAI token/duration metrics). `{}` takes everything from the
   * `OTEL_EXPORTER_OTLP_*` variables. Absent: nothing is traced. */
  telemetry?: TelemetryOptions;
  /** Your W3C `traceparent`: the session's prompt spans join your trace under that span. */
  traceparent?: string;
  /** The W3C `tracestate` that goes with `traceparent`. */
  tracestate?: string;
  /** Every prompt's answer must be one JSON value matching this schema:
   * `{ type: 'json_schema', schema: {...} }` (or just the schema). Results and `complete`
   * events carry it as `structured_output`; an answer that does not match is sent back to the
   * model with the validation errors. See `query.structured()` for a typed result. */
  outputFormat?: OutputFormat | JsonSchema;
  /** Follow-ups an answer that does not match `outputFormat` gets before the prompt fails
   * (default 5): a query then rejects with a `structured_output` `RobotaError`, a session's
   * prompt ends `error` with `error.kind === 'structured_output'`. */
  maxStructuredOutputRetries?: number;
}

/** Where and how a session's traces and metrics are exported (OTLP). */
export interface TelemetryOptions {
  /** The collector's base URL (`http://collector:4318` for HTTP, `:4317` for gRPC). */
  endpoint?: string;
  /** `http` (HTTP/protobuf, the default) or `grpc`. */
  protocol?: 'http' | 'grpc';
  /** Headers sent with every export (an API key, say). */
  headers?: Record<string, string>;
  /** The `service.name` resource attribute (default `OTEL_SERVICE_NAME`, else `robota`). */
  serviceName?: string;
  /** How long one export, and the flush at shutdown, may take (default 5000 ms). */
  timeoutMs?: number;
}

/** Options of an `InteractiveSession`. */
export interface SessionOptions extends CommonOptions {
  /** Your command modules, added to the built-in commands. */
  commandModules?: CommandModule[];
  /** `false`: no built-in commands (help, clear, compact, rename, …). */
  builtinCommands?: boolean;
  /** Events buffered per session before `text_delta`s are coalesced (default 256). */
  eventBuffer?: number;
  /** Save the session in your own storage (see {@link SessionStore}); such a session is opened
   * with `await InteractiveSession.open(options)`. Not together with `persistence`. */
  sessionStore?: SessionStore;
}

/** Options of `createQuery`. */
export interface QueryOptions extends CommonOptions {
  /** Permission rules allowed without asking (`"Read"`, `"Bash(git *)"`). */
  allowedTools?: string[];
  /** Permission rules always denied. */
  disallowedTools?: string[];
  /** Receives the answer text as it streams (pieces arrive in order, before the query resolves;
   * a busy JavaScript thread gets fewer, larger pieces). */
  onTextDelta?: (text: string) => void;
}

const SESSION_KEYS: Record<string, string> = {
  cwd: 'cwd',
  permissionMode: 'permission_mode',
  systemPrompt: 'system_prompt',
  appendSystemPrompt: 'append_system_prompt',
  maxTurns: 'max_turns',
  sessionId: 'session_id',
  loadProjectContext: 'load_project_context',
  home: 'home',
  settings: 'settings',
  settingsFromEnvironment: 'settings_from_environment',
  env: 'env',
  builtinTools: 'builtin_tools',
  resumeSessionId: 'resume_session_id',
  forkSession: 'fork_session',
  maxBudgetUsd: 'max_budget_usd',
  fallbackModel: 'fallback_model',
  autoCompact: 'auto_compact',
  contextWindow: 'context_window',
  sandbox: 'sandbox',
  skills: 'skills',
  editCheckpoints: 'edit_checkpoints',
  mcpServers: 'mcp_servers',
  mcpStartupTimeoutMs: 'mcp_startup_timeout_ms',
  mcpCallTimeoutMs: 'mcp_call_timeout_ms',
  customCommands: 'commands',
  telemetry: 'telemetry',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
  outputFormat: 'output_format',
  maxStructuredOutputRetries: 'max_structured_output_retries',
};

const EXTENSION_KEYS = new Set([
  'provider',
  'tools',
  'permissionHandler',
  'hooks',
  'commandModules',
  'builtinCommands',
  'eventBuffer',
  'allowedTools',
  'disallowedTools',
  'onTextDelta',
  'onMcpAuthorization',
  'persistence',
  'sessionStore',
]);

/** The engine's `SessionConfig` JSON for `options`; unknown keys are an error. */
export function sessionConfig(options: CommonOptions): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || EXTENSION_KEYS.has(key)) continue;
    const name = SESSION_KEYS[key];
    if (name === undefined) {
      throw new RobotaError(
        'invalid_argument',
        `unknown option \`${key}\` (expected one of ${[...Object.keys(SESSION_KEYS), ...EXTENSION_KEYS].join(', ')})`,
      );
    }
    config[name] = value;
  }
  if (options.mcpServers !== undefined && options.mcpServers !== null && typeof options.mcpServers === 'object') {
    // In-process servers travel with the extensions (their tools are JavaScript functions).
    config.mcp_servers = Object.fromEntries(
      Object.entries(options.mcpServers).filter(([, server]) => !isSdkMcpServer(server)),
    );
  }
  if (options.outputFormat !== undefined && options.outputFormat !== null) {
    config.output_format = toOutputFormat(options.outputFormat);
  }
  const persistence = options.persistence;
  if (persistence !== undefined) {
    config.persistence =
      typeof persistence === 'string'
        ? persistence
        : 'sqlite' in persistence
          ? { sqlite: { path: persistence.sqlite } }
          : 'postgres' in persistence
            ? {
                postgres: {
                  url: persistence.postgres.url,
                  url_env: persistence.postgres.urlEnv,
                  project: persistence.postgres.project,
                },
              }
            : { store: { sessions_dir: persistence.sessionsDir, logs_dir: persistence.logsDir } };
  }
  return config;
}
