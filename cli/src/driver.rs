//! Opening an [`InteractiveSession`]: turning the parsed arguments into settings, a provider and
//! session options, and reporting failures with exit codes. The session logic itself (prompt
//! runs, commands, clear/compact/rename, events with `session_id` and `seq`) lives in core.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use robota::framework::assembly::load_mcp_config;
use robota::framework::assembly::provider::{open_replay, provider_from_settings, BuiltProvider};
use robota::framework::config::{load_settings, SettingsOptions};
use robota::framework::interactive::{
    InteractiveError, InteractiveSession, InteractiveSessionOptions,
};
use robota::mcp::{McpAuthorizationHandler, McpOptions};
use robota::permissions::PermissionMode;
use robota::provider::{Provider, ThinkingConfig};
use robota::session::store::SessionStore;
use robota::session::store_choice::StoreChoice;
use robota::session::structured_output::OutputFormat;
use robota::session::{
    PermissionHandler, SessionEvent, SessionOptions, SessionPersistence, SessionSettings,
};

use crate::args::{split_rules, Cli};
use crate::{EXIT_RUN_ERROR, EXIT_USAGE};

/// A failure that ends the process: the exit code and the message for stderr.
#[derive(Debug)]
pub struct CliError {
    /// The process exit code.
    pub code: u8,
    /// What failed and how to fix it.
    pub message: String,
}

impl CliError {
    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// A run error (exit 1).
    pub fn run(message: impl Into<String>) -> Self {
        CliError {
            code: EXIT_RUN_ERROR,
            message: message.into(),
        }
    }
}

/// An open session and what the CLI needs to explain its failures.
pub struct OpenSession {
    /// The session.
    pub session: Arc<InteractiveSession>,
    /// The endpoint of an HTTP provider (named when it cannot be reached).
    pub base_url: Option<String>,
}

/// Opens the session the arguments describe, in the project folder `--cwd` (or the current
/// directory). Sessions are saved under `<cwd>/.robota/` so that `--resume`/`--continue` work.
/// `on_event` sees every raw session event (the CLI uses it for `--verbose` diagnostics only;
/// output is rendered from the interactive session's events).
pub fn open_session(
    cli: &Cli,
    permission_handler: Option<Arc<dyn PermissionHandler>>,
    on_event: impl Fn(SessionEvent) + Send + Sync + 'static,
) -> Result<OpenSession, CliError> {
    let (options, base_url) = session_options(cli, permission_handler, on_event)?;
    let session = InteractiveSession::new(options).map_err(|error| match error {
        InteractiveError::Session(error) => CliError::usage(error.to_string()),
        other => CliError::run(other.to_string()),
    })?;
    Ok(OpenSession { session, base_url })
}

/// The options of the session the arguments describe (what [`open_session`] opens), with the
/// endpoint of an HTTP provider; `robota serve` opens its sessions from these too.
pub fn session_options(
    cli: &Cli,
    permission_handler: Option<Arc<dyn PermissionHandler>>,
    on_event: impl Fn(SessionEvent) + Send + Sync + 'static,
) -> Result<(InteractiveSessionOptions, Option<String>), CliError> {
    // robota reads every settings layer of its own; the Claude Code names are only checked.
    if let Some(sources) = &cli.setting_sources {
        if let Some(unknown) = sources
            .split(',')
            .map(str::trim)
            .find(|s| !s.is_empty() && !["user", "project", "local"].contains(s))
        {
            return Err(CliError::usage(format!(
                "--setting-sources: unknown source `{unknown}` (user, project or local)"
            )));
        }
    }
    refuse_unsupported_flags(cli)?;
    let thinking = thinking_budget(cli)?;
    if cli.no_session_persistence && (cli.resume.is_some() || cli.continue_session) {
        return Err(CliError::usage(
            "--no-session-persistence cannot resume a session (--resume, --continue): resuming \
             reads the saved session and saves it again",
        ));
    }
    if cli.session_id.is_some() && (cli.resume.is_some() || cli.continue_session) {
        return Err(CliError::usage(
            "--session-id names a new session; a resumed session (--resume, --continue) keeps \
             its own id, and a --fork-session copy gets a fresh one",
        ));
    }
    let cwd = project_dir(cli)?;
    let overrides = settings_overrides(cli)?;
    let loaded = load_settings(&SettingsOptions::from_env(&cwd).with_overrides(overrides))
        .map_err(|error| CliError::usage(error.to_string()))?;
    let settings_telemetry = loaded.merged.get("telemetry").cloned();

    let built = match &cli.replay {
        // A replay needs no key and no network: the recorded responses are the model.
        Some(log) => {
            let provider = open_replay(log).map_err(|e| CliError::usage(e.to_string()))?;
            BuiltProvider {
                provider: Arc::new(provider) as Arc<dyn Provider>,
                profile: None,
                kind: "replay".into(),
                model: "replay".into(),
                base_url: None,
            }
        }
        None => provider_from_settings(&loaded.settings, &cwd, &|name| std::env::var(name).ok())
            .map_err(|error| CliError::usage(error.to_string()))?,
    };

    // `--session-store` above the settings' `sessionStore` above the project's files.
    let choice = match &cli.session_store {
        Some(argument) => StoreChoice::from_argument(argument)
            .map_err(|error| CliError::usage(format!("--session-store: {error}")))?,
        None => match loaded.merged.get("sessionStore") {
            Some(value) => StoreChoice::from_settings(value).map_err(CliError::usage)?,
            None => StoreChoice::File,
        },
    };
    let chosen = cli.session_store.is_some() || loaded.merged.get("sessionStore").is_some();
    let store = choice
        .open(&cwd, loaded.home.as_deref())
        .map_err(|error| CliError::usage(format!("cannot open the session store: {error}")))?;
    let resume = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(id.clone()),
        (None, true) => Some(latest_session(store.as_ref(), &cwd)?),
        (None, false) => None,
    };
    if cli.fork && resume.is_none() {
        return Err(CliError::usage(
            "--fork needs --resume ID or --continue (it copies an existing session)",
        ));
    }

    let mut options = SessionOptions::new(&cwd, built.provider.clone())
        .with_settings(SessionSettings::Loaded(Box::new(loaded)))
        .with_persistence(if cli.no_session_persistence {
            SessionPersistence::None
        } else if chosen {
            SessionPersistence::Store(store)
        } else {
            SessionPersistence::Project
        })
        .with_on_event(on_event);
    if let Some(max_turns) = cli.max_turns {
        options = options.with_max_turns(max_turns);
    }
    if let Some(schema) = &cli.json_schema {
        let schema: serde_json::Value = serde_json::from_str(schema)
            .map_err(|error| CliError::usage(format!("--json-schema: not valid JSON: {error}")))?;
        options.output_format = Some(OutputFormat::json_schema(schema));
    }
    if let Some(mode) = &cli.permission_mode {
        let mode: PermissionMode =
            mode.parse()
                .map_err(|error: <PermissionMode as std::str::FromStr>::Err| {
                    CliError::usage(format!("--permission-mode: {error}"))
                })?;
        options = options.with_permission_mode(mode);
    }
    // An empty `--system-prompt` (what the Claude Agent SDK passes when none is set) keeps
    // robota's own prompt.
    if let Some(text) = cli.system_prompt.as_ref().filter(|t| !t.is_empty()) {
        options.system_prompt = Some(text.clone());
    }
    if let Some(path) = &cli.system_prompt_file {
        let text = robota::files::read_regular_text(path, &robota::files::SETTINGS_FILE)
            .map_err(|error| CliError::usage(format!("--system-prompt-file: {error}")))?;
        options.system_prompt = Some(text);
    }
    if let Some(text) = cli.append_system_prompt.as_ref().filter(|t| !t.is_empty()) {
        options.append_system_prompt = Some(text.clone());
    }
    if let Some(budget) = cli.max_budget_usd {
        if !(budget.is_finite() && budget > 0.0) {
            return Err(CliError::usage(format!(
                "--max-budget-usd {budget}: must be a positive number of dollars"
            )));
        }
        options.max_budget_usd = Some(budget);
    }
    options.fallback_model = cli
        .fallback_model
        .as_ref()
        .filter(|model| !model.trim().is_empty())
        .cloned();
    options
        .builtin_tools
        .additional_roots
        .extend(cli.add_dir.iter().cloned());
    if cli.sandbox || cli.no_sandbox {
        options = options.with_sandbox(cli.sandbox);
    }
    if let Some(handler) = permission_handler {
        options = options.with_permission_handler(handler);
    }
    let env = |name: &str| std::env::var(name).ok();
    for argument in &cli.mcp_config {
        let servers = load_mcp_config(argument, &cwd, &env)
            .map_err(|error| CliError::usage(format!("--mcp-config: {error}")))?;
        options.mcp_servers.extend(servers);
    }
    options.mcp_options = McpOptions::from_env(&env);
    // The browser step of a remote MCP server's OAuth: the user opens the URL; the redirect
    // comes back to the session's loopback listener.
    options.mcp_authorization_handler = Some(McpAuthorizationHandler::new(|server, url| {
        eprintln!(
            "MCP server `{server}` asks you to authorize robota: open this URL in a browser \
             (or later run `/mcp auth {server}`):\n  {url}"
        );
    }));
    if let Some(id) = resume {
        options = options.with_resume(id, cli.fork);
    }
    if let Some(id) = &cli.session_id {
        options = options.with_session_id(id);
    }
    if thinking.is_some() && !built.provider.capabilities().thinking {
        // The budget would be dropped on the way to the model.
        return Err(CliError::usage(format!(
            "--max-thinking-tokens: the {} provider takes no thinking budget",
            built.kind
        )));
    }
    options.engine.thinking = thinking;
    options.host_mcp_servers_only = cli.strict_mcp_config;
    if let Some(config) = telemetry_config(cli, &settings_telemetry, &env)? {
        options.telemetry = Some(
            robota::telemetry::Telemetry::start(&config)
                .map_err(|error| CliError::usage(error.to_string()))?,
        );
        let traceparent = cli.traceparent.clone().or_else(|| env("TRACEPARENT"));
        options.trace_parent = robota::api::trace_parent(traceparent, env("TRACESTATE"))
            .map_err(|error| CliError::usage(format!("--traceparent: {}", error.message)))?;
    }
    Ok((InteractiveSessionOptions::new(options), built.base_url))
}

/// Refuses the Claude Code flags robota parses but cannot honour: each would change what the
/// session does or reports, so running without it would mislead the caller.
fn refuse_unsupported_flags(cli: &Cli) -> Result<(), CliError> {
    let refused = if cli.include_hook_events {
        Some(
            "--include-hook-events: robota does not report hook runs as messages \
             (hook_started / hook_response); run without it",
        )
    } else if cli.betas.is_some() {
        Some("--betas: robota's providers send no beta headers of the caller's; run without it")
    } else if cli.effort.is_some() {
        Some(
            "--effort: robota has no reasoning-effort setting; give a thinking budget with \
             --max-thinking-tokens instead",
        )
    } else if cli.thinking_display.is_some() {
        Some(
            "--thinking-display: robota cannot ask for summarized or omitted thinking; run \
             without it",
        )
    } else {
        None
    };
    match refused {
        Some(message) => Err(CliError::usage(message)),
        None => Ok(()),
    }
}

/// The thinking budget `--max-thinking-tokens` and `--thinking` ask for (`None`: no thinking).
fn thinking_budget(cli: &Cli) -> Result<Option<ThinkingConfig>, CliError> {
    match cli.thinking.as_deref() {
        None => {}
        Some("disabled") => {
            if cli.max_thinking_tokens.is_some_and(|tokens| tokens > 0) {
                return Err(CliError::usage(
                    "--thinking disabled and --max-thinking-tokens contradict each other",
                ));
            }
            return Ok(None);
        }
        Some(mode @ ("adaptive" | "enabled")) => {
            return Err(CliError::usage(format!(
                "--thinking {mode}: robota thinks only with a token budget; give it with \
                 --max-thinking-tokens N"
            )))
        }
        Some(other) => {
            return Err(CliError::usage(format!(
                "--thinking `{other}`: use disabled (or a budget with --max-thinking-tokens)"
            )))
        }
    }
    Ok(cli
        .max_thinking_tokens
        .filter(|tokens| *tokens > 0)
        .map(|budget_tokens| ThinkingConfig { budget_tokens }))
}

/// The OTLP export the flags, the settings' `telemetry` and the environment ask for; `None`
/// when none does (no exporter is built then).
fn telemetry_config(
    cli: &Cli,
    settings: &Option<serde_json::Value>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<robota::telemetry::TelemetryConfig>, CliError> {
    let from_env = env("ROBOTA_ENABLE_TELEMETRY").is_some_and(|v| v == "1" || v == "true");
    let mut config = match settings {
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|error| CliError::usage(format!("settings `telemetry`: {error}")))?,
        None if from_env || cli.otel_endpoint.is_some() || cli.otel_protocol.is_some() => {
            robota::telemetry::TelemetryConfig::default()
        }
        None => return Ok(None),
    };
    if let Some(endpoint) = &cli.otel_endpoint {
        config.endpoint = Some(endpoint.clone());
    }
    if let Some(protocol) = &cli.otel_protocol {
        config.protocol = Some(robota::telemetry::OtlpProtocol::parse(protocol).ok_or_else(
            || {
                CliError::usage(format!(
                    "--otel-protocol `{protocol}`: use `http` (HTTP/protobuf) or `grpc`"
                ))
            },
        )?);
    }
    Ok(Some(config))
}

fn project_dir(cli: &Cli) -> Result<PathBuf, CliError> {
    let cwd = match &cli.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?,
    };
    if !cwd.is_dir() {
        return Err(CliError::usage(format!(
            "--cwd {}: not a directory",
            cwd.display()
        )));
    }
    Ok(cwd)
}

/// The id of the most recently updated saved session of the project (a session whose snapshot
/// is damaged is listed from its log, and resuming it rebuilds it from there).
fn latest_session(store: &dyn SessionStore, cwd: &Path) -> Result<String, CliError> {
    let listing = store
        .list()
        .map_err(|error| CliError::usage(format!("cannot list saved sessions: {error}")))?;
    if let Some(summary) = listing.sessions.first() {
        return Ok(summary.id.clone());
    }
    let mut message = format!(
        "--continue: no saved session in {}",
        cwd.join(".robota/sessions").display()
    );
    if !listing.problems.is_empty() {
        message.push_str(" that can be read:");
        for problem in &listing.problems {
            message.push_str(&format!("\n  {problem}"));
        }
    }
    Err(CliError::usage(message))
}

/// The line naming the session a `--resume`/`--continue` run went on with (`resumed session
/// 1b2c… "bug hunt" (6 messages)`, or which copy a `--fork` made); `None` for a new session.
pub fn resumed_notice(cli: &Cli, session: &InteractiveSession) -> Option<String> {
    if cli.resume.is_none() && !cli.continue_session {
        return None;
    }
    let id = session.get_session_id();
    let name = session
        .get_name()
        .map(|name| format!(" \"{name}\""))
        .unwrap_or_default();
    let messages = session.get_messages().len();
    let what = if cli.fork {
        "forked into session"
    } else {
        "resumed session"
    };
    Some(format!("{what} {id}{name} ({messages} messages)"))
}

/// The lines of the notice about what resuming found (a damaged snapshot or log, an unfinished
/// prompt), for stderr; empty when there is nothing to tell.
pub fn recovery_notice(session: &InteractiveSession) -> Vec<String> {
    session
        .get_recovery_report()
        .map(|report| {
            report
                .message()
                .lines()
                .map(|line| format!("robota: {line}"))
                .collect()
        })
        .unwrap_or_default()
}

/// The settings layer the flags make: `--settings FILE` first, then `--model`, `--provider` and
/// the allow/deny rules above it.
fn settings_overrides(cli: &Cli) -> Result<Value, CliError> {
    let mut top = match &cli.settings {
        Some(path) => {
            // A regular file of at most 1 MiB: a FIFO or `/dev/zero` must not hang or fill memory.
            let text = robota::files::read_regular_text(path, &robota::files::SETTINGS_FILE)
                .map_err(|error| CliError::usage(format!("--settings: {error}")))?;
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(object)) => object,
                Ok(_) => {
                    return Err(CliError::usage(format!(
                        "--settings {}: must hold a JSON object",
                        path.display()
                    )))
                }
                Err(error) => {
                    return Err(CliError::usage(format!(
                        "--settings {}: not valid JSON: {error}",
                        path.display()
                    )))
                }
            }
        }
        None => Map::new(),
    };
    if let Some(model) = &cli.model {
        top.insert("model".into(), json!(model));
    }
    if let Some(profile) = &cli.provider {
        top.insert("currentProvider".into(), json!(profile));
    }
    // `--tools LIST` offers only the listed built-in tools: the others are denied by name.
    let mut denied = cli.disallowed_tools.clone();
    if let Some(tools) = cli.tools.as_deref().map(str::trim) {
        if tools != "default" {
            let listed = split_rules(&[tools.to_string()]);
            if let Some(unknown) = listed
                .iter()
                .find(|name| !robota::tools::builtins::BUILTIN_TOOL_NAMES.contains(&name.as_str()))
            {
                return Err(CliError::usage(format!(
                    "--tools: `{unknown}` is not a built-in tool (they are {})",
                    robota::tools::builtins::BUILTIN_TOOL_NAMES.join(", ")
                )));
            }
            denied.extend(
                robota::tools::builtins::BUILTIN_TOOL_NAMES
                    .iter()
                    .filter(|name| !listed.iter().any(|l| l == *name))
                    .map(|name| name.to_string()),
            );
        }
    }
    for (key, values) in [("allow", &cli.allowed_tools), ("deny", &denied)] {
        let rules = split_rules(values);
        if rules.is_empty() {
            continue;
        }
        let permissions = top
            .entry("permissions")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(permissions) = permissions else {
            return Err(CliError::usage(
                "--settings: `permissions` must be an object",
            ));
        };
        let list = permissions
            .entry(key)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            return Err(CliError::usage(format!(
                "--settings: `permissions.{key}` must be an array"
            )));
        };
        list.extend(rules.into_iter().map(Value::String));
    }
    Ok(Value::Object(top))
}
