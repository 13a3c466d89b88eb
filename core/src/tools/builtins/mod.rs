//! The built-in tools — Bash (with BashOutput and KillShell for its background tasks), Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep, WebFetch,
//! WebSearch and TodoWrite — with Claude Code's names and input fields (TypeScript Robota
//! camelCase names accepted as aliases). MultiEdit and NotebookEdit are editing tools like Edit
//! (`Edit(...)` rules, acceptEdits, protected paths); TodoWrite changes no file and needs no
//! approval.
//!
//! All tools of one session share a [`Builtins`] handle built from a [`BuiltinToolsConfig`]: the
//! workspace roots beyond the cwd, the session directory for spilled outputs and background-task
//! logs, the output budget, the shell, the web settings, the background-task registry and the
//! registry of the process groups the tools start ([`ProcessGroups`]). The
//! per-call [`ToolContext`](crate::tools::ToolContext) stays small: its `cwd` is the session's
//! working directory, the first workspace root, against which relative paths resolve.
//!
//! ```no_run
//! use robota::tools::builtins::{BuiltinToolsConfig, Builtins};
//! use robota::tools::ToolRegistry;
//!
//! let builtins = Builtins::new(BuiltinToolsConfig::default());
//! let mut registry = ToolRegistry::new();
//! builtins.register(&mut registry);
//! assert_eq!(registry.len(), robota::tools::builtins::BUILTIN_TOOL_NAMES.len());
//! ```

/// Declares a built-in tool whose work is blocking file-system code: the struct, its constructor
/// and the [`Tool`] impl (validate the input against the tool's `SCHEMA`, then run `$run` on the
/// blocking pool). The file tools differ only in these parameters.
macro_rules! blocking_file_tool {
    (
        $(#[$meta:meta])*
        $tool:ident, name = $name:literal, read_only = $read_only:literal, run = $run:ident
    ) => {
        $(#[$meta])*
        pub struct $tool {
            shared: Arc<Shared>,
        }

        impl $tool {
            #[doc = concat!("A ", $name, " tool confined to the workspace roots of `builtins`.")]
            pub fn new(builtins: &Builtins) -> Self {
                $tool {
                    shared: builtins.shared.clone(),
                }
            }
        }

        #[async_trait]
        impl Tool for $tool {
            fn name(&self) -> &str {
                $name
            }

            fn description(&self) -> &str {
                DESCRIPTION
            }

            fn input_schema(&self) -> Value {
                SCHEMA.json_schema()
            }

            fn is_read_only(&self) -> bool {
                $read_only
            }

            fn mutated_paths(&self, input: &Value) -> Vec<String> {
                crate::tools::builtins::mutated_path_field($name)
                    .and_then(|field| input.get(field))
                    .and_then(Value::as_str)
                    .map(|path| vec![path.to_string()])
                    .unwrap_or_default()
            }

            async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
                let input = match SCHEMA.validate(input) {
                    Ok(map) => Input(map),
                    Err(message) => return ToolOutput::error(message),
                };
                let shared = self.shared.clone();
                blocking(move || $run(&shared, &input, &context)).await
            }
        }
    };
}

pub mod background;
mod background_process;
mod bash;
mod bash_output;
mod budget;
mod diff;
mod edit;
pub(crate) mod fsutil;
mod glob;
mod grep;
mod multi_edit;
mod notebook_edit;
mod process;
mod read;
mod schema;
mod todo_write;
mod web_fetch;
mod web_search;
mod workspace;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use background::{
    BackgroundLimits, BackgroundOutput, BackgroundTaskEvent, BackgroundTaskInfo,
    BackgroundTaskListener, BackgroundTaskManager, BackgroundTasks, ExternalTask,
    ExternalTaskRequest, LogStream, TaskKind, TaskLogPage, TaskOrigin, TaskStatus, TimeoutReason,
};
pub use background_process::{BackgroundProcessTool, BACKGROUND_PROCESS_TOOL_NAME};
pub use bash::{BashTool, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
pub use bash_output::{BashOutputTool, KillShellTool};
pub use budget::OutputLimit;

/// `text` cut to `max_bytes` (head and tail around an exact "omitted" marker) without a spill
/// file, for tools of a session that has no built-in tools (and so no spill directory).
pub fn cut_output(text: &str, max_bytes: usize) -> String {
    budget::cut_bytes(text.as_bytes(), max_bytes).render(None)
}
pub use edit::EditTool;
pub use glob::{GlobTool, DEFAULT_GLOB_LIMIT};
pub use grep::GrepTool;
pub use multi_edit::MultiEditTool;
pub use notebook_edit::NotebookEditTool;
pub use read::{ReadTool, DEFAULT_READ_LIMIT, MAX_LINE_CHARS};
pub use todo_write::{todos_from_response, TodoItem, TodoStatus, TodoWriteTool};
pub use web_fetch::{WebFetchConfig, WebFetchTool};
pub use web_search::{
    BraveSearch, SearchError, SearchProvider, SearchQuery, SearchResult, WebSearchTool,
};
pub use write::WriteTool;

/// The input field naming the file a built-in file tool changes (`None` for the others).
pub(crate) fn mutated_path_field(tool: &str) -> Option<&'static str> {
    match tool {
        "Write" | "Edit" | "MultiEdit" => Some("file_path"),
        "NotebookEdit" => Some("notebook_path"),
        _ => None,
    }
}

/// The names of the built-in tools, in the order [`Builtins::tools`] returns them.
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    "Bash",
    "BashOutput",
    "KillShell",
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "Glob",
    "Grep",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
];

use crate::process::ProcessGroups;
use crate::sandbox::Sandbox;
use crate::tools::{Tool, ToolOutput, ToolRegistry};
use workspace::{SessionDir, Workspace};

/// Default of [`BuiltinToolsConfig::max_spill_bytes`]: 64 MiB.
pub const DEFAULT_MAX_SPILL_BYTES: u64 = 64 * 1024 * 1024;

/// How the built-in tools of one session are set up.
#[derive(Clone)]
pub struct BuiltinToolsConfig {
    /// Directories the tools may use besides the session cwd (Claude Code's
    /// `additionalDirectories`). Relative entries resolve against the cwd of each call.
    pub additional_roots: Vec<PathBuf>,
    /// Where spilled outputs and background-task logs go (`spill/`, `tasks/`; a session saved
    /// in a store sets `.robota/sessions/<id>/`). `None`: a private directory under the system
    /// temp dir, created on first use and removed when the tools are dropped. The tools may
    /// read (not write) files in it.
    pub session_dir: Option<PathBuf>,
    /// Most bytes the spilled outputs of the session may take together; when a new spill goes
    /// over, the oldest are removed (and the tool result says so). Default 64 MiB.
    pub max_spill_bytes: u64,
    /// The output budget.
    pub output_limit: OutputLimit,
    /// The shell for Bash. `None`: `$ROBOTA_SHELL`, else `$SHELL` when it is bash, zsh, sh, dash
    /// or ksh, else `/bin/bash`, else `/bin/sh`.
    pub shell: Option<PathBuf>,
    /// How long a stopped command's process group gets between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// WebFetch's network settings.
    pub web_fetch: WebFetchConfig,
    /// The WebSearch backend. `None`: Brave Search when `BRAVE_API_KEY` is set (read when the
    /// [`Builtins`] are created), else WebSearch answers that no provider is configured.
    pub search_provider: Option<Arc<dyn SearchProvider>>,
    /// Extra environment for Bash commands and background tasks (settings.json `env`), added to
    /// the inherited environment; an entry here overrides an inherited variable of the same name.
    pub env: BTreeMap<String, String>,
    /// The OS sandbox Bash commands and background tasks run in (a session sets its own);
    /// `None`: unsandboxed.
    pub sandbox: Option<Arc<Sandbox>>,
    /// The registry the process groups of Bash calls and background tasks join (a session
    /// passes its own, so that its shutdown stops them); `None`: one of the tools' own.
    pub processes: Option<ProcessGroups>,
    /// Limits and watchdogs of background tasks (how many at once, timeouts, output kept in
    /// memory).
    pub background: BackgroundLimits,
    /// Also offer the `BackgroundProcess` tool ([`BackgroundProcessTool`]; off by default, as
    /// Claude Code has no such tool and `Bash` with `run_in_background` does the same).
    pub background_process_tool: bool,
    /// A host that keeps the text of files itself (an editor with unsaved buffers): Read,
    /// Write, Edit and MultiEdit read and write text files through it, after their own path
    /// checks. `None`: the disk.
    pub host_files: Option<Arc<dyn HostFileAccess>>,
}

/// Text files as a host keeps them: an editor (an ACP client, say) whose open buffers may hold
/// unsaved changes the model should see, and whose writes should go through the editor so its
/// buffers stay in step. Called from the tools' blocking threads, never from async code; each
/// call gets the absolute path the tool resolved and checked (inside the workspace).
pub trait HostFileAccess: Send + Sync {
    /// The file's text as the host has it; `Ok(None)` leaves this file to the disk (the host
    /// does not keep it, or it does not exist there). An error is the call's error.
    fn read_text(&self, path: &Path) -> Result<Option<String>, String>;
    /// Writes the file's whole text through the host; `Ok(false)` leaves the write to the disk.
    /// An error is the call's error, and nothing was written.
    fn write_text(&self, path: &Path, content: &str) -> Result<bool, String>;
}

impl Default for BuiltinToolsConfig {
    fn default() -> Self {
        BuiltinToolsConfig {
            additional_roots: Vec::new(),
            session_dir: None,
            max_spill_bytes: DEFAULT_MAX_SPILL_BYTES,
            output_limit: OutputLimit::default(),
            shell: None,
            kill_grace: Duration::from_secs(2),
            web_fetch: WebFetchConfig::default(),
            search_provider: None,
            env: BTreeMap::new(),
            sandbox: None,
            processes: None,
            background: BackgroundLimits::default(),
            background_process_tool: false,
            host_files: None,
        }
    }
}

impl std::fmt::Debug for BuiltinToolsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinToolsConfig")
            .field("additional_roots", &self.additional_roots)
            .field("session_dir", &self.session_dir)
            .field("max_spill_bytes", &self.max_spill_bytes)
            .field("output_limit", &self.output_limit)
            .field("shell", &self.shell)
            .field("kill_grace", &self.kill_grace)
            .field("web_fetch", &self.web_fetch)
            .field(
                "search_provider",
                &self.search_provider.as_ref().map(|p| p.name().to_string()),
            )
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("sandbox", &self.sandbox.is_some())
            .field("processes", &self.processes)
            .field("background", &self.background)
            .field("background_process_tool", &self.background_process_tool)
            .field("host_files", &self.host_files.is_some())
            .finish()
    }
}

/// State shared by the tools of one session.
pub(crate) struct Shared {
    workspace: Workspace,
    limit: OutputLimit,
    shell: PathBuf,
    kill_grace: Duration,
    background: BackgroundTasks,
    web_fetch: WebFetchConfig,
    search: Option<Arc<dyn SearchProvider>>,
    http: OnceLock<Result<reqwest::Client, String>>,
    /// Settings `env`, plus what SessionStart/Setup hooks exported through `CLAUDE_ENV_FILE`.
    env: std::sync::RwLock<BTreeMap<String, String>>,
    sandbox: Option<Arc<Sandbox>>,
    processes: ProcessGroups,
    /// TodoWrite's task list.
    todos: Arc<std::sync::Mutex<Vec<TodoItem>>>,
    /// Where text files are read and written when a host keeps them.
    host_files: Option<Arc<dyn HostFileAccess>>,
}

impl Shared {
    /// The file's text as the host keeps it (`Ok(None)`: read the disk).
    fn host_text(&self, path: &Path) -> Result<Option<String>, String> {
        match &self.host_files {
            Some(host) => host.read_text(path),
            None => Ok(None),
        }
    }

    /// The file's bytes: the host's text when it keeps the file, else the disk's.
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self.host_text(path) {
            Ok(Some(text)) => Ok(text.into_bytes()),
            Ok(None) => std::fs::read(path),
            Err(message) => Err(std::io::Error::other(message)),
        }
    }

    /// Writes a whole text file (through the host when it takes the write, else atomically on
    /// disk); true when the file existed before.
    fn write_text_file(&self, path: &Path, content: &str) -> std::io::Result<bool> {
        if let Some(host) = &self.host_files {
            let existed = path.exists();
            match host.write_text(path, content) {
                Ok(true) => return Ok(existed),
                Ok(false) => {}
                Err(message) => return Err(std::io::Error::other(message)),
            }
        }
        fsutil::atomic_write(path, content.as_bytes())
    }

    /// The extra environment of Bash commands and background tasks.
    fn env(&self) -> BTreeMap<String, String> {
        self.env
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The HTTP client of WebFetch, built on first use (building loads TLS roots, which costs
    /// milliseconds a session that never fetches should not pay). Redirects are handled by
    /// WebFetch itself so it can refuse cross-host hops.
    fn http_client(&self) -> Result<reqwest::Client, String> {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(Duration::from_secs(10))
                    .user_agent(self.web_fetch.user_agent.clone())
                    .build()
                    .map_err(|err| format!("WebFetch cannot create its HTTP client: {err}"))
            })
            .clone()
    }
}

/// The built-in tools of one session and what they share. Cheap to clone.
#[derive(Clone)]
pub struct Builtins {
    shared: Arc<Shared>,
    /// [`BuiltinToolsConfig::background_process_tool`].
    background_process_tool: bool,
}

impl std::fmt::Debug for Builtins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builtins")
            .field("workspace", &self.shared.workspace)
            .field("limit", &self.shared.limit)
            .field("shell", &self.shared.shell)
            .finish()
    }
}

impl Builtins {
    /// Sets up the shared state. Nothing touches the disk until a tool runs.
    pub fn new(config: BuiltinToolsConfig) -> Self {
        let shell = process::resolve_shell(config.shell.as_deref());
        // Task records are kept only with a configured (saved) session folder.
        let background =
            BackgroundTasks::with_limits(config.background, config.session_dir.clone());
        Builtins {
            background_process_tool: config.background_process_tool,
            shared: Arc::new(Shared {
                workspace: Workspace::new(
                    config.additional_roots,
                    SessionDir::new(config.session_dir, config.max_spill_bytes),
                ),
                limit: config.output_limit,
                shell,
                kill_grace: config.kill_grace,
                background,
                web_fetch: config.web_fetch,
                search: config.search_provider.or_else(|| {
                    BraveSearch::from_env().map(|p| Arc::new(p) as Arc<dyn SearchProvider>)
                }),
                http: OnceLock::new(),
                env: std::sync::RwLock::new(config.env),
                sandbox: config.sandbox,
                processes: config.processes.unwrap_or_default(),
                todos: Arc::default(),
                host_files: config.host_files,
            }),
        }
    }

    /// All the built-in tools ([`BUILTIN_TOOL_NAMES`], then `BackgroundProcess` when
    /// configured).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(BashTool::new(self)),
            Arc::new(BashOutputTool::new(self)),
            Arc::new(KillShellTool::new(self)),
            Arc::new(ReadTool::new(self)),
            Arc::new(WriteTool::new(self)),
            Arc::new(EditTool::new(self)),
            Arc::new(MultiEditTool::new(self)),
            Arc::new(NotebookEditTool::new(self)),
            Arc::new(GlobTool::new(self)),
            Arc::new(GrepTool::new(self)),
            Arc::new(WebFetchTool::new(self)),
            Arc::new(WebSearchTool::new(self)),
            Arc::new(TodoWriteTool::new(self)),
        ];
        if self.background_process_tool {
            tools.push(Arc::new(BackgroundProcessTool::new(self)));
        }
        tools
    }

    /// The current TodoWrite task list.
    pub fn todos(&self) -> Vec<TodoItem> {
        self.shared
            .todos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Registers all the built-in tools (replacing tools of the same names).
    pub fn register(&self, registry: &mut ToolRegistry) {
        for tool in self.tools() {
            registry.register(tool);
        }
    }

    /// The background tasks started by `Bash` with `run_in_background: true`.
    pub fn background_tasks(&self) -> &BackgroundTasks {
        &self.shared.background
    }

    /// Registers a background task whose work the caller runs (a subagent), with its log in
    /// the session's task folder; refused at the concurrency limit or while the session shuts
    /// down. See [`ExternalTask`].
    pub fn start_external_task(
        &self,
        request: ExternalTaskRequest<'_>,
    ) -> Result<ExternalTask, String> {
        if self.shared.processes.is_closed() {
            return Err("the session is shutting down".into());
        }
        let session_dir = self.shared.workspace.session_dir();
        self.shared
            .background
            .start_external(request, |id| session_dir.new_task_path(id, "stdout"))
    }

    /// The registry of the process groups Bash calls and background tasks run in.
    pub fn processes(&self) -> &ProcessGroups {
        &self.shared.processes
    }

    /// Fits `text` to `max_bytes` as the built-in tools fit theirs: head and tail around an
    /// exact "omitted" marker, the whole text saved in the session's spill directory (named in
    /// the marker, counted against the session's spill limit). Returns the shown text and the
    /// spill file. Tools from elsewhere (MCP servers) use it to follow the same budget.
    pub fn fit_output(
        &self,
        text: &str,
        max_bytes: usize,
        stem: &str,
    ) -> (String, Option<PathBuf>) {
        budget::fit_text(text, max_bytes, self.shared.workspace.session_dir(), stem)
    }

    /// The session directory (created if needed), where spilled outputs are written.
    pub fn session_dir(&self) -> Result<PathBuf, String> {
        self.shared.workspace.session_dir().get()
    }

    /// The shell Bash runs commands with.
    pub fn shell(&self) -> &std::path::Path {
        &self.shared.shell
    }

    /// The OS sandbox Bash commands run in, if one is configured.
    pub fn sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.shared.sandbox.as_ref()
    }

    /// The extra environment Bash commands and background tasks get (settings `env` and what
    /// hooks exported through `CLAUDE_ENV_FILE`).
    pub fn env(&self) -> BTreeMap<String, String> {
        self.shared.env()
    }

    /// Applies a `CLAUDE_ENV_FILE` a SessionStart or Setup hook wrote (Claude Code's format:
    /// shell lines such as `export NODE_ENV=production`, or `declare -x …` from `export -p`) to
    /// every later Bash command and background task of the session.
    ///
    /// The file is sourced once by the session's shell, in the environment Bash commands get,
    /// and the variables it adds or changes are kept (Claude Code sources the file before each
    /// command instead; for files that only export variables the result is the same). Runs
    /// outside the OS sandbox, like the hook that wrote the file, with no input and a 10 s limit.
    /// Returns the names of the variables set.
    pub async fn apply_env_file(&self, file: &std::path::Path) -> Result<Vec<String>, String> {
        let base = self.shared.env();
        let before = env_after(&self.shared.shell, &base, None).await?;
        let after = env_after(&self.shared.shell, &base, Some(file)).await?;
        let changed: BTreeMap<String, String> = after
            .into_iter()
            .filter(|(name, value)| name != "_" && before.get(name) != Some(value))
            .collect();
        let names = changed.keys().cloned().collect();
        self.shared
            .env
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(changed);
        Ok(names)
    }
}

/// The environment `shell` ends with after sourcing `file` (or nothing), started with the
/// environment a Bash command gets.
async fn env_after(
    shell: &std::path::Path,
    env: &BTreeMap<String, String>,
    file: Option<&std::path::Path>,
) -> Result<BTreeMap<String, String>, String> {
    let script = if file.is_some() {
        ". \"$1\" >/dev/null 2>&1 </dev/null; env -0"
    } else {
        "env -0"
    };
    let mut command = tokio::process::Command::new(shell);
    command.arg("-c").arg(script).arg("robota-env");
    if let Some(file) = file {
        command.arg(file);
    }
    for (key, value) in process::NON_INTERACTIVE_ENV {
        command.env(key, value);
    }
    command
        .envs(env)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let output = tokio::time::timeout(Duration::from_secs(10), command.output())
        .await
        .map_err(|_| "sourcing it took longer than 10 s".to_string())?
        .map_err(|err| format!("cannot start {}: {err}", shell.display()))?;
    if !output.status.success() {
        return Err(format!("the shell exited with {}", output.status));
    }
    Ok(output
        .stdout
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (name, value) = entry.split_once('=')?;
            (!name.is_empty()).then(|| (name.to_string(), value.to_string()))
        })
        .collect())
}

/// The built-in tools for `config` — shorthand for `Builtins::new(config).tools()`.
pub fn default_tools(config: BuiltinToolsConfig) -> Vec<Arc<dyn Tool>> {
    Builtins::new(config).tools()
}

/// Runs blocking file-system work off the async threads; a panic in it becomes an error result.
async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(output) => output,
        Err(err) => ToolOutput::error(format!("The tool failed internally: {err}")),
    }
}
