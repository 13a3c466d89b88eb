//! `NativeSession`: an `InteractiveSession` for Swift, with a [`NativePrompt`] per submitted
//! prompt (awaited for how it ended, cancellable on its own) and [`NativeEvents`], a pull
//! subscription read in batches so a fast stream does not cost one FFI round trip per event.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use robota::api::{
    attach_host_store, host_mcp_authorization_handler, HostCommand, HostHookSpec,
    HostMcpServerBuilder, HostPermissionHandler, HostProvider, HostProviderInfo, HostStoreFunction,
    HostTool, HostToolSpec, ProviderConfig, SessionConfig,
};
use robota::framework::agents::SubagentRequest;
use robota::framework::commands::{CommandModule, CommandSource, SystemCommand};
use robota::framework::interactive::{
    InteractiveEvent, InteractiveEventKind, InteractiveSession, InteractiveSessionOptions,
    PromptEnd, PromptResult, PromptTicket, SubmitStatus, Subscription,
};
use robota::hooks::{HookEvent, SessionEndReason};
use robota::provider::Provider;
use robota::session::SessionOptions;
use robota::tools::builtins::LogStream;
use serde_json::{json, Value};

use crate::error::RobotaError;
use crate::host::{HostCallback, SwiftHostFunction};
use crate::runtime::{on_runtime, runtime};

/// A model provider: a `robota::api::ProviderConfig` as JSON, or, with `function`, a provider
/// written in Swift (`json` is then its `HostProviderInfo`).
#[derive(uniffi::Record)]
pub struct NativeProvider {
    /// The configuration (or, for a Swift provider, the info) as JSON.
    pub json: String,
    /// The Swift provider's model call.
    pub function: Option<Arc<dyn HostCallback>>,
}

/// A Swift tool: its `HostToolSpec` as JSON and the function that runs it.
#[derive(uniffi::Record)]
pub struct NativeTool {
    /// `{name, description, input_schema, read_only}`.
    pub spec_json: String,
    /// Runs the tool.
    pub function: Arc<dyn HostCallback>,
}

/// A Swift hook: its `HostHookSpec` as JSON and the function that runs it.
#[derive(uniffi::Record)]
pub struct NativeHook {
    /// `{event, matcher?, timeout_ms?, name?}`.
    pub spec_json: String,
    /// Runs the hook.
    pub function: Arc<dyn HostCallback>,
}

/// A Swift slash command: its `CommandDescriptor` as JSON and the function that runs it.
#[derive(uniffi::Record)]
pub struct NativeCommand {
    /// `{name, description, aliases?, …}`.
    pub descriptor_json: String,
    /// Runs the command.
    pub function: Arc<dyn HostCallback>,
}

/// A module of Swift slash commands.
#[derive(uniffi::Record)]
pub struct NativeCommandModule {
    /// The module's name.
    pub name: String,
    /// Its `CommandSource` as JSON (`"project"` when absent).
    pub source_json: Option<String>,
    /// Its commands.
    pub commands: Vec<NativeCommand>,
}

/// A tool of an in-process MCP server: its `HostMcpToolSpec` as JSON and the function that
/// answers its calls (`{server, tool, input}`).
#[derive(uniffi::Record)]
pub struct NativeMcpTool {
    /// `{name, description, input_schema, annotations?}`.
    pub spec_json: String,
    /// Runs the tool.
    pub function: Arc<dyn HostCallback>,
}

/// An MCP server whose tools are Swift functions, run inside the session's process.
#[derive(uniffi::Record)]
pub struct NativeMcpServer {
    /// The server's name (the model sees its tools as `mcp__<name>__<tool>`).
    pub name: String,
    /// The version it reports (`1.0.0` when absent).
    pub version: Option<String>,
    /// Its tools.
    pub tools: Vec<NativeMcpTool>,
}

/// The host extensions a session or a query runs with.
#[derive(uniffi::Record)]
pub struct NativeExtensions {
    /// Tools written in Swift, beside the built-ins.
    pub tools: Vec<NativeTool>,
    /// Decides the tool calls the permission rules ask about.
    pub permission_handler: Option<Arc<dyn HostCallback>>,
    /// In-process hooks.
    pub hooks: Vec<NativeHook>,
    /// In-process MCP servers, beside those of the configuration.
    pub mcp_servers: Vec<NativeMcpServer>,
    /// The browser step of remote MCP servers' OAuth: called with `{server, url}`.
    pub mcp_authorization: Option<Arc<dyn HostCallback>>,
    /// A session store written in Swift: answers the engine's store operations
    /// (`robota::api::HostStoreFunction`); sessions only.
    #[uniffi(default = None)]
    pub session_store: Option<Arc<dyn HostCallback>>,
}

/// Everything a session is made of.
#[derive(uniffi::Record)]
pub struct NativeSessionOptions {
    /// The plain options: a `robota::api::SessionConfig` as JSON (`""`: all defaults).
    pub config_json: String,
    /// The model provider.
    pub provider: NativeProvider,
    /// The host's tools, permission handler and hooks.
    pub extensions: NativeExtensions,
    /// Slash command modules written in Swift.
    pub command_modules: Vec<NativeCommandModule>,
    /// Keep the built-in commands beside `command_modules`.
    pub builtin_commands: bool,
    /// Bound of each event subscriber's queue before `text_delta`s are coalesced (default 256).
    pub event_buffer: Option<u32>,
}

/// The provider `provider` describes. Call inside the runtime: HTTP clients are built here.
pub(crate) fn build_provider(provider: NativeProvider) -> Result<Arc<dyn Provider>, RobotaError> {
    match provider.function {
        None => Ok(ProviderConfig::from_json(&provider.json)?.build()?),
        Some(function) => {
            let info = serde_json::from_str(&provider.json)
                .map_err(|e| RobotaError::InvalidJson {
                    message: format!("invalid provider info: {e}"),
                })
                .and_then(|value| Ok(HostProviderInfo::from_json_value(value)?))?;
            Ok(Arc::new(HostProvider::new(
                info,
                SwiftHostFunction::shared(function),
            )))
        }
    }
}

fn parse_json(text: &str, what: &str) -> Result<Value, RobotaError> {
    serde_json::from_str(text).map_err(|e| RobotaError::InvalidJson {
        message: format!("invalid {what}: {e}"),
    })
}

/// Adds the host's tools, permission handler and hooks to `options`.
pub(crate) fn add_extensions(
    options: &mut SessionOptions,
    extensions: NativeExtensions,
) -> Result<(), RobotaError> {
    let NativeExtensions {
        tools,
        permission_handler,
        hooks,
        mcp_servers,
        mcp_authorization,
        session_store,
    } = extensions;
    if let Some(store) = session_store {
        attach_host_store(
            options,
            Arc::new(HostStoreFunction::new(
                "Swift",
                SwiftHostFunction::shared(store),
            )),
        )?;
    }
    for tool in tools {
        let spec = HostToolSpec::from_json_value(parse_json(&tool.spec_json, "tool spec")?)?;
        options.extra_tools.push(Arc::new(HostTool::new(
            spec,
            SwiftHostFunction::shared(tool.function),
        )));
    }
    if let Some(handler) = permission_handler {
        options.permission_handler = Some(HostPermissionHandler::new(SwiftHostFunction::shared(
            handler,
        )));
    }
    for hook in hooks {
        let spec = parse_json(&hook.spec_json, "hook spec")?;
        // The engine's own event names, with the list to pick from when one is unknown.
        if let Some(Err(e)) = spec
            .get("event")
            .and_then(Value::as_str)
            .map(HookEvent::from_str)
        {
            return Err(RobotaError::invalid_argument(e.to_string()));
        }
        let spec = HostHookSpec::from_json_value(spec)?;
        options
            .hook_callbacks
            .push(spec.registration(SwiftHostFunction::shared(hook.function)));
    }
    for server in mcp_servers {
        let mut builder = HostMcpServerBuilder::new(server.name, server.version);
        for tool in server.tools {
            let spec = parse_json(&tool.spec_json, "MCP tool spec")?;
            builder.add_tool(spec, SwiftHostFunction::shared(tool.function))?;
        }
        options.mcp_servers.push(builder.entry()?);
    }
    if let Some(open) = mcp_authorization {
        options.mcp_authorization_handler = Some(host_mcp_authorization_handler(
            SwiftHostFunction::shared(open),
        ));
    }
    Ok(())
}

fn build_command_modules(
    modules: Vec<NativeCommandModule>,
) -> Result<Vec<CommandModule>, RobotaError> {
    let mut built_modules = Vec::new();
    for module in modules {
        let source = match module.source_json.as_deref() {
            None => CommandSource::Project,
            Some(text) => {
                serde_json::from_value(parse_json(text, "command source")?).map_err(|e| {
                    RobotaError::invalid_argument(format!(
                        "command module `{}`: bad source: {e}",
                        module.name
                    ))
                })?
            }
        };
        let mut commands: Vec<Arc<dyn SystemCommand>> = Vec::new();
        for command in module.commands {
            let descriptor = parse_json(&command.descriptor_json, "command descriptor")?;
            commands.push(Arc::new(HostCommand::from_json_value(
                descriptor,
                SwiftHostFunction::shared(command.function),
            )?));
        }
        built_modules.push(CommandModule {
            name: module.name,
            source,
            commands,
            session_requirements: Vec::new(),
        });
    }
    Ok(built_modules)
}

/// The `complete` / `refused` / `truncated` / `interrupted` / `error` event that ended a
/// prompt, as JSON (`{"type": "cancelled"}` when it never ran).
fn final_event(session: &InteractiveSession, end: PromptEnd) -> Result<String, RobotaError> {
    let PromptEnd { result, event_seq } = end;
    if result == PromptResult::Cancelled {
        return Ok(json!({"type": "cancelled"}).to_string());
    }
    let kind = result.event();
    let event = InteractiveEvent {
        session_id: session.get_session_id(),
        seq: event_seq.unwrap_or(0),
        kind,
    };
    to_json(&event)
}

fn subagent_request(text: &str) -> Result<SubagentRequest, RobotaError> {
    serde_json::from_str(text).map_err(|e| RobotaError::InvalidJson {
        message: format!("invalid subagent request: {e}"),
    })
}

fn to_json(value: &impl serde::Serialize) -> Result<String, RobotaError> {
    serde_json::to_string(value)
        .map_err(|e| RobotaError::internal(format!("cannot encode a result: {e}")))
}

/// An interactive session (internal; the Swift API is `Robota.InteractiveSession`).
#[derive(uniffi::Object)]
pub struct NativeSession {
    session: Arc<InteractiveSession>,
}

#[uniffi::export]
impl NativeSession {
    /// Creates a session (nothing runs until the first prompt).
    #[uniffi::constructor]
    pub fn new(options: NativeSessionOptions) -> Result<Arc<Self>, RobotaError> {
        let config = SessionConfig::from_json(&options.config_json)?;
        let skills = config.skill_registrations();
        let edit_checkpoints = config.edit_checkpoints_enabled();
        let commands = config.command_registrations();
        let _runtime = runtime().enter();
        let provider = build_provider(options.provider)?;
        let mut session = config.into_session_options(provider)?;
        add_extensions(&mut session, options.extensions)?;
        let mut interactive = InteractiveSessionOptions::new(session);
        interactive.skills = skills;
        interactive.edit_checkpoints = edit_checkpoints;
        interactive.commands = commands;
        let mut modules = build_command_modules(options.command_modules)?;
        if options.builtin_commands {
            interactive.command_modules.append(&mut modules);
        } else {
            interactive.command_modules = modules;
        }
        if let Some(buffer) = options.event_buffer {
            if buffer == 0 {
                return Err(RobotaError::invalid_argument(
                    "`event_buffer` must be at least 1",
                ));
            }
            interactive.event_buffer = usize::try_from(buffer).unwrap_or(usize::MAX);
        }
        let session = InteractiveSession::new(interactive)?;
        Ok(Arc::new(NativeSession { session }))
    }

    /// Submits a prompt: it starts at once or is queued (one may wait).
    pub async fn submit(
        &self,
        input: String,
        display_input: Option<String>,
    ) -> Result<Arc<NativePrompt>, RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move {
            let ticket = session
                .submit_tracked(&input, display_input.as_deref())
                .await?;
            Ok(NativePrompt::new(session, ticket))
        })
        .await
    }

    /// Submits a prompt whose final answer must match `output_format_json` (`{"type":
    /// "json_schema", "schema": {...}}`) instead of the session's `output_format`; a malformed
    /// format throws and nothing is queued.
    pub async fn submit_with_output_format(
        &self,
        input: String,
        display_input: Option<String>,
        output_format_json: String,
    ) -> Result<Arc<NativePrompt>, RobotaError> {
        let format: serde_json::Value =
            serde_json::from_str(&output_format_json).map_err(|e| RobotaError::InvalidJson {
                message: format!("`outputFormat` is not JSON: {e}"),
            })?;
        let session = Arc::clone(&self.session);
        on_runtime(async move {
            let ticket = robota::api::submit_prompt(
                &session,
                &input,
                display_input.as_deref(),
                None,
                Some(format),
            )?;
            Ok(NativePrompt::new(session, ticket))
        })
        .await
    }

    /// Asks the model to go on with an answer cut off at the output token limit (a prompt that
    /// ended `truncated`): submits core's continue prompt, shown as `(continue)`.
    pub async fn continue_answer(&self) -> Result<Arc<NativePrompt>, RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move {
            let ticket = session.continue_answer().await?;
            Ok(NativePrompt::new(session, ticket))
        })
        .await
    }

    /// Aborts the running prompt and drops the queued one.
    pub fn abort(&self) -> Result<(), RobotaError> {
        self.session.abort();
        Ok(())
    }

    /// Drops the queued prompt; returns it (as displayed).
    pub fn cancel_queue(&self) -> Result<Option<String>, RobotaError> {
        Ok(self.session.cancel_queue())
    }

    /// Waits until no prompt is running or queued.
    pub async fn wait_idle(&self) -> Result<(), RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move {
            session.wait_idle().await;
            Ok(())
        })
        .await
    }

    /// Runs a slash command; returns its `CommandResult` as JSON.
    pub async fn execute_command(&self, name: String, args: String) -> Result<String, RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move { to_json(&session.execute_command(&name, &args).await?) }).await
    }

    /// The commands users can run, as a JSON array.
    pub fn list_commands(&self) -> Result<String, RobotaError> {
        to_json(&self.session.list_commands()?)
    }

    /// The skills of the session (with where each came from) as a JSON array.
    pub fn list_skills(&self) -> Result<String, RobotaError> {
        to_json(&self.session.list_skills())
    }

    /// The plugins of the session's user and project (state, parts, marketplaces, problems) as
    /// a JSON object.
    pub fn list_plugins(&self) -> Result<String, RobotaError> {
        to_json(&self.session.list_plugins())
    }

    /// The MCP servers of the session (status, tools, prompts) as a JSON array.
    pub fn list_mcp_servers(&self) -> Result<String, RobotaError> {
        to_json(&self.session.list_mcp_servers())
    }

    /// Waits until the MCP servers, which connect in the background, are done starting, at most
    /// `timeout_ms` (`None`: as long as the start-up timeout allows). True when none is still
    /// starting.
    pub async fn wait_for_mcp_servers(&self, timeout_ms: Option<u64>) -> bool {
        let session = Arc::clone(&self.session);
        let timeout = timeout_ms.map(Duration::from_millis);
        on_runtime(async move { Ok(session.wait_for_mcp_servers(timeout).await) })
            .await
            .unwrap_or(false)
    }

    /// The background tasks (oldest first) as a JSON array.
    pub fn list_background_tasks(&self) -> Result<String, RobotaError> {
        to_json(&self.session.list_background_tasks())
    }

    /// One background task as JSON; `None` for an unknown id.
    pub fn get_background_task(&self, id: String) -> Result<Option<String>, RobotaError> {
        self.session
            .get_background_task(&id)
            .map(|task| to_json(&task))
            .transpose()
    }

    /// Stops a running task with its whole process tree; returns it once stopped, as JSON.
    pub async fn cancel_background_task(&self, id: String) -> Result<String, RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move { to_json(&session.cancel_background_task(&id).await?) }).await
    }

    /// Waits until the task has ended, at most `timeout_ms`; returns it as it is then.
    pub async fn wait_background_task(
        &self,
        id: String,
        timeout_ms: u64,
    ) -> Result<String, RobotaError> {
        let session = Arc::clone(&self.session);
        let timeout = Duration::from_millis(timeout_ms);
        on_runtime(async move { to_json(&session.wait_background_task(&id, timeout).await?) }).await
    }

    /// Removes an ended task from the list (its log files stay); returns it as JSON.
    pub fn close_background_task(&self, id: String) -> Result<String, RobotaError> {
        to_json(&self.session.close_background_task(&id)?)
    }

    /// Writes `input` to a running task's standard input.
    pub async fn send_background_task(&self, id: String, input: String) -> Result<(), RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move { Ok(session.send_background_task(&id, &input).await?) }).await
    }

    /// A page of a task's output file (`stream`: `stdout` or `stderr`), as JSON.
    pub fn read_background_task_log(
        &self,
        id: String,
        stream: String,
        offset: u64,
        max_bytes: u64,
    ) -> Result<String, RobotaError> {
        let stream: LogStream =
            serde_json::from_value(Value::String(stream.clone())).map_err(|_| {
                RobotaError::invalid_argument(format!(
                    "unknown log stream `{stream}`: use `stdout` or `stderr`"
                ))
            })?;
        let max_bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        to_json(
            &self
                .session
                .read_background_task_log(&id, stream, offset, max_bytes)?,
        )
    }

    /// Runs a subagent to its final report (`request_json`: a `SubagentRequest`, `{prompt,
    /// agent_type?, isolation?, model?}`); the report as JSON.
    pub async fn run_subagent(&self, request_json: String) -> Result<String, RobotaError> {
        let request = subagent_request(&request_json)?;
        let session = Arc::clone(&self.session);
        on_runtime(async move { to_json(&session.run_subagent(request).await?) }).await
    }

    /// Starts a subagent as a background task and returns the task at once, as JSON.
    pub fn start_background_subagent(&self, request_json: String) -> Result<String, RobotaError> {
        let request = subagent_request(&request_json)?;
        // The subagent runs on a task of the runtime.
        let _runtime = runtime().enter();
        to_json(&self.session.start_background_subagent(request)?)
    }

    /// The edit checkpoints (one per prompt that changed files, oldest first) as a JSON array.
    pub fn list_edit_checkpoints(&self) -> Result<String, RobotaError> {
        to_json(&self.session.list_edit_checkpoints()?)
    }

    /// One edit checkpoint with its files and restore/rollback ranges, as JSON.
    pub fn inspect_edit_checkpoint(&self, id: String) -> Result<String, RobotaError> {
        to_json(&self.session.inspect_edit_checkpoint(&id)?)
    }

    /// Restores files to checkpoint `id` (`rollback`: through it); the report as JSON.
    pub fn restore_edit_checkpoint(
        &self,
        id: String,
        rollback: bool,
    ) -> Result<String, RobotaError> {
        let report = if rollback {
            self.session.rollback_edit_checkpoint(&id)?
        } else {
            self.session.restore_edit_checkpoint(&id)?
        };
        to_json(&report)
    }

    /// Shuts the session down (aborts any run; SessionEnd hooks fire once). `reason` is a
    /// `SessionEndReason` name (`other` when absent).
    pub async fn shutdown(&self, reason: Option<String>) -> Result<(), RobotaError> {
        let reason = match reason.as_deref() {
            None => SessionEndReason::Other,
            Some(text) => serde_json::from_value::<SessionEndReason>(Value::String(text.into()))
                .map_err(|e| {
                    RobotaError::invalid_argument(format!("unknown shutdown reason `{text}`: {e}"))
                })?,
        };
        let session = Arc::clone(&self.session);
        on_runtime(async move {
            session.shutdown(reason).await;
            Ok(())
        })
        .await
    }

    /// Compacts the conversation now; returns the summary as JSON.
    pub async fn compact(&self, instructions: Option<String>) -> Result<String, RobotaError> {
        let session = Arc::clone(&self.session);
        on_runtime(async move { to_json(&session.compact(instructions).await?) }).await
    }

    /// True while a prompt runs (or one is queued to run next).
    pub fn is_executing(&self) -> Result<bool, RobotaError> {
        Ok(self.session.is_executing())
    }

    /// The queued prompt as displayed.
    pub fn get_pending_prompt(&self) -> Result<Option<String>, RobotaError> {
        Ok(self.session.get_pending_prompt())
    }

    /// The chat messages as a JSON array.
    pub fn get_messages(&self) -> Result<String, RobotaError> {
        to_json(&self.session.get_messages())
    }

    /// The full history (messages and event entries) as a JSON array.
    pub fn get_full_history(&self) -> Result<String, RobotaError> {
        to_json(&self.session.get_full_history())
    }

    /// How full the context window is, as JSON.
    pub fn get_context_state(&self) -> Result<String, RobotaError> {
        to_json(&self.session.get_context_state())
    }

    /// The answer text of the current prompt so far.
    pub fn get_streaming_text(&self) -> Result<String, RobotaError> {
        Ok(self.session.get_streaming_text())
    }

    /// The tool calls of the current prompt, as a JSON array.
    pub fn get_active_tools(&self) -> Result<String, RobotaError> {
        to_json(&self.session.get_active_tools())
    }

    /// The session's name.
    pub fn get_name(&self) -> Result<Option<String>, RobotaError> {
        Ok(self.session.get_name())
    }

    /// Names the session (`None` clears the name); refused once shut down.
    pub fn set_name(&self, name: Option<String>) -> Result<(), RobotaError> {
        Ok(self.session.set_name(name)?)
    }

    /// The session id.
    pub fn get_session_id(&self) -> Result<String, RobotaError> {
        Ok(self.session.get_session_id())
    }

    /// A new pull subscription; events emitted from now on are queued for it.
    pub fn subscribe(&self) -> Result<Arc<NativeEvents>, RobotaError> {
        Ok(Arc::new(NativeEvents {
            subscription: Arc::new(self.session.subscribe_pull()),
            closed: Arc::new(AtomicBool::new(false)),
        }))
    }
}

/// A submitted prompt (internal; see `InteractiveSession.submit`).
#[derive(uniffi::Object)]
pub struct NativePrompt {
    session: Arc<InteractiveSession>,
    status: SubmitStatus,
    id: u64,
    ticket: Mutex<Option<PromptTicket>>,
}

impl NativePrompt {
    fn new(session: Arc<InteractiveSession>, ticket: PromptTicket) -> Arc<Self> {
        Arc::new(NativePrompt {
            session,
            status: ticket.status(),
            id: ticket.id(),
            ticket: Mutex::new(Some(ticket)),
        })
    }
}

#[uniffi::export]
impl NativePrompt {
    /// `true` when the prompt was queued behind a running one.
    pub fn was_queued(&self) -> Result<bool, RobotaError> {
        Ok(self.status == SubmitStatus::Queued)
    }

    /// Waits until the prompt ended; returns the event that ended it as JSON (`complete`,
    /// `refused`, `truncated`, `interrupted`, `error`, or `{"type": "cancelled"}` when it never
    /// ran). Once only.
    pub async fn end(&self) -> Result<String, RobotaError> {
        let ticket = self
            .ticket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                RobotaError::invalid_argument("this prompt's end was already awaited")
            })?;
        let session = Arc::clone(&self.session);
        on_runtime(async move {
            let end = ticket.end().await;
            final_event(&session, end)
        })
        .await
    }

    /// Cancels this prompt only: dropped when queued, aborted when running.
    pub fn cancel(&self) -> Result<(), RobotaError> {
        self.session.cancel_prompt(self.id);
        Ok(())
    }
}

/// One session event. A `text_delta` (by far the most frequent) carries only its `text`, so
/// the fast path costs no JSON on either side; every other event is its JSON.
#[derive(uniffi::Record)]
pub struct NativeEvent {
    /// The per-session sequence number.
    pub seq: u64,
    /// The session.
    pub session_id: String,
    /// The event's `type`.
    pub event_type: String,
    /// A `text_delta`'s text.
    pub text: Option<String>,
    /// Any other event, as the engine serializes it.
    pub json: Option<String>,
}

impl NativeEvent {
    fn new(event: InteractiveEvent) -> Result<Self, RobotaError> {
        let event_type = event.kind.type_name().to_string();
        if let InteractiveEventKind::TextDelta { text } = event.kind {
            return Ok(NativeEvent {
                seq: event.seq,
                session_id: event.session_id,
                event_type,
                text: Some(text),
                json: None,
            });
        }
        Ok(NativeEvent {
            seq: event.seq,
            session_id: event.session_id.clone(),
            event_type,
            text: None,
            json: Some(to_json(&event)?),
        })
    }
}

/// A pull subscription to a session's events (internal; see `InteractiveSession.events`).
#[derive(uniffi::Object)]
pub struct NativeEvents {
    subscription: Arc<Subscription>,
    /// Set by `close`, so a wait that ends empty can tell "closed" from "timed out".
    closed: Arc<AtomicBool>,
}

#[uniffi::export]
impl NativeEvents {
    /// Waits for at least one event, then returns up to `max` queued events; `None` once
    /// closed.
    pub async fn next_batch(&self, max: u32) -> Result<Option<Vec<NativeEvent>>, RobotaError> {
        let subscription = Arc::clone(&self.subscription);
        let closed = Arc::clone(&self.closed);
        let max = usize::try_from(max).unwrap_or(usize::MAX).max(1);
        on_runtime(async move {
            let mut events = Vec::new();
            let first = match subscription.try_next_event() {
                Some(first) => Some(first),
                // Long waits are fine: `close()` wakes it.
                None => subscription.next_event(Duration::from_secs(3600)).await,
            };
            match first {
                Some(first) => events.push(NativeEvent::new(first)?),
                None if closed.load(Ordering::SeqCst) => return Ok(None),
                None => return Ok(Some(Vec::new())),
            }
            while events.len() < max {
                match subscription.try_next_event() {
                    Some(event) => events.push(NativeEvent::new(event)?),
                    None => break,
                }
            }
            Ok(Some(events))
        })
        .await
    }

    /// Stops delivery; a waiting `next_batch` returns `None`.
    pub fn close(&self) -> Result<(), RobotaError> {
        self.closed.store(true, Ordering::SeqCst);
        self.subscription.unsubscribe();
        Ok(())
    }
}
