//! The eight built-in tools — Bash, Read, Write, Edit, Glob, Grep, WebFetch, WebSearch — with
//! Claude Code's names and input fields (TypeScript Robota camelCase names accepted as aliases).
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
//! assert_eq!(registry.len(), 8);
//! ```

/// Declares a built-in tool whose work is blocking file-system code: the struct, its constructor
/// and the [`Tool`] impl (validate the input against the tool's `SCHEMA`, then run `$run` on the
/// blocking pool). The five file tools differ only in these parameters.
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

mod background;
mod bash;
mod budget;
mod diff;
mod edit;
mod fsutil;
mod glob;
mod grep;
mod process;
mod read;
mod schema;
mod web_fetch;
mod web_search;
mod workspace;
mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use background::{BackgroundOutput, BackgroundTaskInfo, BackgroundTaskStatus, BackgroundTasks};
pub use bash::{BashTool, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
pub use budget::OutputLimit;
pub use edit::EditTool;
pub use glob::{GlobTool, DEFAULT_GLOB_LIMIT};
pub use grep::GrepTool;
pub use read::{ReadTool, DEFAULT_READ_LIMIT, MAX_LINE_CHARS};
pub use web_fetch::{WebFetchConfig, WebFetchTool};
pub use web_search::{
    BraveSearch, SearchError, SearchProvider, SearchQuery, SearchResult, WebSearchTool,
};
pub use write::WriteTool;

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
    env: BTreeMap<String, String>,
    sandbox: Option<Arc<Sandbox>>,
    processes: ProcessGroups,
}

impl Shared {
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
        Builtins {
            shared: Arc::new(Shared {
                workspace: Workspace::new(
                    config.additional_roots,
                    SessionDir::new(config.session_dir, config.max_spill_bytes),
                ),
                limit: config.output_limit,
                shell,
                kill_grace: config.kill_grace,
                background: BackgroundTasks::new(),
                web_fetch: config.web_fetch,
                search: config.search_provider.or_else(|| {
                    BraveSearch::from_env().map(|p| Arc::new(p) as Arc<dyn SearchProvider>)
                }),
                http: OnceLock::new(),
                env: config.env,
                sandbox: config.sandbox,
                processes: config.processes.unwrap_or_default(),
            }),
        }
    }

    /// All eight tools.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(BashTool::new(self)),
            Arc::new(ReadTool::new(self)),
            Arc::new(WriteTool::new(self)),
            Arc::new(EditTool::new(self)),
            Arc::new(GlobTool::new(self)),
            Arc::new(GrepTool::new(self)),
            Arc::new(WebFetchTool::new(self)),
            Arc::new(WebSearchTool::new(self)),
        ]
    }

    /// Registers all eight tools (replacing tools of the same names).
    pub fn register(&self, registry: &mut ToolRegistry) {
        for tool in self.tools() {
            registry.register(tool);
        }
    }

    /// The background tasks started by `Bash` with `run_in_background: true`.
    pub fn background_tasks(&self) -> &BackgroundTasks {
        &self.shared.background
    }

    /// The registry of the process groups Bash calls and background tasks run in.
    pub fn processes(&self) -> &ProcessGroups {
        &self.shared.processes
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
}

/// The eight built-in tools for `config` — shorthand for `Builtins::new(config).tools()`.
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
