//! `Bash`: runs a command through the user's shell, with a timeout, abort, a killed-as-a-whole
//! process tree, and head/tail output with the full output kept in a file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::background::process_runner::{self, ProcessRequest};
use super::background::TaskOrigin;
use super::budget;
use super::process;
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::SessionDir;
use super::{Builtins, Shared};
use crate::process::ProcessKind;
use crate::sandbox::{Placement, Sandbox};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Default timeout, as in Claude Code.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a call may ask for; larger values are lowered to it.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

const SCHEMA: InputSchema = InputSchema {
    tool: "Bash",
    fields: &[
        Field {
            name: "command",
            aliases: &[],
            kind: Kind::String,
            required: true,
            description: "The command to execute",
        },
        Field {
            name: "timeout",
            aliases: &[],
            kind: Kind::Integer { min: 1 },
            required: false,
            description: "Optional timeout in milliseconds (default 120000, max 600000)",
        },
        Field {
            name: "description",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "Clear, concise description of what this command does in 5-10 words",
        },
        Field {
            name: "run_in_background",
            aliases: &["runInBackground"],
            kind: Kind::Boolean,
            required: false,
            description: "Set to true to run this command in the background. Returns at once \
                          with a task id and the files its output is written to.",
        },
        Field {
            name: "dangerouslyDisableSandbox",
            aliases: &["dangerously_disable_sandbox"],
            kind: Kind::Boolean,
            required: false,
            description: "Set to true to run this command outside the OS sandbox (only when it \
                          failed because of the sandbox; the user is asked to approve it).",
        },
    ],
};

/// The `Bash` tool.
pub struct BashTool {
    shared: Arc<Shared>,
    description: String,
    /// The tool named as the origin of the background tasks it starts (`Bash`, or
    /// `BackgroundProcess` when that tool starts its processes through this one).
    origin_tool: &'static str,
}

impl BashTool {
    /// A Bash tool using the shell, limits, session directory and background registry of
    /// `builtins`.
    pub fn new(builtins: &Builtins) -> Self {
        let shared = builtins.shared.clone();
        let description = format!(
            "Executes a command with `{shell} -c` in the session's working directory and returns \
its output (stdout, then stderr, then the exit status).\n\
\n\
- Every call starts a fresh shell: `cd` and variables do not carry over. Use absolute paths, or \
`cd dir && command`.\n\
- stdin is closed and the environment is non-interactive (no pager, no prompts, TERM=dumb): pass \
flags such as `--yes`; never start editors or interactive programs.\n\
- `timeout` is in milliseconds (default 120000, max 600000). On timeout or abort the whole process \
tree is stopped and the output so far is returned.\n\
- Output longer than {limit} bytes is shown as its head and tail; the full output is saved to a \
file whose path is given, which you can Read or Grep.\n\
- `run_in_background: true` starts long-running commands (servers, watchers, long builds) as a \
background task and returns at once with its id; read its new output with BashOutput and stop it \
with KillShell. A background task runs until it exits, is stopped, or the session ends (a \
`timeout` given with it limits its whole run); what it starts with `&` ends with it.\n\
- A call's processes end with the call: anything the command leaves running in the background \
(`server &`, `nohup cmd &`) is stopped when it finishes. Start servers and watchers with \
`run_in_background: true` instead; do not detach them with `setsid` or `disown`.\n\
- Prefer the Glob, Grep, Read, Edit and Write tools over find, grep, cat, sed and echo.",
            shell = shared.shell.display(),
            limit = shared.limit.max_bytes,
        );
        let mut description = description;
        if let Some(note) = shared.sandbox.as_ref().and_then(|s| s.tool_note()) {
            description.push('\n');
            description.push_str(&note);
        }
        BashTool {
            shared,
            description,
            origin_tool: "Bash",
        }
    }
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        SCHEMA.json_schema()
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let input = match SCHEMA.validate(input) {
            Ok(map) => Input(map),
            Err(message) => return ToolOutput::error(message),
        };
        let command = input.string("command");
        if command.trim().is_empty() {
            return ToolOutput::error("Invalid input for Bash: `command` is empty.");
        }
        if context.cancel.is_cancelled() {
            return ToolOutput::error("Aborted before start: the command was not run.");
        }
        if self.shared.processes.is_closed() {
            return ToolOutput::error("The session is ending: the command was not run.");
        }
        if !context.cwd.is_dir() {
            return ToolOutput::error(format!(
                "The working directory {} does not exist; the command was not run.",
                context.cwd.display()
            ));
        }
        let disable_sandbox = input.bool("dangerouslyDisableSandbox") == Some(true);
        let sandbox = match self.placement(&command, disable_sandbox) {
            Ok(sandbox) => sandbox,
            Err(message) => return ToolOutput::error(message),
        };
        if input.bool("run_in_background") == Some(true) {
            return self.start_background(&input, &context, sandbox);
        }
        let requested = input.int("timeout").map(|t| t as u64);
        let timeout_ms = requested.unwrap_or(DEFAULT_TIMEOUT_MS).min(MAX_TIMEOUT_MS);
        self.run(&command, timeout_ms, requested, &context, sandbox)
            .await
    }
}

/// Why the command stopped.
enum Ending {
    Exited(Option<std::process::ExitStatus>),
    TimedOut(Option<std::process::ExitStatus>),
    Aborted(Option<std::process::ExitStatus>),
    /// The session's registry asked for the group to stop (shutdown).
    SessionEnded(Option<std::process::ExitStatus>),
}

/// Said when a command left processes running in its group and they were stopped.
const LEFTOVERS_NOTE: &str = "Processes the command left running in the background (`cmd &`) \
were stopped when it finished: a Bash call's processes end with the call. Start servers and \
watchers with `run_in_background: true` instead.";

impl BashTool {
    /// This tool, naming `origin_tool` as the origin of the background tasks it starts.
    pub(super) fn with_origin(mut self, origin_tool: &'static str) -> Self {
        self.origin_tool = origin_tool;
        self
    }

    /// The sandbox `command` runs in (`Ok(None)`: unsandboxed), or why it may not run at all.
    fn placement(
        &self,
        command: &str,
        disable_requested: bool,
    ) -> Result<Option<&Sandbox>, String> {
        let Some(sandbox) = self.shared.sandbox.as_deref() else {
            return Ok(None);
        };
        match sandbox.placement(command, disable_requested) {
            Placement::Sandboxed => Ok(Some(sandbox)),
            Placement::Unsandboxed => Ok(None),
            Placement::Refused { message } => Err(message),
        }
    }

    fn start_background(
        &self,
        input: &Input,
        context: &ToolContext,
        sandbox: Option<&Sandbox>,
    ) -> ToolOutput {
        let shared = &self.shared;
        let command = input.string("command");
        let description = input.str("description").map(str::to_string);
        // An explicit `timeout` bounds a background task's whole run (its overall watchdog).
        let max_runtime = input
            .int("timeout")
            .map(|ms| Duration::from_millis(ms as u64));
        let request = ProcessRequest {
            command: &command,
            description: description.as_deref(),
            cwd: &context.cwd,
            origin: TaskOrigin::tool(self.origin_tool, &context.tool_use_id),
            max_runtime,
        };
        match process_runner::start(&shared.background, shared, request, sandbox) {
            Ok(info) => ToolOutput::with_response(
                format!(
                    "Command running in the background with ID: {id} (pid {pid}).\n\
                     Read its new output with BashOutput (bash_id: {id}); stop it with KillShell \
                     (shell_id: {id}). Full output: {stdout} and {stderr}.",
                    id = info.id,
                    pid = info
                        .pid
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "?".into()),
                    stdout = info.stdout_path.display(),
                    stderr = info.stderr_path.display()
                ),
                json!({
                    "background_task_id": info.id,
                    "backgroundTaskId": info.id,
                    "pid": info.pid,
                    "status": info.status,
                    "stdout_file": info.stdout_path,
                    "stderr_file": info.stderr_path,
                    "interrupted": false,
                    "sandboxed": sandbox.is_some(),
                }),
            ),
            Err(message) => {
                ToolOutput::error(format!("Could not start the background task: {message}"))
            }
        }
    }

    async fn run(
        &self,
        command: &str,
        timeout_ms: u64,
        requested_ms: Option<u64>,
        context: &ToolContext,
        sandbox: Option<&Sandbox>,
    ) -> ToolOutput {
        let shared = &self.shared;
        let session_dir = shared.workspace.session_dir();
        let stem = format!("bash-{}", context.tool_use_id);
        let stdout_path = match session_dir.new_running_path(&stem, "stdout") {
            Ok(path) => path,
            Err(message) => {
                return ToolOutput::error(format!("The command was not run: {message}"))
            }
        };
        let stderr_path = stdout_path.with_extension("stderr");
        let files = std::fs::File::create(&stdout_path)
            .and_then(|out| Ok((out, std::fs::File::create(&stderr_path)?)));
        let (stdout_file, stderr_file) = match files {
            Ok(files) => files,
            Err(err) => {
                return ToolOutput::error(format!(
                    "The command was not run: cannot create its output files in {}: {err}",
                    stdout_path.parent().unwrap_or(Path::new(".")).display()
                ))
            }
        };
        let started = Instant::now();
        let spawned = process::spawn_shell(
            &shared.shell,
            command,
            &context.cwd,
            &shared.env(),
            [
                std::process::Stdio::null(),
                stdout_file.into(),
                stderr_file.into(),
            ],
            sandbox,
        );
        let (mut child, pgid) = match spawned {
            Ok(child) => match child.id() {
                Some(pgid) => (child, pgid),
                None => {
                    remove_quietly(&[&stdout_path, &stderr_path]);
                    return ToolOutput::error("The shell ended before it could be tracked.");
                }
            },
            Err(err) => {
                remove_quietly(&[&stdout_path, &stderr_path]);
                return ToolOutput::error(err.describe(&shared.shell));
            }
        };
        // Registered with the session: its shutdown stops the tree, and dropping this call's
        // future (the engine gave up on it) kills it.
        let group = shared.processes.adopt(pgid, ProcessKind::ToolCall, command);
        let grace = shared.kill_grace;
        let timeout = Duration::from_millis(timeout_ms);
        let ending = tokio::select! {
            waited = child.wait() => Ending::Exited(waited.ok()),
            () = tokio::time::sleep(timeout) => {
                Ending::TimedOut(group.terminate(&mut child, grace).await)
            }
            () = context.cancel.cancelled() => {
                Ending::Aborted(group.terminate(&mut child, grace).await)
            }
            () = group.stop_requested() => {
                Ending::SessionEnded(group.terminate(&mut child, grace).await)
            }
        };
        // A call's processes end with it: what the command left running (`server &`) is
        // stopped now (after a timeout or abort the tree is already gone).
        let left_running = group.finish(grace).await;
        let elapsed = started.elapsed();
        let limit = shared.limit.max_bytes;
        let (stdout, stdout_file) = shown_output(session_dir, &stdout_path, limit);
        let (stderr, stderr_file) = shown_output(session_dir, &stderr_path, limit);
        let kept: Vec<&Path> = [&stdout_file, &stderr_file]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path)
            .collect();
        let pruned = if kept.is_empty() {
            None
        } else {
            session_dir.enforce_spill_limit(&kept).note()
        };

        let (status, timed_out, aborted) = match &ending {
            Ending::Exited(status) => (*status, false, false),
            Ending::TimedOut(status) => (*status, true, false),
            Ending::Aborted(status) | Ending::SessionEnded(status) => (*status, false, true),
        };
        let (exit_code, signal) = status
            .as_ref()
            .map(process::exit_parts)
            .unwrap_or((None, None));

        let mut content = String::new();
        push_section(&mut content, &stdout);
        push_section(&mut content, &stderr);
        let grace_ms = shared.kill_grace.as_millis();
        let note = if timed_out {
            let lowered = match requested_ms {
                Some(asked) if asked > MAX_TIMEOUT_MS => {
                    format!(" (the requested {asked} ms was lowered to the maximum)")
                }
                _ => String::new(),
            };
            Some(format!(
                "Command timed out after {timeout_ms} ms{lowered}; its process tree was stopped \
                 (SIGTERM, then SIGKILL after {grace_ms} ms). The output so far is above. For a \
                 longer command, raise `timeout` (max {MAX_TIMEOUT_MS}) or use \
                 `run_in_background: true`."
            ))
        } else if matches!(ending, Ending::SessionEnded(_)) {
            Some(
                "Command stopped because the session is ending; its process tree was stopped. The \
                 output so far is above."
                    .to_string(),
            )
        } else if aborted {
            Some(
                "Command aborted by the user; its process tree was stopped. The output so far is \
                 above."
                    .to_string(),
            )
        } else {
            match (exit_code, signal) {
                (Some(0), _) => None,
                (Some(code), _) => Some(format!("Exit code {code}")),
                (None, Some(sig)) => Some(format!(
                    "Killed by signal {sig} ({})",
                    process::signal_name(sig)
                )),
                (None, None) => Some("The command's exit status could not be read.".to_string()),
            }
        };
        let is_error = note.is_some();
        if let Some(note) = &note {
            content.push_str(note);
        }
        let leftover_note = (left_running && !timed_out && !aborted).then_some(LEFTOVERS_NOTE);
        for extra in [leftover_note, pruned.as_deref()].into_iter().flatten() {
            if !content.is_empty() && !content.ends_with('\n') {
                content.push('\n');
            }
            content.push_str(extra);
        }
        let sandbox_note = sandbox.and_then(|sandbox| {
            let mut evidence = stderr.clone();
            if stdout.contains("robota sandbox: network access") {
                evidence.push('\n');
                evidence.push_str(&stdout);
            }
            sandbox.explain_failure(&evidence)
        });
        if let Some(sandbox_note) = &sandbox_note {
            if !content.is_empty() && !content.ends_with('\n') {
                content.push('\n');
            }
            content.push_str(sandbox_note);
        }
        if content.is_empty() {
            content.push_str("(no output)");
        }
        while content.ends_with('\n') {
            content.pop();
        }
        let response = json!({
            "stdout": stdout,
            "stderr": stderr,
            "exit_code": exit_code,
            "signal": signal.map(process::signal_name),
            "interrupted": timed_out || aborted,
            "timed_out": timed_out,
            "duration_ms": elapsed.as_millis() as u64,
            "stdout_file": stdout_file,
            "stderr_file": stderr_file,
            "left_running_stopped": left_running,
            "sandboxed": sandbox.is_some(),
            "sandbox_note": sandbox_note,
        });
        ToolOutput {
            content,
            is_error,
            response,
        }
    }
}

/// The text of a finished call's output file for the result (head and tail when too long), and
/// where the full output was kept: a long output moves to the spill directory, a short one's
/// file is removed.
fn shown_output(
    session_dir: &SessionDir,
    running: &PathBuf,
    limit: usize,
) -> (String, Option<PathBuf>) {
    let Ok(cut) = budget::cut_file(running, limit) else {
        remove_quietly(&[running]);
        return (String::new(), None);
    };
    if !cut.truncated {
        remove_quietly(&[running]);
        return (cut.head, None);
    }
    // If the move fails the file stays where it is, still readable.
    let kept = session_dir
        .keep_running_file(running)
        .unwrap_or_else(|_| running.clone());
    (cut.render(Some(&kept)), Some(kept))
}

fn push_section(content: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    content.push_str(text);
    if !content.ends_with('\n') {
        content.push('\n');
    }
}

fn remove_quietly(paths: &[&PathBuf]) {
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}
