//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Run the robota agent in a project folder.
///
/// `robota` starts an interactive session; `robota "PROMPT"` starts one with that prompt;
/// `robota -p "PROMPT"` runs the prompt headless and prints the answer (`-p -`, or `-p` with
/// the prompt piped in, reads it from stdin).
#[derive(Debug, Clone, Parser)]
#[command(name = "robota", version, about, long_about = None)]
pub struct Cli {
    /// The prompt: the first one of an interactive session, or with -p the one to run (`-` reads
    /// it from stdin).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Print mode: run the prompt headless and print the answer (progress goes to stderr).
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// How headless output is printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// The model id (overrides settings `model` and the profile's model).
    #[arg(long)]
    pub model: Option<String>,
    /// The settings provider profile to use (sets `currentProvider`).
    #[arg(long, value_name = "PROFILE")]
    pub provider: Option<String>,
    /// Permission mode: default, acceptEdits, plan, dontAsk, bypassPermissions.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,
    /// Rules to allow without asking, comma or space separated (e.g. `Read,Bash(git status)`).
    #[arg(long, visible_alias = "allowedTools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,
    /// Rules to deny, comma or space separated.
    #[arg(long, visible_alias = "disallowedTools", value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,
    /// Most model/tool rounds for the prompt (0 = no cap).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Structured output: the final answer must be JSON matching this JSON Schema (inline JSON);
    /// the validated value is the result's `structured_output` (`--output-format json`).
    #[arg(long, value_name = "SCHEMA_JSON")]
    pub json_schema: Option<String>,
    /// Resume the saved session with this id.
    #[arg(long, value_name = "ID", conflicts_with = "continue_session")]
    pub resume: Option<String>,
    /// Resume the most recent session of this project.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// Where sessions are saved: `file` (`.robota/sessions` and `.robota/logs`, the default),
    /// `sqlite:PATH` (one database file for many sessions; a relative PATH is in the project), a
    /// `postgres://…` URL or `postgres-env:NAME` (a PostgreSQL database shared by many workers;
    /// the URL in environment variable NAME).
    /// Above the settings' `sessionStore`.
    #[arg(long, value_name = "STORE")]
    pub session_store: Option<String>,
    /// With --resume/--continue: continue in a copy with a new id.
    #[arg(long, visible_alias = "fork-session")]
    pub fork: bool,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// MCP servers to add: a JSON file or inline JSON in `.mcp.json`'s shape
    /// (`{"mcpServers": {"name": {"command": …}}}`); repeatable. They replace servers of the same
    /// name from `.mcp.json` and settings.
    #[arg(long = "mcp-config", value_name = "FILE_OR_JSON", num_args = 1..)]
    pub mcp_config: Vec<String>,
    /// An extra settings file, applied above every settings layer.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Re-run a recorded session log (.robota/logs/<id>.jsonl) offline instead of calling a model.
    #[arg(long, value_name = "LOG")]
    pub replay: Option<PathBuf>,
    /// How permission prompts are answered: `none` denies with an explanation, `stdin` asks.
    #[arg(long, value_enum, default_value_t = PermissionPrompt::None)]
    pub permission_prompt: PermissionPrompt,
    /// Run Bash commands in the OS sandbox (writes only in the workspace, no network), whatever
    /// the settings say.
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Run Bash commands without the OS sandbox (by default it is on in bypassPermissions).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Print tool calls, warnings and the session id to stderr.
    #[arg(short, long)]
    pub verbose: bool,
    /// Run the Setup hooks with trigger `init` before the session starts, then continue.
    #[arg(long, conflicts_with = "maintenance")]
    pub init: bool,
    /// Run the Setup hooks with trigger `init`, then exit (no prompt).
    #[arg(long, conflicts_with_all = ["init", "maintenance", "prompt", "print"])]
    pub init_only: bool,
    /// Run the Setup hooks with trigger `maintenance` before the session starts, then continue.
    #[arg(long)]
    pub maintenance: bool,
    /// Export OpenTelemetry traces and metrics to this OTLP collector (base URL, e.g.
    /// `http://localhost:4318`). Also on with settings `telemetry` or `ROBOTA_ENABLE_TELEMETRY=1`
    /// (then the `OTEL_EXPORTER_OTLP_*` variables say where).
    #[arg(long, value_name = "URL")]
    pub otel_endpoint: Option<String>,
    /// The OTLP transport: `http` (HTTP/protobuf) or `grpc`.
    #[arg(long, value_name = "PROTOCOL")]
    pub otel_protocol: Option<String>,
    /// How input is read: `text` (the prompt argument) or `stream-json` (with `--output-format
    /// stream-json`: the Claude Agent SDK's protocol, user messages and control requests as JSON
    /// lines on stdin; see `cli/README.md`).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,
    /// Replaces the system prompt (an empty value keeps robota's own).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Replaces the system prompt with the contents of this file.
    #[arg(long, value_name = "FILE", conflicts_with = "system_prompt")]
    pub system_prompt_file: Option<PathBuf>,
    /// Text added at the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// The built-in tools to offer: `default` (all), `""` (none) or a comma-separated list.
    #[arg(long, value_name = "TOOLS")]
    pub tools: Option<String>,
    /// Who answers permission prompts in the stream-json protocol: `stdio` sends them to the
    /// host as `can_use_tool` control requests.
    #[arg(long, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// A directory the tools may use besides the project (repeatable).
    #[arg(long = "add-dir", value_name = "DIR", num_args = 1..)]
    pub add_dir: Vec<PathBuf>,
    /// In the stream-json protocol, also stream text as it arrives (`stream_event` lines).
    #[arg(long)]
    pub include_partial_messages: bool,
    /// Which settings layers to read (`user,project,local`); robota reads its own layers, so
    /// this is accepted for compatibility and only checked.
    #[arg(long, value_name = "SOURCES")]
    pub setting_sources: Option<String>,
    /// Stop the session's runs once they have cost this many US dollars.
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,
    /// A second model of the same provider, answering when the main model is overloaded.
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,
    /// The W3C traceparent the session's spans join (default: `$TRACEPARENT`, with
    /// `$TRACESTATE`).
    #[arg(long, value_name = "TRACEPARENT")]
    pub traceparent: Option<String>,
    /// Use only the MCP servers of `--mcp-config` (none from settings, `.mcp.json` or plugins).
    #[arg(long)]
    pub strict_mcp_config: bool,
    /// The id of the new session (a safe file name: letters, digits, `.`, `_`, `-`); not with
    /// `--resume`/`--continue`, whose session keeps its id.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Extended thinking with this token budget per model call (`0`: no thinking).
    #[arg(long, value_name = "TOKENS")]
    pub max_thinking_tokens: Option<u32>,
    /// Claude Code's thinking switch: `disabled` turns thinking off; `adaptive` and `enabled`
    /// (without a budget) are refused, since robota needs a budget (`--max-thinking-tokens`).
    #[arg(long, value_name = "MODE")]
    pub thinking: Option<String>,
    /// Save nothing of the session (no snapshot, no log), so it cannot be resumed.
    #[arg(long)]
    pub no_session_persistence: bool,
    /// In the stream-json protocol, prompts wait for the SDK's `initialize` (which configures
    /// the session) however early they arrive.
    #[arg(long)]
    pub await_initialize: bool,
    /// In the stream-json protocol, echo each prompt's user message (with its `uuid`, the id
    /// `rewind_files` takes) before its answer.
    #[arg(long)]
    pub replay_user_messages: bool,
    /// Claude Code's hook progress messages: refused (robota does not report hook runs as
    /// messages).
    #[arg(long, hide = true)]
    pub include_hook_events: bool,
    /// Anthropic beta headers: refused (robota's provider sends none of the caller's).
    #[arg(long, value_name = "BETAS", hide = true)]
    pub betas: Option<String>,
    /// The reasoning effort: refused (robota has no effort setting; a thinking budget is
    /// `--max-thinking-tokens`).
    #[arg(long, value_name = "LEVEL", hide = true)]
    pub effort: Option<String>,
    /// How thinking is shown (summarized or omitted): refused (robota cannot ask for either).
    #[arg(long, value_name = "DISPLAY", hide = true)]
    pub thinking_display: Option<String>,
}

impl Cli {
    /// The Setup trigger the flags ask for (`--init`, `--init-only`, `--maintenance`).
    pub fn setup_trigger(&self) -> Option<robota::hooks::SetupTrigger> {
        if self.init || self.init_only {
            Some(robota::hooks::SetupTrigger::Init)
        } else if self.maintenance {
            Some(robota::hooks::SetupTrigger::Maintenance)
        } else {
            None
        }
    }
}

/// Headless output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The answer as plain text.
    Text,
    /// One JSON object: the result.
    Json,
    /// One JSON object per line: every session event, then the result.
    StreamJson,
}

/// How input is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// The prompt argument (or stdin with `-p -`).
    Text,
    /// JSON lines: the Claude Agent SDK's protocol (with `--output-format stream-json`).
    StreamJson,
}

/// Who answers permission prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PermissionPrompt {
    /// Nobody: calls that need approval are denied, and the model is told how to allow them.
    None,
    /// The user, on stdin (y/n/a/s).
    Stdin,
}

/// Splits `--allowed-tools` values into rules: commas and spaces separate rules, except inside
/// parentheses (so `Bash(npm run test *)` stays one rule).
pub fn split_rules(values: &[String]) -> Vec<String> {
    let mut rules = Vec::new();
    for value in values {
        let mut depth = 0usize;
        let mut current = String::new();
        for ch in value.chars() {
            match ch {
                '(' => {
                    depth += 1;
                    current.push(ch);
                }
                ')' => {
                    depth = depth.saturating_sub(1);
                    current.push(ch);
                }
                ',' | ' ' | '\t' if depth == 0 => {
                    if !current.trim().is_empty() {
                        rules.push(current.trim().to_owned());
                    }
                    current.clear();
                }
                _ => current.push(ch),
            }
        }
        if !current.trim().is_empty() {
            rules.push(current.trim().to_owned());
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_split_on_commas_and_spaces_outside_parentheses() {
        let rules = split_rules(&["Read, Bash(npm run test *) Glob".into(), "Edit".into()]);
        assert_eq!(rules, ["Read", "Bash(npm run test *)", "Glob", "Edit"]);
    }
}
