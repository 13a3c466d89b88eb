/**
 * The data types that cross the boundary: events, messages, results. Field names are the
 * engine's wire names (snake_case), identical in every language binding and in the conformance
 * scenarios, so an event logged from Node reads exactly like one logged from Rust or Python.
 */

/** Token counts. */
export interface Usage {
  /** Prompt tokens. */
  input_tokens: number;
  /** Generated tokens. */
  output_tokens: number;
  /** Tokens written to the prompt cache. */
  cache_creation_input_tokens?: number;
  /** Tokens read from the prompt cache. */
  cache_read_input_tokens?: number;
  /** Provider-specific extras. */
  [key: string]: unknown;
}

/** Why a run ended. */
export type RunStopReason =
  | 'completed'
  | 'refused'
  | 'truncated'
  | 'interrupted'
  | 'max_turns'
  | 'unknown_tools'
  | 'context_limit'
  | 'error'
  /** The answer never matched the `outputFormat` schema (`structured_output_errors`). */
  | 'max_structured_output_retries';

/**
 * How a prompt ended, in the vocabulary every binding (Rust, C, Python, Node) and the CLI share:
 * `complete` (the model answered), `refused` (the model refused), `truncated` (the answer was
 * cut off at the output token limit), `error` (a model call failed, or the prompt could not
 * run), `interrupted` (aborted while it ran), `cancelled` (dropped before it ran).
 */
export type OutcomeStatus =
  | 'complete'
  | 'refused'
  | 'truncated'
  | 'error'
  | 'interrupted'
  | 'cancelled';

/** What the provider said when the model refused. */
export interface Refusal {
  /** What the model wrote as it refused (empty when nothing). */
  text: string;
  /** The provider's category (Anthropic `stop_details.category`: `cyber`, `bio`, …). */
  category?: string;
  /** The provider's explanation (Anthropic `stop_details.explanation`). */
  explanation?: string;
}

/** A failure as every binding reports it. */
export interface ErrorInfo {
  /**
   * `auth`, `rate_limit`, `overloaded`, `context_length`, `network`, `invalid_request` or
   * `provider` for a failed model call; `prompt_rejected`, `budget_exceeded`, `busy`,
   * `shut_down`, `session_locked`, `invalid_argument` or `session` for a prompt that could not
   * run.
   */
  kind: string;
  /** What went wrong and, where known, how to fix it. */
  message: string;
  /** The provider whose call failed. */
  provider?: string;
  /** The HTTP status of the failed call. */
  status?: number;
  /** Whether sending the same prompt again may succeed. */
  retryable: boolean;
  /** The wait the provider asked for before retrying, in milliseconds. */
  retry_after_ms?: number;
}

/** What one prompt produced (the engine's `RunOutcome`). */
export interface RunOutcome {
  /** The final answer text. */
  response: string;
  /** True when the run was aborted. */
  interrupted: boolean;
  /** Model calls made (every request, a forced summary included). */
  rounds: number;
  /** Tokens used. */
  usage: Usage;
  /** Why the run ended. */
  stop_reason: RunStopReason;
  /** The model error that ended the run, if one did. */
  error?: { kind: string; message: string; provider: string; retryable: boolean; status?: number };
  /** What the provider said, when `stop_reason` is `refused`. */
  refusal?: Refusal;
  /** Tools that ran successfully, in order. */
  tools_executed: string[];
  /** This run's id. */
  execution_id: string;
  /** With an `outputFormat`: the answer validated against its schema. */
  structured_output?: unknown;
  /** When the answer never matched the schema (stop reason `max_structured_output_retries`):
   * the last validation errors (`path` is a JSON Pointer into the answer). */
  structured_output_errors?: Array<{ path: string; message: string }>;
}

/** One tool call as a UI shows it. */
export interface ToolState {
  /** The provider's id of the call. */
  tool_use_id: string;
  /** The tool. */
  name: string;
  /** The most telling argument (a path, a command, a pattern). */
  first_arg: string;
  /** True until the tool ends. */
  is_running: boolean;
  /** How it ended (absent while running). */
  result?: 'success' | 'error' | 'denied';
  /** For Edit: the changed file. */
  diff_file?: string;
  /** For Edit: unified diff lines. */
  diff_lines?: string[];
  /** The tool's text result, cut to 4 KiB. */
  tool_result_data?: string;
}

/** How full the context window is. */
/** Which protections hold for sandboxed commands with the active backend on this machine. */
export interface SandboxGuarantees {
  /** Writes outside the writable roots fail (symlinks, `/proc`, child processes included). */
  writes_confined: boolean;
  /** `.git/hooks`, `.claude`, settings and hook files inside the roots stay read-only. */
  protected_paths_read_only: boolean;
  /** `sandbox.filesystem.denyRead` paths cannot be read. */
  read_deny_enforced: boolean;
  /** With network off, no TCP, UDP or raw connection leaves the sandbox. */
  network_blocked: boolean;
  /** With `allowedDomains`, only the proxy (so only those domains) is reachable. */
  network_allow_list_enforced: boolean;
  /** Unix sockets cannot be created (unless the settings allow them). */
  unix_sockets_blocked: boolean;
  /** Processes outside the sandbox cannot be signalled. */
  signals_confined: boolean;
  /** The command sees only its own processes (a PID namespace). */
  process_isolation: boolean;
}

/** Network access of sandboxed commands. */
export type SandboxNetwork =
  | { mode: 'none' }
  | { mode: 'allow_list'; domains: string[] }
  | { mode: 'all' };

/** The OS sandbox Bash commands run in (`session.sandboxStatus()`). */
export interface SandboxStatus {
  /** Switched on (settings, session option, or the bypassPermissions default). */
  enabled: boolean;
  /** Enabled *and* working here: Bash commands run inside it. */
  active: boolean;
  /** `landlock`, `bwrap` or `seatbelt` when one works. */
  backend?: 'landlock' | 'bwrap' | 'seatbelt';
  /** `auto`, `landlock` or `bwrap`. */
  requested_backend: string;
  /** Why the sandbox is off or unavailable. */
  reason?: string;
  /** The operating system (`linux`, `macos`, …). */
  platform: string;
  /** The kernel's Landlock ABI (Linux; 0 when unsupported). */
  landlock_abi?: number;
  fail_if_unavailable: boolean;
  auto_allow_bash: boolean;
  allow_unsandboxed_commands: boolean;
  excluded_commands: string[];
  /** Command hooks run sandboxed too. */
  hooks: boolean;
  writable_roots: string[];
  protected_paths: string[];
  read_denied: string[];
  /** `TMPDIR` of sandboxed commands. */
  temp_dir?: string;
  network: SandboxNetwork;
  allow_local_binding: boolean;
  allow_unix_sockets: boolean;
  /** Port of the allow-list proxy on 127.0.0.1, once started. */
  proxy_port?: number;
  guarantees: SandboxGuarantees;
}

export interface ContextState {
  /** Tokens in use. */
  used_tokens: number;
  /** The window. */
  max_tokens: number;
  /** used / max. */
  ratio: number;
  /** True when counted by estimate, not reported by the provider. */
  estimated: boolean;
  /** Further fields. */
  [key: string]: unknown;
}

/** The permission modes (`default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk`). */
export type PermissionMode = 'default' | 'acceptEdits' | 'plan' | 'bypassPermissions' | 'dontAsk';

/** A prompt whose turn started and never finished (the process running it was killed). */
export interface UnfinishedTurn {
  /** The prompt, as the model was to see it: send it again to redo the turn. */
  prompt: string;
  /** When the turn started (RFC 3339). */
  started_at?: string;
  /** Chat messages the turn had produced, left out of the history. */
  messages_dropped: number;
  /** Tools that had already run in it (their effects remain). */
  tools_run?: string[];
}

/**
 * What opening a saved session found damaged, repaired or unfinished
 * (`session.getRecoveryReport()`, and the `session_recovered` event).
 */
export interface RecoveryReport {
  /** The session that was opened. */
  session_id: string;
  /** The session it was forked from (the report is then about that one). */
  forked_from?: string;
  /** The session log. */
  log_path?: string;
  /** The snapshot could not be read; the session was rebuilt from the log. */
  snapshot?: { path: string; problem: string; moved_to?: string };
  /** Log lines that could not be read and were skipped (1-based line numbers). */
  skipped_lines?: Array<{ line: number; offset: number; kind?: string; problem: string }>;
  /** The log ended in the middle of a line, which was dropped. */
  torn_tail?: { line: number; offset: number; bytes: number };
  /** A copy of the damaged log as it was found. */
  log_copy?: string;
  /** The last prompt did not finish. */
  unfinished_turn?: UnfinishedTurn;
  /** What was lost with unreadable lines. */
  lost?: string[];
  /** Everything else met on the way. */
  details?: string[];
}

/**
 * A configuration problem the session worked around when it opened (`session.getWarnings()`):
 * a settings entry it skipped or made ask, an agent definition file it could not use, a tool an
 * agent lists that the session does not have.
 */
export interface ConfigWarning {
  /** The file concerned (a settings file, an agent definition), when there is one. */
  file?: string;
  /** The JSON path of the entry (`permissions.allow[3]`; `tools` for an agent's tool list),
   * empty when it is about the whole file. */
  json_path: string;
  /** What kind of problem: `permission_rule`, `unknown_key`, `hook_config`, `agent_definition`, … */
  kind: string;
  /** A sentence for the user: the problem and what robota did about it. */
  message: string;
}

/** One task of the agent's todo list (`todo_update` events). */
export interface TodoItem {
  /** What to do, in the imperative ("Run the tests"). */
  content: string;
  /** Where it stands. */
  status: 'pending' | 'in_progress' | 'completed';
  /** The task in the present continuous, shown while it runs ("Running the tests"). */
  active_form: string;
}

/** Fields every event carries. */
export interface EventEnvelope {
  /** The session that produced it. */
  session_id: string;
  /** Strictly increasing within the session, from 1. */
  seq: number;
}

/** One skill activation (`skill_activation` events): started, then completed or failed. */
export interface SkillActivation {
  skill_name: string;
  /** Where the skill came from. */
  source: 'project' | 'user' | 'host';
  /** Its `SKILL.md` (absent for a skill given as data). */
  path?: string;
  invocation: 'user_slash' | 'model_tool';
  /** `inject`: its instructions joined the conversation; `fork`: it ran in a subagent. */
  mode: 'inject' | 'fork';
  status: 'started' | 'completed' | 'failed';
  arguments: string;
  /** RFC 3339, UTC. */
  timestamp: string;
  error?: string;
  notes?: string[];
}

/** An edit checkpoint: one prompt's saved files (`session.listEditCheckpoints()`). */
export interface EditCheckpoint {
  id: string;
  sequence: number;
  prompt: string;
  created_at: string;
  finished: boolean;
  file_count: number;
  bytes: number;
}

/** A checkpoint's files and what restoring it undoes (`session.inspectEditCheckpoint(id)`). */
export interface EditCheckpointInspection {
  checkpoint: EditCheckpoint;
  files: {
    display_path: string;
    path: string;
    existed: boolean;
    snapshot_exists: boolean;
    action: 'restore_preimage' | 'delete_created_file';
  }[];
  /** Checkpoints `restoreEditCheckpoint(id)` undoes, newest first. */
  restore_range: string[];
  /** Checkpoints `rollbackEditCheckpoint(id)` undoes, newest first. */
  rollback_range: string[];
}

/** What a restore or rollback did. */
export interface EditCheckpointRestore {
  checkpoint_id: string;
  rolled_back: string[];
  restored: string[];
  deleted: string[];
  problems?: string[];
}

/** Where a background task stands; `lost`: it was running when an earlier run of a resumed
 * session ended. */
export type BackgroundTaskStatus =
  | 'queued'
  | 'running'
  | 'waiting_permission'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'lost';

/** A background task (Bash with `run_in_background`), as `session.listBackgroundTasks()`
 * returns it. */
export interface BackgroundTask {
  /** `bash_1`, `bash_2`, … (unique within the session, also across resumes). */
  id: string;
  kind: 'process' | 'agent';
  /** Who started it. */
  origin: { kind: 'tool' | 'command' | 'host'; name?: string; tool_use_id?: string };
  command: string;
  description?: string;
  cwd: string;
  /** The shell's pid, also its process group id. */
  pid: number | null;
  status: BackgroundTaskStatus;
  exit_code: number | null;
  signal: number | null;
  /** Why it failed, was cancelled or was lost. */
  error: string | null;
  /** Set when a watchdog ended it. */
  timeout_reason: 'max_runtime' | 'idle' | null;
  /** What it is doing now, when its runner says (a subagent's current tool). */
  current_action: string | null;
  stdout_path: string;
  stderr_path: string;
  output_bytes: number;
  created_at_ms: number;
  ended_at_ms: number | null;
}

/** What a subagent run produced (`session.runSubagent()`). */
export interface SubagentReport {
  /** The run's id (`agent_id` in hook inputs). */
  agent_id: string;
  /** The agent definition used. */
  agent_type: string;
  /** The model it ran on. */
  model: string;
  /** Its final answer. */
  response: string;
  /** Why the child run ended (`end_turn`, `max_turns`, `error`, …). */
  stop_reason: string;
  interrupted: boolean;
  rounds: number;
  /** Tools it ran, in order. */
  tools_executed: string[];
  stop_hook_continuations: number;
  stopped_by_hook?: string;
  /** Its transcript (JSONL), when the session keeps a log. */
  transcript_path?: string;
  /** The worktree of an isolated run. */
  worktree?: { path: string; branch?: string; disposition: unknown; [key: string]: unknown };
  /** The model error, when the run ended on one. */
  error?: string;
  /** Things worth knowing (a permission mode capped by the session's, unknown tools, …). */
  notes?: string[];
}

/** A page of a background task's output file; read on from `next_offset` until it equals
 * `total_bytes`. */
export interface BackgroundTaskLogPage {
  task_id: string;
  stream: 'stdout' | 'stderr';
  path: string;
  offset: number;
  next_offset: number;
  total_bytes: number;
  text: string;
}

/** A skill of the session (`session.listSkills()`). */
export interface SkillInfo {
  name: string;
  description: string;
  source: { kind: 'project' | 'user' | 'plugin' | 'host'; root?: string; plugin?: string };
  dir?: string;
  file?: string;
  allowed_tools?: string[];
  model?: string;
  context: 'inline' | 'fork';
  agent?: string;
  argument_hint?: string;
  disable_model_invocation: boolean;
  user_invocable: boolean;
  /** Frontmatter keys robota does not act on, as written. */
  extra?: Record<string, unknown>;
}

/** A plugin of the session's user and project (`session.listPlugins()`). */
export interface PluginInfo {
  /** `name@marketplace`, as in the settings' `enabledPlugins`. */
  id: string;
  name: string;
  marketplace: string;
  version?: string;
  description?: string;
  installed: boolean;
  enabled: boolean;
  /** The settings file that turned it on or off. */
  enabled_in?: string;
  path?: string;
  /** Loaded into this session (sessions load the plugins enabled when they are created). */
  loaded: boolean;
  /** `plugin:skill` names. */
  skills?: string[];
  commands?: string[];
  agents?: string[];
  hook_files?: string[];
  mcp_servers?: Array<{ name: string; status: string; config: unknown }>;
}

/** `session.listPlugins()`: plugins, known marketplaces and problems found. */
export interface PluginListing {
  plugins: PluginInfo[];
  marketplaces: Array<{
    name: string;
    source: { source: 'directory' | 'git' | 'github'; path?: string; url?: string; repo?: string; ref?: string };
    location?: string;
    known_from: string;
    plugins: string[];
  }>;
  warnings: Array<{ file?: string; message: string }>;
}
/** An MCP server's status. */
export type McpServerStatus =
  | { state: 'pending' | 'connected' }
  | { state: 'failed' | 'disabled' | 'needs_auth'; reason: string };

/** An MCP server of the session (`session.listMcpServers()`). */
export interface McpServerInfo {
  name: string;
  origin:
    | { kind: 'host' }
    | { kind: 'project'; file: string }
    | { kind: 'settings'; file?: string | null }
    | { kind: 'plugin'; plugin: string };
  transport: 'stdio' | 'http' | 'sse' | 'sdk';
  status: McpServerStatus;
  /** Session tool names: `mcp__<server>__<tool>`. */
  tools: string[];
  prompts: string[];
}

/** An MCP server definition, as in `.mcp.json`'s `mcpServers`. */
export type McpServerConfig =
  | { type?: 'stdio'; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { type: 'http'; url: string; headers?: Record<string, string> }
  /** The legacy HTTP+SSE transport (protocol 2024-11-05). */
  | { type: 'sse'; url: string; headers?: Record<string, string> };

/** One history entry, as `getFullHistory()` returns them: a chat message (`category: 'chat'`,
 * `type` the role) or an event entry (`category: 'event'`: `tool-start`, `tool-end`,
 * `tool-summary`, `usage-summary`, `error`, `skill-activation`, …). */
export interface HistoryEntry {
  category: 'chat' | 'event';
  id: string;
  timestamp: string;
  type: string;
  data: unknown;
}

/** A prompt's usage (spec `IUsageSnapshot`), also the `usage-summary` history entry. */
export interface UsageSnapshot {
  kind: 'exact';
  scope: 'turn';
  total_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  context_used_tokens: number;
  context_max_tokens: number;
  context_used_percentage: number;
  cost_status: string;
}

/** What a prompt did (spec `IExecutionResult`): carried by `complete` and `interrupted`. */
export interface ExecutionReport {
  /** The answer (for `interrupted`, what streamed until the abort). */
  response: string;
  /** The history entries this prompt added, tool-start / tool-end / summaries included. */
  history: HistoryEntry[];
  /** The prompt's tool calls as they ended. */
  tool_summaries: ToolState[];
  /** How full the context window is after the prompt. */
  context_state: ContextState;
  /** The prompt's usage, when the provider reported any. */
  usage?: UsageSnapshot;
}

/** Every event an interactive session emits: a discriminated union on `type`. */
export type RobotaEvent = EventEnvelope &
  (
    | { type: 'text_delta'; text: string }
    | { type: 'thinking'; text: string }
    /** A tool the provider runs itself was called (Anthropic `web_search`, `web_fetch`,
     * `bash_code_execution`, … enabled by a profile's `options.serverTools`), with its whole
     * input (`{query}` for a search, `{url}` for a fetch). Nothing runs locally and no permission
     * is asked; `server_tool_result` follows. */
    | { type: 'server_tool_use'; id: string; name: string; input: unknown }
    /** A server tool's result arrived (`result_type`: `web_search_tool_result`, …); the content
     * stays with the assistant message, whose cited text blocks carry `citations`. */
    | { type: 'server_tool_result'; tool_use_id: string; result_type: string; is_error: boolean }
    | { type: 'tool_start'; tool: ToolState }
    | { type: 'tool_end'; tool: ToolState }
    | {
        type: 'permission_request';
        request_id: string;
        tool_name: string;
        input: unknown;
        tool_use_id: string;
        reason: string;
        permission_mode: PermissionMode;
      }
    | { type: 'context_update'; state: ContextState }
    | { type: 'compaction'; trigger: 'manual' | 'auto'; tokens_before: number; tokens_after: number }
    /** The model answered. */
    | ({ type: 'complete'; outcome: RunOutcome } & ExecutionReport)
    /** The model refused (never re-asked): `outcome.refusal` says what the provider said. */
    | { type: 'refused'; outcome: RunOutcome }
    /** The answer was cut off at the output token limit; `outcome.response` is what was written. */
    | { type: 'truncated'; outcome: RunOutcome }
    /** A model call failed (auth, network, retries exhausted, …) or the prompt could not run. */
    | { type: 'error'; message: string; error: ErrorInfo; outcome?: RunOutcome }
    | ({ type: 'interrupted'; outcome?: RunOutcome } & ExecutionReport)
    | { type: 'skill_activation'; data: SkillActivation }
    | { type: 'background_task_event'; data: unknown }
    /** Resuming found damage it repaired, data it could not keep, or an unfinished prompt. */
    | { type: 'session_recovered'; message: string; report: RecoveryReport }
    /** The agent's task list changed (a `TodoWrite` call succeeded): the whole new list. */
    | { type: 'todo_update'; todos: TodoItem[] }
    /** An MCP server's status changed after the session started (failed, reconnected, enabled,
     * disabled); `listMcpServers()` gives every server's status at any time. */
    | { type: 'mcp_server_status'; server: string; status: McpServerStatus }
    | { type: 'session'; event: { type: string; [key: string]: unknown } }
  );

/** The `type` of every event. */
export type RobotaEventType = RobotaEvent['type'];

/** Every event `type`, at run time (an `on()` for any other name throws). */
export const EVENT_TYPES = [
  'text_delta',
  'thinking',
  'server_tool_use',
  'server_tool_result',
  'tool_start',
  'tool_end',
  'permission_request',
  'context_update',
  'compaction',
  'complete',
  'refused',
  'truncated',
  'error',
  'interrupted',
  'skill_activation',
  'background_task_event',
  'session_recovered',
  'todo_update',
  'mcp_server_status',
  'session',
] as const satisfies readonly RobotaEventType[];

/** Fails to compile when an event type is missing from {@link EVENT_TYPES}. */
type MissingEventTypes = Exclude<RobotaEventType, (typeof EVENT_TYPES)[number]>;
const everyEventTypeListed: [MissingEventTypes] extends [never] ? true : MissingEventTypes = true;
void everyEventTypeListed;

/** The event of one `type`. */
export type RobotaEventOf<T extends RobotaEventType> = Extract<RobotaEvent, { type: T }>;

/** Listener arguments per event name, for the typed `EventEmitter`. `event` receives all. */
export type SessionEventMap = { [K in RobotaEventType]: [RobotaEventOf<K>] } & {
  event: [RobotaEvent];
};

/** A content block of a message. */
export type ContentBlock =
  /** `citations`: the sources cited text names, as the provider sent them (Anthropic web search
   * `web_search_result_location`, …); absent for uncited text. */
  | { type: 'text'; text: string; citations?: unknown[]; [key: string]: unknown }
  | { type: 'tool_use'; id: string; name: string; input: unknown; [key: string]: unknown }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content: string;
      is_error?: boolean;
      [key: string]: unknown;
    }
  | { type: 'thinking'; [key: string]: unknown };

/** A chat message. */
export interface Message {
  /** Who said it. */
  role: 'user' | 'assistant' | 'tool' | 'system';
  /** Its blocks. */
  content: ContentBlock[];
  /** `interrupted` when an abort cut it off. */
  state?: string;
  /** Ids, timestamps, usage, metadata. */
  [key: string]: unknown;
}

/** A command users can run. */
export interface CommandEntry {
  /** Slash-free name to invoke it by (`plugin:command` for a plugin's command). */
  name: string;
  /** The module that contributed it. */
  module: string;
  /** Where it came from: `{kind: 'builtin' | 'project' | 'user' | 'host'}` or
   * `{kind: 'plugin', plugin}`. A custom command's source is the folder it was found in. */
  source: { kind: string; plugin?: string };
  /** Its metadata. */
  descriptor: {
    /** Its name within its module. */
    name: string;
    /** One line (a custom command's ends with its origin, e.g. `(project:git)`). */
    description: string;
    /** Argument grammar shown after the name. */
    argument_hint?: string;
    /** Other names. */
    aliases?: string[];
    [key: string]: unknown;
  };
}

/** What a command produced. */
export interface CommandResult {
  /** Text for the user. */
  message: string;
  /** False when it failed; `message` says how to fix it. */
  success: boolean;
  /** Structured payload for hosts. */
  data?: unknown;
  /** Host actions to apply, in order (e.g. `{type: 'session_renamed', name}`). */
  effects?: Array<{ type: string; [key: string]: unknown }>;
  /** A follow-up question. */
  interaction?: unknown;
}

/** What a query produced (the engine's `QueryResult`). */
export interface QueryResult {
  /** The final answer text. */
  response: string;
  /** The session's chat messages after the query. */
  messages: Message[];
  /** Tokens used by this query. */
  usage: Usage;
  /** Cost in USD (`null` when the model has no known price). */
  cost_usd: number | null;
  /** Model calls made (every request, a forced summary included). */
  num_turns: number;
  /** Wall time. */
  duration_ms: number;
  /** The session id. */
  session_id: string;
  /** Why it ended. */
  stop_reason: RunStopReason;
  /** How it ended (a failed model call rejects the promise instead). */
  status: Exclude<OutcomeStatus, 'error' | 'cancelled'>;
  /** What the provider said, when `status` is `refused`. */
  refusal?: Refusal;
  /** With an `outputFormat`: the answer validated against its schema (a `structured_output`
   * `RobotaError` rejects the promise when it never matched). */
  structured_output?: unknown;
}

/** How a prompt ended, as `submit()` resolves. */
export type PromptResult =
  | ({ status: 'complete'; outcome: RunOutcome } & ExecutionReport)
  /** The model refused: `outcome.refusal` says what the provider said. */
  | { status: 'refused'; outcome: RunOutcome }
  /** The answer was cut off at the output token limit. */
  | { status: 'truncated'; outcome: RunOutcome }
  | ({ status: 'interrupted'; outcome?: RunOutcome } & ExecutionReport)
  /** A model call failed (401, unreachable host, retries exhausted, …) or the prompt could not run. */
  | { status: 'error'; message: string; error: ErrorInfo; outcome?: RunOutcome }
  /** Dropped from the queue (abort, cancelQueue, AbortSignal, shutdown) before it ran. */
  | { status: 'cancelled' };

/** The permission decision of {@link evaluatePermission}. */
export interface PermissionDecision {
  /** The verdict. */
  decision: 'allow' | 'ask' | 'deny';
  /** The matched rule, its source, the reason. */
  [key: string]: unknown;
}
