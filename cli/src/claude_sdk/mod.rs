//! The Claude Agent SDK's wire protocol (`--input-format stream-json --output-format
//! stream-json`): the SDKs (Python `claude-agent-sdk`, TypeScript
//! `@anthropic-ai/claude-agent-sdk`) run `robota` as their CLI (`cli_path` /
//! `pathToClaudeCodeExecutable`) and talk newline-delimited JSON on stdin and stdout.
//!
//! Stdin carries `user` messages (each one prompt, run in order) and the control protocol:
//! `initialize` (hooks as callback ids, SDK MCP servers), `interrupt`, `set_permission_mode`,
//! `set_model`, `mcp_status`, and `control_response`s to what robota asked; anything else gets
//! an error reply. Stdout carries `system/init`, `assistant`, `user` (tool results),
//! `stream_event` (`--include-partial-messages`), `result`, and robota's own control requests
//! (`can_use_tool`, `hook_callback`, `mcp_message`). The session is core's
//! `InteractiveSession`, opened when `initialize` arrives (its hooks and SDK servers are part of
//! the session) or, without one, at the first prompt. Stdin's end finishes the prompts already
//! sent, then exits 0.

mod host;
mod messages;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::{mpsc, OnceCell};

use robota::framework::agents::{AgentDefinition, AgentSource};
use robota::framework::interactive::{
    InteractiveEventKind, InteractiveSession, InteractiveSessionOptions, SubscriptionHandle,
};
use robota::hooks::{HookEvent, OnHookFailure};
use robota::mcp::{McpServerAction, McpServerStatus};
use robota::permissions::PermissionMode;
use robota::session::options::HookCallbackRegistration;
use robota::session::PermissionHandler;

use crate::args::Cli;
use crate::driver::{session_options, CliError};
use host::{emit, Host, SdkHook, SdkPermissions};
use messages::EventLines;

/// The longest stdin line read (a prompt with images can be large); a longer one is skipped
/// with a message on stderr.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How long an SDK MCP server may take to answer `initialize` and `tools/list`.
const SDK_MCP_START_LIMIT: Duration = Duration::from_secs(60);

/// The session, opened once (by `initialize` or the first prompt); `Err` says why it could not.
type SessionCell = OnceCell<Result<Arc<InteractiveSession>, String>>;

/// What every task of the protocol shares.
struct Protocol {
    cli: Cli,
    host: Arc<Host>,
    /// The SDK MCP servers named in `--mcp-config` (`{"type": "sdk"}`).
    sdk_servers: Vec<String>,
    session: SessionCell,
    /// The session for the permission handler's `interrupt` (set once open).
    weak_session: Arc<OnceLock<Weak<InteractiveSession>>>,
    lines: Arc<EventLines>,
    /// True once `initialize` opened the session (`--await-initialize` holds prompts until
    /// then).
    initialized: tokio::sync::watch::Sender<bool>,
    /// The control requests read from stdin and not yet answered, by their place among the
    /// control requests read. Stdin is one ordered stream: a prompt read after `initialize` (or
    /// `set_model`, `set_permission_mode`) runs in the session as that request leaves it, so a
    /// prompt waits until the requests read before it are answered, and for no later one.
    /// (The TypeScript SDK sends its first prompt right behind `initialize`, without waiting
    /// for the answer.)
    controls_in_flight: tokio::sync::watch::Sender<BTreeSet<u64>>,
    /// For each prompt that ran, by its user message id: the edit checkpoints that existed
    /// before it (`rewind_files` undoes every later one).
    checkpoints_before: Mutex<HashMap<String, HashSet<String>>>,
    /// Turns the session's background task changes into task lifecycle messages (kept for the
    /// session's life: dropping it stops them).
    task_messages: OnceLock<SubscriptionHandle>,
}

/// One prompt from stdin: its text and the id of its user message (the `uuid` the SDK gave,
/// or a fresh one).
struct Prompt {
    text: String,
    uuid: String,
    /// How many control requests were read before this prompt: it runs once they are
    /// answered.
    after_controls: u64,
}

/// One control request being answered: in `Protocol::controls_in_flight` until dropped.
struct ControlInFlight {
    in_flight: tokio::sync::watch::Sender<BTreeSet<u64>>,
    place: u64,
}

impl ControlInFlight {
    fn start(in_flight: &tokio::sync::watch::Sender<BTreeSet<u64>>, place: u64) -> Self {
        in_flight.send_modify(|pending| {
            pending.insert(place);
        });
        Self {
            in_flight: in_flight.clone(),
            place,
        }
    }
}

impl Drop for ControlInFlight {
    fn drop(&mut self) {
        self.in_flight.send_modify(|pending| {
            pending.remove(&self.place);
        });
    }
}

/// Runs the protocol until stdin ends and the prompts sent before are answered.
pub async fn run(cli: &Cli) -> Result<u8, CliError> {
    let (cli, sdk_servers) = split_sdk_servers(cli)?;
    let partial = cli.include_partial_messages;
    let protocol = Arc::new(Protocol {
        cli,
        host: Host::new(),
        sdk_servers,
        session: OnceCell::new(),
        weak_session: Arc::new(OnceLock::new()),
        lines: Arc::new(EventLines {
            session_id: OnceLock::new(),
            model: Mutex::new(String::new()),
            partial,
            asked: Mutex::default(),
            denials: Mutex::default(),
            stream: Mutex::default(),
        }),
        initialized: tokio::sync::watch::channel(false).0,
        controls_in_flight: tokio::sync::watch::channel(BTreeSet::new()).0,
        checkpoints_before: Mutex::default(),
        task_messages: OnceLock::new(),
    });
    let (prompts, queue) = mpsc::unbounded_channel::<Prompt>();
    let mut turns = tokio::spawn(run_prompts(protocol.clone(), queue));
    let inflight: Arc<Mutex<HashMap<String, tokio::task::AbortHandle>>> = Arc::default();
    // The control requests being answered: stdin's end waits for their replies.
    let mut answering = tokio::task::JoinSet::new();

    // SIGTERM (what the SDKs send when closing stdin did not end robota soon enough), SIGINT
    // and SIGHUP abort the running prompt and shut the session down, so no process it started
    // is left running.
    let mut signals = crate::signals::Signals::listen()
        .map_err(|e| CliError::run(format!("cannot handle termination signals: {e}")))?;
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    // Control requests read so far (a prompt waits for those read before it).
    let mut controls_read: u64 = 0;
    loop {
        let read = tokio::select! {
            read = next_line(&mut stdin, MAX_LINE_BYTES) => read,
            Some(signal) = signals.next() => return Ok(stop(&protocol, &turns, signal).await),
        };
        let line = match read {
            Ok(Some(Ok(line))) => line,
            Ok(Some(Err(length))) => {
                eprintln!(
                    "robota: skipped a stdin line of {length} bytes (longer than \
                     {MAX_LINE_BYTES})"
                );
                continue;
            }
            Ok(None) => break,
            Err(error) => {
                eprintln!("robota: cannot read stdin: {error}");
                break;
            }
        };
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(text) {
            Ok(message) => message,
            Err(error) => {
                eprintln!("robota: a stdin line is not JSON ({error}); it was ignored");
                continue;
            }
        };
        match message.get("type").and_then(Value::as_str) {
            Some("user") => match prompt_text(&message) {
                Ok(text) => {
                    let uuid = message
                        .get("uuid")
                        .and_then(Value::as_str)
                        .filter(|id| !id.is_empty())
                        .map_or_else(robota::message::new_id, str::to_string);
                    let _ = prompts.send(Prompt {
                        text,
                        uuid,
                        after_controls: controls_read,
                    });
                }
                Err(problem) => eprintln!("robota: a user message was ignored: {problem}"),
            },
            Some("control_request") => {
                let id = message
                    .get("request_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let request = message.get("request").cloned().unwrap_or(Value::Null);
                // Counted here, in stdin's order, so a prompt on a later line waits for it.
                let counted = ControlInFlight::start(&protocol.controls_in_flight, controls_read);
                controls_read += 1;
                // The map is locked while the task is spawned, so the task's own removal
                // (when it ends) always comes after this insertion.
                let mut running = inflight.lock().unwrap_or_else(PoisonError::into_inner);
                // Replies already sent need no waiting for.
                while answering.try_join_next().is_some() {}
                let task = {
                    let protocol = protocol.clone();
                    let inflight = inflight.clone();
                    let id = id.clone();
                    answering.spawn(async move {
                        // Dropped when the task ends, even when the SDK cancels the request.
                        let _counted = counted;
                        let reply = match protocol.control(&request).await {
                            Ok(response) => json!({"type": "control_response", "response": {
                                "subtype": "success", "request_id": id, "response": response,
                            }}),
                            Err(error) => json!({"type": "control_response", "response": {
                                "subtype": "error", "request_id": id, "error": error,
                            }}),
                        };
                        emit(&reply);
                        inflight
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&id);
                    })
                };
                running.insert(id, task);
            }
            Some("control_response") => {
                protocol
                    .host
                    .resolve(message.get("response").unwrap_or(&Value::Null));
            }
            Some("control_cancel_request") => {
                // The SDK gave up on a request of its own: stop handling it (no reply).
                if let Some(id) = message.get("request_id").and_then(Value::as_str) {
                    if let Some(task) = inflight
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(id)
                    {
                        task.abort();
                    }
                }
            }
            Some("keep_alive") => {}
            Some(other) => eprintln!("robota: a stdin message of type `{other}` was ignored"),
            None => eprintln!("robota: a stdin message without `type` was ignored"),
        }
    }
    // Stdin ended: nobody can answer a control request any more; the prompts already sent run
    // to their results, then the session ends.
    protocol.host.close();
    drop(prompts);
    tokio::select! {
        _ = async {
            // The control requests already sent are answered first: an `initialize` among
            // them configures the session that prompts held for it run in. Prompts still held
            // then run without one.
            while answering.join_next().await.is_some() {}
            protocol.initialized.send_replace(true);
            let _ = (&mut turns).await;
        } => {}
        Some(signal) = signals.next() => return Ok(stop(&protocol, &turns, signal).await),
    }
    if let Some(Ok(session)) = protocol.session.get() {
        crate::signals::shut_down(session).await;
    }
    Ok(0)
}

/// Ends the protocol on a termination signal: the running prompt is aborted and the session
/// shut down (its processes stopped); returns the signal's exit code.
async fn stop(
    protocol: &Protocol,
    turns: &tokio::task::JoinHandle<()>,
    signal: crate::signals::Termination,
) -> u8 {
    protocol.host.close();
    turns.abort();
    if let Some(Ok(session)) = protocol.session.get() {
        session.abort();
        crate::signals::shut_down(session).await;
    }
    signal.exit_code()
}

/// Runs the prompts in the order they came, each to its `result` line.
async fn run_prompts(protocol: Arc<Protocol>, mut queue: mpsc::UnboundedReceiver<Prompt>) {
    let mut announced = false;
    while let Some(prompt) = queue.recv().await {
        if protocol.cli.await_initialize {
            let mut initialized = protocol.initialized.subscribe();
            let _ = initialized.wait_for(|done| *done).await;
        }
        let _ = protocol
            .controls_in_flight
            .subscribe()
            .wait_for(|pending| {
                pending
                    .first()
                    .is_none_or(|&first| first >= prompt.after_controls)
            })
            .await;
        let started = Instant::now();
        let session = match protocol.open(&Value::Null).await {
            Ok(session) => session,
            Err(message) => {
                eprintln!("robota: {message}");
                emit(&messages::failed_result_line("", &message));
                continue;
            }
        };
        if !announced {
            announced = true;
            session.wait_for_mcp_servers(None).await;
            emit(&messages::init_line(&session));
        }
        if protocol.cli.replay_user_messages {
            emit(&messages::replayed_user_line(
                &session.get_session_id(),
                &prompt.text,
                &prompt.uuid,
            ));
        }
        if let Ok(checkpoints) = session.list_edit_checkpoints() {
            protocol
                .checkpoints_before
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(
                    prompt.uuid.clone(),
                    checkpoints.into_iter().map(|c| c.id).collect(),
                );
        }
        *protocol
            .lines
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = session.session().current_model();
        let result = match session.submit_tracked_now(&prompt.text, None) {
            Ok(ticket) => ticket.result().await,
            Err(error) => {
                emit(&messages::failed_result_line(
                    &session.get_session_id(),
                    &error.to_string(),
                ));
                continue;
            }
        };
        for line in protocol.lines.end_prompt() {
            emit(&line);
        }
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let denials = std::mem::take(
            &mut *protocol
                .lines
                .denials
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut line = messages::result_line(&session, &result, elapsed, denials);
        // Which prompt this answers: the id `rewind_files` takes.
        line["user_message_uuid"] = json!(prompt.uuid);
        line["user_message_uuids"] = json!([prompt.uuid]);
        emit(&line);
    }
}

impl Protocol {
    /// The session, opened with `initialize`'s `init` (`Value::Null` without one) the first
    /// time.
    async fn open(&self, init: &Value) -> Result<Arc<InteractiveSession>, String> {
        self.session
            .get_or_init(|| async { self.open_session(init).await })
            .await
            .clone()
    }

    async fn open_session(&self, init: &Value) -> Result<Arc<InteractiveSession>, String> {
        let agents = agent_definitions(init)?;
        let handler = match self.cli.permission_prompt_tool.as_deref() {
            None => None,
            Some("stdio") => Some(Arc::new(SdkPermissions {
                host: self.host.clone(),
                session: self.weak_session.clone(),
            }) as Arc<dyn PermissionHandler>),
            Some(other) => {
                return Err(format!(
                    "--permission-prompt-tool {other}: robota asks the SDK (`stdio`) only"
                ))
            }
        };
        let lines = self.lines.clone();
        let (mut options, _) = session_options(&self.cli, handler, move |event| {
            for line in lines.lines(&event) {
                emit(&line);
            }
        })
        .map_err(|CliError { message, .. }| message)?;
        options.agents = agents;
        self.add_hooks(&mut options, init)?;
        apply_initialize_prompt(&mut options, init)?;
        // The Python SDK names its in-process servers in `--mcp-config` (`{"type": "sdk"}`),
        // the TypeScript SDK in `initialize`'s `sdkMcpServers`.
        let mut servers = self.sdk_servers.clone();
        for name in init
            .get("sdkMcpServers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !servers.iter().any(|known| known == name) {
                servers.push(name.to_string());
            }
        }
        for name in &servers {
            // An SDK that never answers must not hold the session's opening forever.
            let server =
                tokio::time::timeout(SDK_MCP_START_LIMIT, host::sdk_mcp_server(&self.host, name))
                    .await
                    .map_err(|_| {
                        format!(
                        "SDK MCP server `{name}` did not answer initialize and tools/list within \
                         {} s",
                        SDK_MCP_START_LIMIT.as_secs()
                    )
                    })??;
            options.session.mcp_servers.push(server.into_entry());
        }
        let session = InteractiveSession::new(options).map_err(|error| error.to_string())?;
        let _ = self.weak_session.set(Arc::downgrade(&session));
        let session_id = session.get_session_id();
        let _ = self.lines.session_id.set(session_id.clone());
        let _ = self.task_messages.set(session.subscribe(move |event| {
            if let InteractiveEventKind::BackgroundTaskEvent { data } = &event.kind {
                if let Some(line) = messages::task_line(&session_id, data) {
                    emit(&line);
                }
            }
        }));
        Ok(session)
    }

    /// The hooks `initialize` registers: `{"PreToolUse": [{"matcher", "hookCallbackIds",
    /// "timeout"?, "onFailure"?}]}`, each id a callback the SDK runs.
    fn add_hooks(
        &self,
        options: &mut InteractiveSessionOptions,
        init: &Value,
    ) -> Result<(), String> {
        let Some(hooks) = init.get("hooks").and_then(Value::as_object) else {
            return Ok(());
        };
        for (event_name, matchers) in hooks {
            let event: HookEvent = event_name
                .parse()
                .map_err(|_| format!("initialize: unknown hook event `{event_name}`"))?;
            for matcher in matchers.as_array().into_iter().flatten() {
                let pattern = matcher
                    .get("matcher")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let timeout = matcher
                    .get("timeout")
                    .and_then(Value::as_f64)
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .map(Duration::from_secs_f64);
                let on_failure = match matcher.get("onFailure").and_then(Value::as_str) {
                    None => None,
                    Some("block") => Some(OnHookFailure::Block),
                    Some("continue") => Some(OnHookFailure::Allow),
                    Some(other) => {
                        return Err(format!(
                            "initialize: {event_name} hook: unknown onFailure `{other}` \
                             (block or continue)"
                        ))
                    }
                };
                OnHookFailure::resolve(event, on_failure)
                    .map_err(|e| format!("initialize: {event_name} hook: {e}"))?;
                for id in matcher
                    .get("hookCallbackIds")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let mut registration = HookCallbackRegistration::new(
                        event,
                        pattern,
                        Arc::new(SdkHook {
                            host: self.host.clone(),
                            callback_id: id.to_string(),
                        }),
                    );
                    registration.timeout = timeout;
                    registration.on_failure = on_failure;
                    options.session.hook_callbacks.push(registration);
                }
            }
        }
        Ok(())
    }

    /// Handles one control request from the SDK; the `response` object or the error message.
    async fn control(&self, request: &Value) -> Result<Value, String> {
        let subtype = request
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match subtype {
            "initialize" => {
                if self.session.initialized() {
                    return Err("the session is already initialized".into());
                }
                let mut opened_here = false;
                let result = self
                    .session
                    .get_or_init(|| async {
                        opened_here = true;
                        self.open_session(request).await
                    })
                    .await
                    .clone();
                if !opened_here {
                    return Err("the session is already initialized".into());
                }
                self.initialized.send_replace(true);
                result.map(|_| {
                    json!({
                        "commands": [],
                        "output_style": "default",
                        "available_output_styles": ["default"],
                        "models": [],
                        "account": {},
                        "hook_on_failure_supported": true,
                        "pid": std::process::id(),
                    })
                })
            }
            "interrupt" => {
                if let Some(Ok(session)) = self.session.get() {
                    session.abort();
                }
                Ok(json!({}))
            }
            "set_permission_mode" => {
                let session = self.opened()?;
                let mode: PermissionMode = request
                    .get("mode")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .parse()
                    .map_err(|e| format!("set_permission_mode: {e}"))?;
                session
                    .session()
                    .set_permission_mode(mode)
                    .map_err(|e| format!("set_permission_mode: {e}"))?;
                Ok(json!({}))
            }
            "set_model" => {
                let session = self.opened()?;
                let model = match request.get("model").and_then(Value::as_str) {
                    Some(model) if !model.trim().is_empty() => model.to_string(),
                    _ => session.session().model().to_string(),
                };
                session
                    .session()
                    .switch_model(&model)
                    .map_err(|e| format!("set_model: {e}"))?;
                Ok(json!({}))
            }
            "mcp_status" => {
                let session = self.opened()?;
                let servers: Vec<Value> = messages::init_line(&session)["mcp_servers"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                Ok(json!({"mcpServers": servers}))
            }
            "get_context_usage" => Ok(messages::context_usage(self.opened()?.as_ref())),
            "mcp_reconnect" | "mcp_toggle" => {
                let session = self.opened()?;
                let server = required_text(request, subtype, "serverName")?;
                let action = match (subtype, request.get("enabled").map(Value::as_bool)) {
                    ("mcp_reconnect", _) => McpServerAction::Reconnect,
                    (_, Some(Some(true))) => McpServerAction::Enable,
                    (_, Some(Some(false))) => McpServerAction::Disable,
                    _ => return Err("mcp_toggle: `enabled` must be true or false".into()),
                };
                let info = session
                    .session()
                    .control_mcp_server(action, server)
                    .await
                    .map_err(|e| format!("{subtype}: {e}"))?;
                // A reconnect that ends `failed` did not reconnect: the SDK is told why.
                if let (McpServerAction::Reconnect, McpServerStatus::Failed { reason }) =
                    (action, &info.status)
                {
                    return Err(format!(
                        "mcp_reconnect: server `{server}` failed to connect: {reason}"
                    ));
                }
                Ok(json!({}))
            }
            "stop_task" => {
                let task = required_text(request, subtype, "task_id")?;
                self.opened()?
                    .cancel_background_task(task)
                    .await
                    .map_err(|e| format!("stop_task: {e}"))?;
                Ok(json!({}))
            }
            "rewind_files" => {
                let message = required_text(request, subtype, "user_message_id")?;
                let dry_run = request.get("dry_run").and_then(Value::as_bool) == Some(true);
                self.rewind_files(self.opened()?.as_ref(), message, dry_run)
            }
            "" => Err("a control request without subtype".into()),
            other => Err(format!(
                "robota does not support the control request `{other}`"
            )),
        }
    }

    /// `rewind_files`: puts the files the session's tools edited back as they were before the
    /// prompt of user message `message_id` ran (its edit checkpoint and every later one are
    /// rolled back). Bash's changes are not tracked, as in Claude Code. A `dry_run` only says
    /// which files the rollback would touch.
    fn rewind_files(
        &self,
        session: &InteractiveSession,
        message_id: &str,
        dry_run: bool,
    ) -> Result<Value, String> {
        let before = self
            .checkpoints_before
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(message_id)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "rewind_files: no prompt of this session has user message id \
                     `{message_id}` (a prompt's id is the `uuid` of the user message the SDK \
                     sent, echoed with --replay-user-messages)"
                )
            })?;
        let checkpoints = session
            .list_edit_checkpoints()
            .map_err(|e| format!("rewind_files: {e}"))?;
        let Some(first) = checkpoints.iter().find(|c| !before.contains(&c.id)) else {
            // Nothing was edited since: the files already are as they were.
            return Ok(json!({"canRewind": true, "filesChanged": []}));
        };
        if dry_run {
            // The files of every checkpoint the rollback would undo.
            let mut files = std::collections::BTreeSet::new();
            for checkpoint in checkpoints.iter().filter(|c| !before.contains(&c.id)) {
                let inspection = session
                    .inspect_edit_checkpoint(&checkpoint.id)
                    .map_err(|e| format!("rewind_files: {e}"))?;
                files.extend(inspection.files.into_iter().map(|file| file.display_path));
            }
            return Ok(json!({"canRewind": true, "filesChanged": files}));
        }
        let report = session
            .rollback_edit_checkpoint(&first.id)
            .map_err(|e| format!("rewind_files: {e}"))?;
        let changed: Vec<&String> = report.restored.iter().chain(&report.deleted).collect();
        if !report.problems.is_empty() {
            return Err(format!(
                "rewind_files: put back {} file(s), but not: {}",
                changed.len(),
                report.problems.join("; ")
            ));
        }
        Ok(json!({"canRewind": true, "filesChanged": changed}))
    }

    /// The open session, for requests that need one.
    fn opened(&self) -> Result<Arc<InteractiveSession>, String> {
        match self.session.get() {
            Some(Ok(session)) => Ok(session.clone()),
            Some(Err(message)) => Err(message.clone()),
            None => Err("no session yet: send initialize or a user message first".into()),
        }
    }
}

/// The fields of an SDK agent definition robota honours; any other is refused, since leaving it
/// out would change what the agent does.
const AGENT_FIELDS: [&str; 7] = [
    "description",
    "prompt",
    "tools",
    "disallowedTools",
    "model",
    "maxTurns",
    "permissionMode",
];

/// The agents `initialize` defines (`agents: {name: {description, prompt, tools?,
/// disallowedTools?, model?, maxTurns?, permissionMode?}}`), for the session's Task tool.
fn agent_definitions(init: &Value) -> Result<Vec<AgentDefinition>, String> {
    let agents = match init.get("agents") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(agents)) => agents,
        Some(other) => {
            return Err(format!(
                "initialize: `agents` must be an object, not {other}"
            ))
        }
    };
    let mut definitions = Vec::new();
    for (name, agent) in agents {
        let problem = |what: String| format!("initialize: agent `{name}`: {what}");
        let Value::Object(fields) = agent else {
            return Err(problem(format!("must be an object, not {agent}")));
        };
        if let Some(unknown) = fields
            .iter()
            .find(|(key, value)| !value.is_null() && !AGENT_FIELDS.contains(&key.as_str()))
        {
            return Err(problem(format!(
                "robota does not support `{}` in an agent definition (it takes {})",
                unknown.0,
                AGENT_FIELDS.join(", ")
            )));
        }
        let text = |key: &str| -> Result<Option<String>, String> {
            match fields.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(other) => Err(problem(format!("`{key}` must be a string, not {other}"))),
            }
        };
        let names = |key: &str| -> Result<Option<Vec<String>>, String> {
            match fields.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| {
                        item.as_str().map(str::to_string).ok_or_else(|| {
                            problem(format!("`{key}` must list tool names, not {item}"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(other) => Err(problem(format!("`{key}` must be a list, not {other}"))),
            }
        };
        let max_turns = match fields.get("maxTurns") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .and_then(|turns| u32::try_from(turns).ok())
                    .ok_or_else(|| problem(format!("`maxTurns` must be a count, not {value}")))?,
            ),
        };
        let permission_mode = text("permissionMode")?
            .map(|mode| mode.parse::<PermissionMode>())
            .transpose()
            .map_err(|e| problem(format!("`permissionMode`: {e}")))?;
        definitions.push(AgentDefinition {
            name: name.clone(),
            description: text("description")?
                .ok_or_else(|| problem("`description` is missing".into()))?,
            system_prompt: text("prompt")?.ok_or_else(|| problem("`prompt` is missing".into()))?,
            tools: names("tools")?,
            disallowed_tools: names("disallowedTools")?.unwrap_or_default(),
            // `inherit` is the session's model, which is robota's default for a subagent.
            model: text("model")?.filter(|model| model != "inherit"),
            max_turns,
            permission_mode,
            source: AgentSource::Host,
        });
    }
    Ok(definitions)
}

/// The string field `field` of a control request, which `subtype` needs.
fn required_text<'a>(request: &'a Value, subtype: &str, field: &str) -> Result<&'a str, String> {
    request
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{subtype}: no `{field}` string"))
}

/// What `initialize` may say about the prompt (the TypeScript SDK sends these here rather than
/// as flags): `systemPrompt` (a string or a list of strings; an object is a preset, robota's own
/// prompt), `appendSystemPrompt`, and
/// `jsonSchema` (the final answer's JSON Schema).
fn apply_initialize_prompt(
    options: &mut InteractiveSessionOptions,
    init: &Value,
) -> Result<(), String> {
    let text = |key: &str| -> Result<Option<String>, String> {
        match init.get(key) {
            // An object is a preset (robota's own prompt).
            None | Some(Value::Null | Value::Object(_)) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|part| {
                    part.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("initialize: `{key}` must hold strings"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|parts| Some(parts.join("\n\n"))),
            Some(other) => Err(format!(
                "initialize: `{key}` must be a string or a list of strings, not {other}"
            )),
        }
    };
    if let Some(prompt) = text("systemPrompt")?.filter(|p| !p.is_empty()) {
        options.session.system_prompt = Some(prompt);
    }
    if let Some(append) = text("appendSystemPrompt")?.filter(|p| !p.is_empty()) {
        options.session.append_system_prompt =
            Some(match options.session.append_system_prompt.take() {
                Some(existing) => format!("{existing}\n\n{append}"),
                None => append,
            });
    }
    match init.get("jsonSchema") {
        None | Some(Value::Null) => {}
        Some(schema @ Value::Object(_)) => {
            options.session.output_format =
                Some(robota::session::structured_output::OutputFormat::json_schema(schema.clone()));
        }
        Some(other) => {
            return Err(format!(
                "initialize: `jsonSchema` must be a JSON Schema object, not {other}"
            ))
        }
    }
    Ok(())
}

/// The prompt of a `user` message: its content string, or its text blocks joined.
fn prompt_text(message: &Value) -> Result<String, String> {
    match message.pointer("/message/content") {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => texts.push(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    ),
                    Some(other) => {
                        return Err(format!(
                            "content blocks of type `{other}` are not supported"
                        ))
                    }
                    None => return Err("a content block without `type`".into()),
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err("no `message.content` string or list".into()),
    }
}

/// Takes the SDK's in-process servers (`{"type": "sdk"}`) out of inline `--mcp-config` JSON:
/// the arguments without them, and their names.
fn split_sdk_servers(cli: &Cli) -> Result<(Cli, Vec<String>), CliError> {
    let mut cli = cli.clone();
    let mut names = Vec::new();
    for argument in &mut cli.mcp_config {
        let Ok(Value::Object(mut config)) = serde_json::from_str::<Value>(argument) else {
            continue;
        };
        let Some(Value::Object(servers)) = config.get_mut("mcpServers") else {
            continue;
        };
        let sdk: Vec<String> = servers
            .iter()
            .filter(|(_, server)| server.get("type").and_then(Value::as_str) == Some("sdk"))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &sdk {
            servers.remove(name);
        }
        names.extend(sdk);
        *argument = Value::Object(config).to_string();
    }
    Ok((cli, names))
}

/// Reads one line (without its `\n`) of at most `limit` bytes: `None` at the end, `Err(length)`
/// for a longer line (read to its end and dropped, so memory stays bounded).
async fn next_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    limit: usize,
) -> std::io::Result<Option<Result<Vec<u8>, usize>>> {
    let mut line = Vec::new();
    let mut length = 0usize;
    let mut too_long = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (length, too_long) {
                (0, _) => None,
                (_, true) => Some(Err(length)),
                (_, false) => Some(Ok(line)),
            });
        }
        let (chunk, consumed, ended) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (&buffer[..end], end + 1, true),
            None => (buffer, buffer.len(), false),
        };
        length = length.saturating_add(chunk.len());
        if !too_long {
            if line.len() + chunk.len() > limit {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        reader.consume(consumed);
        if ended {
            return Ok(Some(if too_long { Err(length) } else { Ok(line) }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_over_long_line_is_skipped_and_the_next_one_read() {
        let input = format!("{}\n{{\"type\":\"user\"}}\nlast", "x".repeat(100));
        let mut reader = tokio::io::BufReader::with_capacity(16, input.as_bytes());
        assert_eq!(next_line(&mut reader, 50).await.ok(), Some(Some(Err(100))));
        assert_eq!(
            next_line(&mut reader, 50).await.ok(),
            Some(Some(Ok(b"{\"type\":\"user\"}".to_vec())))
        );
        assert_eq!(
            next_line(&mut reader, 50).await.ok(),
            Some(Some(Ok(b"last".to_vec())))
        );
        assert_eq!(next_line(&mut reader, 50).await.ok(), Some(None));
    }

    #[test]
    fn a_prompt_is_the_content_string_or_its_text_blocks() {
        let message = |content: Value| json!({"type": "user", "message": {"content": content}});
        assert_eq!(prompt_text(&message(json!("hi"))), Ok("hi".to_string()));
        assert_eq!(
            prompt_text(&message(json!([
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"}
            ]))),
            Ok("a\nb".to_string())
        );
        let image = prompt_text(&message(json!([{"type": "image", "source": {}}])));
        assert!(image.is_err_and(|e| e.contains("`image`")));
        assert!(prompt_text(&json!({"type": "user"})).is_err());
    }

    #[test]
    fn sdk_servers_are_taken_out_of_inline_mcp_config() {
        use clap::Parser;
        let config = json!({"mcpServers": {
            "calc": {"type": "sdk", "name": "calc"},
            "files": {"command": "files-server"},
        }});
        let cli = Cli::parse_from(["robota", "--mcp-config", &config.to_string()]);
        let (cli, names) = split_sdk_servers(&cli).expect("split");
        assert_eq!(names, ["calc"]);
        let rest: Value = serde_json::from_str(&cli.mcp_config[0]).expect("JSON");
        assert_eq!(
            rest,
            json!({"mcpServers": {"files": {"command": "files-server"}}})
        );
    }
}
