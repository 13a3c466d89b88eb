//! [`SessionHost`]: the [`CommandHostContext`] facade over an interactive session, shared by the
//! slash path and the projected command tools.

use std::sync::{Mutex, PoisonError, Weak};

use async_trait::async_trait;

use super::Inner;
use crate::framework::agents::{AgentCatalog, SubagentReport, SubagentRequest};
use crate::framework::checkpoints::{CheckpointInspection, CheckpointSummary, RestoreReport};
use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandHostError, CommandResult, CompactionSummary,
    ContextStateSummary, UsageSummary,
};
use crate::framework::skills::{SkillActivationRequest, SkillCatalog};
use crate::message::HistoryEntry;
use crate::permissions::PermissionMode;
use crate::session::SessionError;

/// Points at the session once it exists (the projected tools are built before it). A weak
/// reference: the session's own tools hold this facade, and a strong one would keep the session
/// alive forever.
#[derive(Default)]
pub(crate) struct SessionHost {
    inner: Mutex<Weak<Inner>>,
    /// True for the facade behind the model's tools, false for the user's slash path.
    for_model: bool,
}

impl SessionHost {
    /// The facade the model's tools (projected commands, `Skill`) act through.
    pub(crate) fn for_model() -> Self {
        SessionHost {
            inner: Mutex::default(),
            for_model: true,
        }
    }

    pub(crate) fn attach(&self, inner: &std::sync::Arc<Inner>) {
        *self.inner.lock().unwrap_or_else(PoisonError::into_inner) =
            std::sync::Arc::downgrade(inner);
    }

    fn get(&self) -> Result<std::sync::Arc<Inner>, CommandHostError> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upgrade()
            .ok_or_else(|| CommandHostError::new("the session is gone"))
    }
}

fn host_error(error: SessionError) -> CommandHostError {
    match error {
        SessionError::Busy => CommandHostError::new(
            "the session is busy with a prompt; run this again when it has finished",
        ),
        other => CommandHostError::new(other.to_string()),
    }
}

#[async_trait]
impl CommandHostContext for SessionHost {
    fn session_id(&self) -> String {
        self.get()
            .map(|i| i.session().session_id().to_string())
            .unwrap_or_default()
    }

    fn session_name(&self) -> Option<String> {
        self.get().ok().and_then(|i| i.session().get_name())
    }

    async fn set_session_name(&self, name: &str) -> Result<(), CommandHostError> {
        self.get()?.session().set_name(Some(name.to_string()));
        Ok(())
    }

    fn context_state(&self) -> ContextStateSummary {
        let Ok(inner) = self.get() else {
            return ContextStateSummary::default();
        };
        let state = inner.session().context_state();
        ContextStateSummary {
            used_tokens: state.used_tokens,
            max_tokens: state.max_tokens,
            used_percent: state.ratio * 100.0,
            auto_compact_percent: inner
                .session()
                .auto_compact_threshold()
                .map(|threshold| threshold * 100.0),
            message_count: inner.session().message_count(),
        }
    }

    fn usage_summary(&self) -> UsageSummary {
        let Ok(inner) = self.get() else {
            return UsageSummary::default();
        };
        let totals = inner.session().usage();
        UsageSummary {
            input_tokens: totals.usage.input_tokens,
            output_tokens: totals.usage.output_tokens,
            cache_read_tokens: totals.usage.cache_read_input_tokens,
            cache_creation_tokens: totals.usage.cache_creation_input_tokens,
            cost_usd: totals.cost_usd,
        }
    }

    fn permission_mode(&self) -> PermissionMode {
        self.get()
            .map(|i| i.session().permission_mode())
            .unwrap_or_default()
    }

    async fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), CommandHostError> {
        self.get()?
            .session()
            .set_permission_mode(mode)
            .map_err(host_error)
    }

    fn compaction_policy(&self) -> Option<crate::session::compaction_policy::CompactionPolicy> {
        self.get().ok().map(|i| i.session().compaction_policy())
    }

    async fn set_compaction_policy(
        &self,
        policy: crate::session::compaction_policy::CompactionPolicy,
    ) -> Result<(), CommandHostError> {
        self.get()?
            .session()
            .set_compaction_policy(policy)
            .map_err(host_error)
    }

    fn session_approved_tools(&self) -> Vec<String> {
        self.get()
            .map(|i| i.session().session_allowed_rules())
            .unwrap_or_default()
    }

    fn model(&self) -> Option<String> {
        self.get().ok().map(|i| i.session().current_model())
    }

    fn known_models(&self) -> Vec<crate::framework::commands::models::KnownModel> {
        let Ok(inner) = self.get() else {
            return Vec::new();
        };
        let session = inner.session();
        crate::framework::commands::models::known_models(session.provider_name(), |id| {
            session.model_context_window(id)
        })
    }

    async fn switch_model(&self, model: &str) -> Result<Option<u64>, CommandHostError> {
        let window = self
            .get()?
            .session()
            .switch_model(model)
            .map_err(host_error)?;
        Ok(Some(window))
    }

    fn commands(&self) -> Vec<CommandDescriptor> {
        self.get()
            .map(|i| i.registry.descriptors())
            .unwrap_or_default()
    }

    async fn clear_conversation(&self) -> Result<(), CommandHostError> {
        self.get()?
            .session()
            .clear_conversation()
            .map_err(host_error)
    }

    async fn compact(
        &self,
        instructions: Option<&str>,
    ) -> Result<CompactionSummary, CommandHostError> {
        let inner = self.get()?;
        if inner.schedule_compaction(instructions) {
            return Ok(CompactionSummary {
                scheduled: true,
                ..CompactionSummary::default()
            });
        }
        let before_messages = inner.session().message_count();
        let before = inner.session().context_state();
        inner
            .session()
            .compact(instructions.map(str::to_string))
            .await
            .map_err(host_error)?;
        let after_messages = inner.session().message_count();
        let after = inner.session().context_state();
        Ok(CompactionSummary {
            removed_messages: before_messages.saturating_sub(after_messages),
            messages_before: before_messages,
            context_before_percent: before.ratio * 100.0,
            context_after_percent: after.ratio * 100.0,
            scheduled: false,
        })
    }

    fn plugin_manager(&self) -> Result<crate::framework::plugins::PluginManager, CommandHostError> {
        self.get()?.plugin_manager().ok_or_else(|| {
            CommandHostError::new(
                "plugins are not available: the session has no home folder (settings are off)",
            )
        })
    }

    fn loaded_plugins(&self) -> Vec<String> {
        self.get()
            .map(|inner| inner.loaded_plugin_ids())
            .unwrap_or_default()
    }

    fn agent_catalog(&self) -> Result<AgentCatalog, CommandHostError> {
        match self.get()?.agent_catalog() {
            Some(catalog) => Ok(catalog),
            None => Err(CommandHostError::new(
                "subagents are not enabled in this session: compose the agent command module \
                 (agent_command_module) to enable them",
            )),
        }
    }

    async fn run_subagent(
        &self,
        request: SubagentRequest,
    ) -> Result<SubagentReport, CommandHostError> {
        let inner = self.get()?;
        let catalog = self.agent_catalog()?;
        inner
            .run_subagent_for(&catalog, request)
            .await
            .map_err(|e| CommandHostError::new(e.to_string()))
    }

    async fn start_background_subagent(
        &self,
        request: SubagentRequest,
        description: Option<String>,
        origin: crate::tools::builtins::TaskOrigin,
    ) -> Result<crate::tools::builtins::BackgroundTaskInfo, CommandHostError> {
        let inner = self.get()?;
        let catalog = self.agent_catalog()?;
        inner
            .start_background_subagent(catalog, request, description, origin)
            .map_err(CommandHostError::new)
    }

    fn invoked_by_model(&self) -> bool {
        self.for_model
    }

    fn background_tasks(&self) -> Option<crate::tools::builtins::BackgroundTasks> {
        self.get()
            .ok()
            .and_then(|inner| inner.session().background_tasks().cloned())
    }

    fn mcp_servers(&self) -> Vec<crate::mcp::McpServerInfo> {
        self.get()
            .map(|inner| inner.session().mcp_servers())
            .unwrap_or_default()
    }

    async fn control_mcp_server(
        &self,
        action: crate::mcp::McpServerAction,
        server: &str,
    ) -> Result<crate::mcp::McpServerInfo, crate::mcp::McpControlError> {
        let Ok(inner) = self.get() else {
            return Err(crate::mcp::McpControlError::Closed);
        };
        inner.session().control_mcp_server(action, server).await
    }

    fn skill_catalog(&self) -> Result<SkillCatalog, CommandHostError> {
        match self.get()?.skill_catalog() {
            Some(catalog) => Ok(catalog.clone()),
            None => Err(CommandHostError::new(
                crate::framework::skills::SKILLS_NOT_ENABLED,
            )),
        }
    }

    async fn activate_skill(
        &self,
        request: SkillActivationRequest,
    ) -> Result<CommandResult, CommandHostError> {
        self.get()?
            .activate_skill(request)
            .await
            .map_err(CommandHostError::new)
    }

    async fn run_custom_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<CommandResult, CommandHostError> {
        self.get()?
            .run_custom_command(name, args, self.for_model)
            .await
            .map_err(CommandHostError::new)
    }
    fn project_dir(&self) -> Option<std::path::PathBuf> {
        self.get().ok().map(|i| i.session().cwd().to_path_buf())
    }

    fn history(&self) -> Vec<HistoryEntry> {
        self.get()
            .map(|i| i.session().conversation().to_entries())
            .unwrap_or_default()
    }

    fn record_history_event(
        &self,
        event_type: &str,
        data: serde_json::Value,
    ) -> Result<(), CommandHostError> {
        self.get()?.record_history(event_type, data);
        Ok(())
    }

    fn list_edit_checkpoints(&self) -> Result<Vec<CheckpointSummary>, CommandHostError> {
        let inner = self.get()?;
        let store = inner.checkpoint_store().map_err(interactive_error)?;
        store
            .list()
            .map_err(|e| CommandHostError::new(e.to_string()))
    }

    fn inspect_edit_checkpoint(&self, id: &str) -> Result<CheckpointInspection, CommandHostError> {
        let inner = self.get()?;
        let store = inner.checkpoint_store().map_err(interactive_error)?;
        store
            .inspect(id)
            .map_err(|e| CommandHostError::new(e.to_string()))
    }

    async fn restore_edit_checkpoint(
        &self,
        id: &str,
        including: bool,
    ) -> Result<RestoreReport, CommandHostError> {
        self.get()?
            .restore_checkpoint(id, including)
            .map_err(interactive_error)
    }

    fn read_settings(
        &self,
        destination: crate::session::SettingsDestination,
    ) -> Result<serde_json::Value, CommandHostError> {
        let inner = self.get()?;
        let path = settings_path(&inner, destination)?;
        crate::session::read_settings_file(&path).map_err(|e| CommandHostError::new(e.to_string()))
    }

    async fn update_settings(
        &self,
        destination: crate::session::SettingsDestination,
        patch: serde_json::Value,
    ) -> Result<std::path::PathBuf, CommandHostError> {
        let inner = self.get()?;
        let path = settings_path(&inner, destination)?;
        crate::session::merge_settings_patch(&path, &patch)
            .map_err(|e| CommandHostError::new(e.to_string()))?;
        Ok(path)
    }
}

/// The file of a settings layer, or why the session has none.
fn settings_path(
    inner: &super::Inner,
    destination: crate::session::SettingsDestination,
) -> Result<std::path::PathBuf, CommandHostError> {
    inner
        .session()
        .settings_targets()
        .iter()
        .find(|t| t.destination == destination)
        .map(|t| t.path.clone())
        .ok_or_else(|| {
            CommandHostError::new(format!(
                "the session has no {destination} file (settings are off, or there is no home \
                 folder for user settings)"
            ))
        })
}

fn interactive_error(error: super::InteractiveError) -> CommandHostError {
    CommandHostError::new(error.to_string())
}
