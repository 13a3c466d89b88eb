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
  error?: {
    /** The failure's kind, as in {@link ErrorInfo.kind}. */
    kind: string;
    /** What went wrong. */
    message: string;
    /** The provider whose call failed. */
    provider: string;
    /** Whether sending the prompt again may succeed. */
    retryable: boolean;
    /** The HTTP status of the failed call. */
    status?: number;
  };
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
  structured_output_errors?: Array<{
    /** Where in the answer (a JSON Pointer; empty for the whole answer). */
    path: string;
    /** What the schema expected there. */
    message: string;
  }>;
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
  | {
      /** No network at all. */
      mode: 'none';
    }
  | {
      /** Only the listed domains, through robota's proxy. */
      mode: 'allow_list';
      /** The domains allowed (`sandbox.network.allowedDomains`). */
      domains: string[];
    }
  | {
      /** The network is not restricted. */
      mode: 'all';
    };

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
  /** Bash calls fail, rather than run unsandboxed, when the sandbox is enabled but cannot work here. */
  fail_if_unavailable: boolean;
  /** A sandboxed Bash command that no rule decides runs without a prompt (`autoAllowBashIfSandboxed`). */
  auto_allow_bash: boolean;
  /** A Bash call may ask to run outside the sandbox (`dangerouslyDisableSandbox`), which needs permission. */
  allow_unsandboxed_commands: boolean;
  /** Commands that always run outside the sandbox (`sandbox.excludedCommands`). */
  excluded_commands: string[];
  /** Command hooks run sandboxed too. */
  hooks: boolean;
  /** Where sandboxed commands may write. */
  writable_roots: string[];
  /** Paths inside the writable roots that stay read-only (`.git/hooks`, `.claude`, settings, hook files). */
  protected_paths: string[];
  /** Paths sandboxed commands cannot read (`sandbox.filesystem.denyRead`). */
  read_denied: string[];
  /** `TMPDIR` of sandboxed commands. */
  temp_dir?: string;
  /** What network sandboxed commands reach. */
  network: SandboxNetwork;
  /** Sandboxed commands may listen on local ports (`sandbox.network.allowLocalBinding`). */
  allow_local_binding: boolean;
  /** Sandboxed commands may create Unix sockets (`sandbox.network.allowUnixSockets`). */
  allow_unix_sockets: boolean;
  /** Port of the allow-list proxy on 127.0.0.1, once started. */
  proxy_port?: number;
  /** Which protections actually hold with this backend on this machine. */
  guarantees: SandboxGuarantees;
}

/** How full the context window is (`session.getContextState()`, `context_update` events). */
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
  snapshot?: {
    /** The snapshot file. */
    path: string;
    /** Why it could not be read. */
    problem: string;
    /** Where the unreadable file was moved, so the next save does not overwrite it. */
    moved_to?: string;
  };
  /** Log lines that could not be read and were skipped (1-based line numbers). */
  skipped_lines?: Array<{
    /** The line number in the log. */
    line: number;
    /** The byte offset of the line's start. */
    offset: number;
    /** The entry's type, when it could be read. */
    kind?: string;
    /** Why it was skipped. */
    problem: string;
  }>;
  /** The log ended in the middle of a line, which was dropped. */
  torn_tail?: {
    /** The line number of the partial line. */
    line: number;
    /** Its byte offset. */
    offset: number;
    /** How many bytes were dropped. */
    bytes: number;
  };
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
  /** The skill. */
  skill_name: string;
  /** Where the skill came from. */
  source: 'project' | 'user' | 'host';
  /** Its `SKILL.md` (absent for a skill given as data). */
  path?: string;
  /** Who activated it: the user (`/skill-name`) or the model (the `Skill` tool). */
  invocation: 'user_slash' | 'model_tool';
  /** `inject`: its instructions joined the conversation; `fork`: it ran in a subagent. */
  mode: 'inject' | 'fork';
  /** Where it is: one `started` record, then one `completed` or `failed`. */
  status: 'started' | 'completed' | 'failed';
  /** The arguments it was given. */
  arguments: string;
  /** RFC 3339, UTC. */
  timestamp: string;
  /** What went wrong, for `failed`. */
  error?: string;
  /** Things worth knowing (a model the skill asks for that the session does not switch to, a
   * tool grant that did not parse, …). */
  notes?: string[];
}

/** An edit checkpoint: one prompt's saved files (`session.listEditCheckpoints()`). */
export interface EditCheckpoint {
  /** `turn-NNNN`. */
  id: string;
  /** Order within the session, from 1. */
  sequence: number;
  /** The prompt that started the turn (its start). */
  prompt: string;
  /** When the turn started (RFC 3339). */
  created_at: string;
  /** True once the turn's prompt ended. */
  finished: boolean;
  /** How many files the turn saved before changing them. */
  file_count: number;
  /** Bytes of saved content. */
  bytes: number;
}

/** A checkpoint's files and what restoring it undoes (`session.inspectEditCheckpoint(id)`). */
export interface EditCheckpointInspection {
  /** The checkpoint. */
  checkpoint: EditCheckpoint;
  /** The files it saved, in the order they were first changed. */
  files: {
    /** The path relative to the project directory. */
    display_path: string;
    /** The absolute path. */
    path: string;
    /** Whether it existed before the turn changed it. */
    existed: boolean;
    /** Whether the saved content is on disk (a file that existed but whose saved content is
     * missing cannot be rolled back). */
    snapshot_exists: boolean;
    /** What rolling this turn back does to it: write the saved content back, or delete the file
     * the turn created. */
    action: 'restore_preimage' | 'delete_created_file';
  }[];
  /** Checkpoints `restoreEditCheckpoint(id)` undoes, newest first. */
  restore_range: string[];
  /** Checkpoints `rollbackEditCheckpoint(id)` undoes, newest first. */
  rollback_range: string[];
}

/** What a restore or rollback did. */
export interface EditCheckpointRestore {
  /** The checkpoint restored to (or rolled back through). */
  checkpoint_id: string;
  /** The turns undone, newest first; their checkpoints are deleted. */
  rolled_back: string[];
  /** Files written back to their saved content (display paths). */
  restored: string[];
  /** Files deleted because the undone turns created them. */
  deleted: string[];
  /** Files that could not be put back, each with the reason. */
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
  /** What runs in it: a shell command, or a subagent. */
  kind: 'process' | 'agent';
  /** Who started it. */
  origin: {
    /** A tool call of the model, a command, or the host. */
    kind: 'tool' | 'command' | 'host';
    /** The tool or command that started it. */
    name?: string;
    /** The model's tool call that started it. */
    tool_use_id?: string;
  };
  /** The command line as given (for a subagent, its prompt). */
  command: string;
  /** A short description (Bash's `description`), when one was given. */
  description?: string;
  /** Where it runs. */
  cwd: string;
  /** The shell's pid, also its process group id. */
  pid: number | null;
  /** Where it stands. */
  status: BackgroundTaskStatus;
  /** The exit code, once the process exited. */
  exit_code: number | null;
  /** The signal that ended the process, if one did. */
  signal: number | null;
  /** Why it failed, was cancelled or was lost. */
  error: string | null;
  /** Set when a watchdog ended it. */
  timeout_reason: 'max_runtime' | 'idle' | null;
  /** What it is doing now, when its runner says (a subagent's current tool). */
  current_action: string | null;
  /** The file receiving its stdout (the full output). */
  stdout_path: string;
  /** The file receiving its stderr. */
  stderr_path: string;
  /** Bytes of output so far (both streams). */
  output_bytes: number;
  /** When it was started (milliseconds since the Unix epoch). */
  created_at_ms: number;
  /** When it ended (milliseconds since the Unix epoch); `null` while it runs. */
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
  /** True when it was aborted. */
  interrupted: boolean;
  /** Model calls it made. */
  rounds: number;
  /** Tools it ran, in order. */
  tools_executed: string[];
  /** How many times a `SubagentStop` hook made it go on instead of ending. */
  stop_hook_continuations: number;
  /** The hook that stopped it, when one did. */
  stopped_by_hook?: string;
  /** Its transcript (JSONL), when the session keeps a log. */
  transcript_path?: string;
  /** The worktree of an isolated run. */
  worktree?: {
    /** The worktree's directory. */
    path: string;
    /** Its branch, when it has one. */
    branch?: string;
    /** What became of it: removed (nothing changed in it) or kept (with the reason). */
    disposition: unknown;
    /** Further fields. */
    [key: string]: unknown;
  };
  /** The model error, when the run ended on one. */
  error?: string;
  /** Things worth knowing (a permission mode capped by the session's, unknown tools, …). */
  notes?: string[];
}

/** A page of a background task's output file; read on from `next_offset` until it equals
 * `total_bytes`. */
export interface BackgroundTaskLogPage {
  /** The task. */
  task_id: string;
  /** Which of its output files. */
  stream: 'stdout' | 'stderr';
  /** The output file. */
  path: string;
  /** The byte offset this page starts at. */
  offset: number;
  /** Where the next page starts. */
  next_offset: number;
  /** The file's size when this page was read. */
  total_bytes: number;
  /** The page's text (invalid UTF-8 replaced). */
  text: string;
}

/** A skill of the session (`session.listSkills()`). */
export interface SkillInfo {
  /** The skill's name (`/name` runs it; `plugin:name` for a plugin's skill). */
  name: string;
  /** What it does, as its frontmatter says (the model reads this to decide when to use it). */
  description: string;
  /** Where it was found. */
  source: {
    /** The project's skills folder (`.claude/skills`, `.agents/skills`), the user's
     * (`~/.claude/skills`, `~/.robota/skills`), an enabled plugin's, or the host's. */
    kind: 'project' | 'user' | 'plugin' | 'host';
    /** The skills folder it was found in. */
    root?: string;
    /** The plugin's name (the skill is then named `plugin:skill`). */
    plugin?: string;
  };
  /** Its directory (absent for a skill given as data). */
  dir?: string;
  /** Its `SKILL.md`. */
  file?: string;
  /** `allowed-tools`: tools it may use without asking while it runs. */
  allowed_tools?: string[];
  /** `model`: the model it asks for. */
  model?: string;
  /** `context`: `inline` joins the conversation; `fork` runs it in a subagent. */
  context: 'inline' | 'fork';
  /** `agent`: the agent definition a forked skill runs as. */
  agent?: string;
  /** `argument-hint`: shown after the command name. */
  argument_hint?: string;
  /** `disable-model-invocation`: only the user can run it. */
  disable_model_invocation: boolean;
  /** `user-invocable`: the user can run it as a slash command. */
  user_invocable: boolean;
  /** Frontmatter keys robota does not act on, as written. */
  extra?: Record<string, unknown>;
}

/** A plugin of the session's user and project (`session.listPlugins()`). */
export interface PluginInfo {
  /** `name@marketplace`, as in the settings' `enabledPlugins`. */
  id: string;
  /** The plugin's name. */
  name: string;
  /** The marketplace it comes from. */
  marketplace: string;
  /** Its manifest's version. */
  version?: string;
  /** Its manifest's description. */
  description?: string;
  /** Installed in the user's robota folder. */
  installed: boolean;
  /** Turned on by the settings. */
  enabled: boolean;
  /** The settings file that turned it on or off. */
  enabled_in?: string;
  /** Its folder, when installed. */
  path?: string;
  /** Loaded into this session (sessions load the plugins enabled when they are created). */
  loaded: boolean;
  /** `plugin:skill` names. */
  skills?: string[];
  /** `plugin:command` names. */
  commands?: string[];
  /** `plugin:agent` names. */
  agents?: string[];
  /** Its hook configuration files. */
  hook_files?: string[];
  /** The MCP servers it defines. */
  mcp_servers?: Array<{
    /** The server's name. */
    name: string;
    /** Its connection status in this session. */
    status: string;
    /** Its definition, as in `.mcp.json`. */
    config: unknown;
  }>;
}

/** `session.listPlugins()`: plugins, known marketplaces and problems found. */
export interface PluginListing {
  /** Installed or enabled plugins. */
  plugins: PluginInfo[];
  /** The known marketplaces: added with `plugin marketplace add`, or named in settings. */
  marketplaces: Array<{
    /** The marketplace's name. */
    name: string;
    /** Where it is fetched from. */
    source: {
      /** A local directory, a git URL or a GitHub repository. */
      source: 'directory' | 'git' | 'github';
      /** For `directory`: the path. */
      path?: string;
      /** For `git`: the URL. */
      url?: string;
      /** For `github`: `owner/repo`. */
      repo?: string;
      /** The branch, tag or commit. */
      ref?: string;
    };
    /** The folder holding its `.claude-plugin/marketplace.json` (absent: a git marketplace named
     * in settings and not cloned yet). */
    location?: string;
    /** `added` (with `plugin marketplace add`) or the settings file naming it. */
    known_from: string;
    /** The plugins it offers (empty when it cannot be read now). */
    plugins: string[];
  }>;
  /** Problems found while reading plugins and marketplaces. */
  warnings: Array<{
    /** The file concerned, when there is one. */
    file?: string;
    /** What is wrong. */
    message: string;
  }>;
}
/** An MCP server's status. */
export type McpServerStatus =
  | {
      /** Connecting, or connected. */
      state: 'pending' | 'connected';
    }
  | {
      /** Could not connect, turned off, or waiting for the user to authorize (OAuth). */
      state: 'failed' | 'disabled' | 'needs_auth';
      /** Why. */
      reason: string;
    };

/** An MCP server of the session (`session.listMcpServers()`). */
export interface McpServerInfo {
  /** The server's name (the `<server>` of its tools' names). */
  name: string;
  /** Where its definition came from. */
  origin:
    | {
        /** The host's own list (the session's `mcpServers` option). */
        kind: 'host';
      }
    | {
        /** The project's `.mcp.json`. */
        kind: 'project';
        /** The file. */
        file: string;
      }
    | {
        /** A settings layer's `mcpServers`. */
        kind: 'settings';
        /** The settings file. */
        file?: string | null;
      }
    | {
        /** A plugin. */
        kind: 'plugin';
        /** The plugin's id. */
        plugin: string;
      };
  /** How robota talks to it (`sdk`: a server defined in code, run in-process). */
  transport: 'stdio' | 'http' | 'sse' | 'sdk';
  /** Its connection status. */
  status: McpServerStatus;
  /** Session tool names: `mcp__<server>__<tool>`. */
  tools: string[];
  /** The prompts it offers. */
  prompts: string[];
}

/** An MCP server definition, as in `.mcp.json`'s `mcpServers`. */
export type McpServerConfig =
  | {
      /** A child process speaking MCP over stdin/stdout (the default). */
      type?: 'stdio';
      /** The program. */
      command: string;
      /** Its arguments. */
      args?: string[];
      /** Environment variables added to the child's. */
      env?: Record<string, string>;
      /** Its working directory. */
      cwd?: string;
    }
  | {
      /** A streamable HTTP endpoint. */
      type: 'http';
      /** The endpoint. */
      url: string;
      /** Headers sent with every request (`Authorization`, …). */
      headers?: Record<string, string>;
    }
  | {
      /** The legacy HTTP+SSE transport (protocol 2024-11-05). */
      type: 'sse';
      /** The SSE endpoint. */
      url: string;
      /** Headers sent with every request. */
      headers?: Record<string, string>;
    };

/** One history entry, as `getFullHistory()` returns them: a chat message (`category: 'chat'`,
 * `type` the role) or an event entry (`category: 'event'`: `tool-start`, `tool-end`,
 * `tool-summary`, `usage-summary`, `error`, `skill-activation`, …). */
export interface HistoryEntry {
  /** A chat message or an event entry. */
  category: 'chat' | 'event';
  /** The entry's id. */
  id: string;
  /** When it was recorded (RFC 3339). */
  timestamp: string;
  /** The role of a chat message, or the kind of event entry. */
  type: string;
  /** The message or the event's data, as the engine serialized it. */
  data: unknown;
}

/** A prompt's usage (spec `IUsageSnapshot`), also the `usage-summary` history entry. */
export interface UsageSnapshot {
  /** `exact`: the provider counted the tokens. */
  kind: 'exact';
  /** `turn`: the figures cover this prompt. */
  scope: 'turn';
  /** Prompt and completion tokens together. */
  total_tokens: number;
  /** Tokens sent. */
  prompt_tokens: number;
  /** Tokens written. */
  completion_tokens: number;
  /** Tokens the conversation occupies after the prompt. */
  context_used_tokens: number;
  /** The model's context window (0 when unknown). */
  context_max_tokens: number;
  /** `context_used_tokens` as a percentage of the window. */
  context_used_percentage: number;
  /** Whether the session's cost figure covers every token. */
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
    /** A chunk of the answer (chunks may be joined when a listener falls behind). */
    | {
        /** The event's kind. */
        type: 'text_delta';
        /** The text. */
        text: string;
      }
    /** A chunk of the model's reasoning. */
    | {
        /** The event's kind. */
        type: 'thinking';
        /** The text. */
        text: string;
      }
    /** A tool the provider runs itself was called (Anthropic `web_search`, `web_fetch`,
     * `bash_code_execution`, … enabled by a profile's `options.serverTools`), with its whole
     * input (`{query}` for a search, `{url}` for a fetch). Nothing runs locally and no permission
     * is asked; `server_tool_result` follows. */
    | {
        /** The event's kind. */
        type: 'server_tool_use';
        /** The provider's id of the call (`srvtoolu_…`). */
        id: string;
        /** The server tool (`web_search`, `web_fetch`, `bash_code_execution`, …). */
        name: string;
        /** The call's input. */
        input: unknown;
      }
    /** A server tool's result arrived (`result_type`: `web_search_tool_result`, …); the content
     * stays with the assistant message, whose cited text blocks carry `citations`. */
    | {
        /** The event's kind. */
        type: 'server_tool_result';
        /** The `server_tool_use` id it answers. */
        tool_use_id: string;
        /** The result block's type. */
        result_type: string;
        /** True when the tool failed. */
        is_error: boolean;
      }
    /** A tool began. */
    | {
        /** The event's kind. */
        type: 'tool_start';
        /** The call. */
        tool: ToolState;
      }
    /** A tool ended. */
    | {
        /** The event's kind. */
        type: 'tool_end';
        /** The call, with how it ended. */
        tool: ToolState;
      }
    /** A tool call waits for the permission handler (emitted before the handler is called). */
    | {
        /** The event's kind. */
        type: 'permission_request';
        /** The request (unique within the session). */
        request_id: string;
        /** The tool. */
        tool_name: string;
        /** Its arguments. */
        input: unknown;
        /** The provider's id of the call. */
        tool_use_id: string;
        /** Why approval is needed. */
        reason: string;
        /** The mode at the time. */
        permission_mode: PermissionMode;
      }
    /** How full the context window is, after every model call. */
    | {
        /** The event's kind. */
        type: 'context_update';
        /** The state. */
        state: ContextState;
      }
    /** The history was compacted. */
    | {
        /** The event's kind. */
        type: 'compaction';
        /** `manual` (`/compact`, `compact()`) or `auto` (the window filled up). */
        trigger: 'manual' | 'auto';
        /** Tokens before. */
        tokens_before: number;
        /** Estimated tokens after. */
        tokens_after: number;
      }
    /** The model answered. */
    | ({
        /** The event's kind. */
        type: 'complete';
      /** The run's outcome (response, usage, stop reason, …). */
      outcome: RunOutcome;
      } & ExecutionReport)
    /** The model refused (never re-asked): `outcome.refusal` says what the provider said. */
    | {
        /** The event's kind. */
        type: 'refused';
      /** The run's outcome (response, usage, stop reason, …). */
      outcome: RunOutcome;
      }
    /** The answer was cut off at the output token limit; `outcome.response` is what was written. */
    | {
        /** The event's kind. */
        type: 'truncated';
      /** The run's outcome (response, usage, stop reason, …). */
      outcome: RunOutcome;
      }
    /** A model call failed (auth, network, retries exhausted, …) or the prompt could not run (a
     * hook rejected it, the budget is spent, an `@file` cannot be attached). Also sent, after
     * the prompt's own end, when a compaction the model asked for fails. */
    | {
        /** The event's kind. */
        type: 'error';
        /** What went wrong and how to fix it (the same as `error.message`). */
        message: string;
        /** The failure: kind, HTTP status, whether a retry may help, the wait asked for. */
        error: ErrorInfo;
        /** The run's outcome when the run had started (usage, text streamed before the failure). */
        outcome?: RunOutcome;
      }
    /** The prompt was aborted; the outcome holds what streamed until then. */
    | ({
        /** The event's kind. */
        type: 'interrupted';
        /** The partial outcome (absent when the abort came before the run started). */
        outcome?: RunOutcome;
      } & ExecutionReport)
    /** A skill was activated, or ended. */
    | {
        /** The event's kind. */
        type: 'skill_activation';
        /** The activation. */
        data: SkillActivation;
      }
    /** Progress of work running beside the conversation: for subagents, `data` has
     * `task_kind: 'subagent'` and a `started`, `tool_start`, `tool_end` or `finished` step. */
    | {
        /** The event's kind. */
        type: 'background_task_event';
        /** The payload, as the engine serialized it. */
        data: unknown;
      }
    /** Resuming found damage it repaired, data it could not keep, or an unfinished prompt. Sent
     * once, when the session starts; `getRecoveryReport()` returns the same report. */
    | {
        /** The event's kind. */
        type: 'session_recovered';
        /** The notice for the user, one line per finding. */
        message: string;
        /** What was found and done. */
        report: RecoveryReport;
      }
    /** The agent's task list changed (a `TodoWrite` call succeeded): the whole new list. */
    | {
        /** The event's kind. */
        type: 'todo_update';
        /** The tasks, in order. */
        todos: TodoItem[];
      }
    /** An MCP server's status changed after the session started (failed, reconnected, enabled,
     * disabled); `listMcpServers()` gives every server's status at any time. */
    | {
        /** The event's kind. */
        type: 'mcp_server_status';
        /** The server's name. */
        server: string;
        /** Its new status. */
        status: McpServerStatus;
      }
    /** Any other session event (permission answers, hook messages, warnings, …), unchanged. */
    | {
        /** The event's kind. */
        type: 'session';
        /** The session event, as the engine serialized it. */
        event: {
          /** The session event's own kind. */
          type: string;
          /** Its fields. */
          [key: string]: unknown;
        };
      }
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
export type RobotaEventOf<T extends RobotaEventType> = Extract<RobotaEvent, Record<'type', T>>;

/** Listener arguments per event name, for the typed `EventEmitter`. `event` receives all. */
/** The listener arguments of each event name of an {@link InteractiveSession} (its typed
 * `EventEmitter` map): one event of that type, and under `event` every event. */
export type SessionEventMap = { [K in RobotaEventType]: [RobotaEventOf<K>] } & {
  /** Every event, whatever its type. */
  event: [RobotaEvent];
};

/** A content block of a message. */
export type ContentBlock =
  /** `citations`: the sources cited text names, as the provider sent them (Anthropic web search
   * `web_search_result_location`, …); absent for uncited text. */
  | {
      /** Text. */
      type: 'text';
      /** The text. */
      text: string;
      /** The sources the text cites, as the provider sent them. */
      citations?: unknown[];
      /** Further fields. */
      [key: string]: unknown;
    }
  /** A tool call of the model. */
  | {
      /** A tool call. */
      type: 'tool_use';
      /** The provider's id of the call. */
      id: string;
      /** The tool. */
      name: string;
      /** Its arguments. */
      input: unknown;
      /** Further fields. */
      [key: string]: unknown;
    }
  /** A tool's result, sent back to the model. */
  | {
      /** A tool result. */
      type: 'tool_result';
      /** The call it answers. */
      tool_use_id: string;
      /** What the tool returned. */
      content: string;
      /** True when the tool failed (or was denied). */
      is_error?: boolean;
      /** Further fields. */
      [key: string]: unknown;
    }
  /** The model's reasoning, kept as the provider sent it (signature included). */
  | {
      /** Reasoning. */
      type: 'thinking';
      /** Its fields. */
      [key: string]: unknown;
    };

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
  source: {
    /** `builtin`, `project`, `user`, `host` or `plugin`. */
    kind: string;
    /** The plugin, for a plugin's command. */
    plugin?: string;
  };
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
  effects?: Array<{
    /** The action (`session_renamed`, …). */
    type: string;
    /** Its fields. */
    [key: string]: unknown;
  }>;
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
  /** The model answered. */
  | ({
      /** How it ended. */
      status: 'complete';
      /** The run's outcome (response, usage, stop reason, …). */
      outcome: RunOutcome;
    } & ExecutionReport)
  /** The model refused: `outcome.refusal` says what the provider said. */
  | {
      /** How it ended. */
      status: 'refused';
      /** The run's outcome. */
      outcome: RunOutcome;
    }
  /** The answer was cut off at the output token limit. */
  | {
      /** How it ended. */
      status: 'truncated';
      /** The run's outcome; `outcome.response` is what was written. */
      outcome: RunOutcome;
    }
  /** Aborted while it ran. */
  | ({
      /** How it ended. */
      status: 'interrupted';
      /** The partial outcome (absent when the abort came before the run started). */
      outcome?: RunOutcome;
    } & ExecutionReport)
  /** A model call failed (401, unreachable host, retries exhausted, …) or the prompt could not run. */
  | {
      /** How it ended. */
      status: 'error';
      /** What went wrong and how to fix it. */
      message: string;
      /** The failure: kind, HTTP status, whether a retry may help. */
      error: ErrorInfo;
      /** The run's outcome when the run had started. */
      outcome?: RunOutcome;
    }
  /** Dropped from the queue (abort, cancelQueue, AbortSignal, shutdown) before it ran. */
  | {
      /** How it ended. */
      status: 'cancelled';
    };

/** The permission decision of {@link evaluatePermission}. */
export interface PermissionDecision {
  /** The verdict. */
  decision: 'allow' | 'ask' | 'deny';
  /** The matched rule, its source, the reason. */
  [key: string]: unknown;
}
