//! Subagents of an interactive session beyond the foreground run: a subagent handed to the
//! session's background task manager as a task of kind `agent` (the `Task` tool with
//! `run_in_background`, or host code). The task's output is the subagent's report; cancelling
//! the task stops the subagent; its progress is reported as `background_task_event`s with the
//! task id beside the manager's own lifecycle events.

use std::sync::Arc;

use serde_json::Value;

use super::{Inner, InteractiveError, InteractiveSession};
use crate::framework::agents::{
    resolve_subagent_model, run_subagent, AgentCatalog, SubagentError, SubagentProgress,
    SubagentReport, SubagentRequest, DEFAULT_AGENT_TYPE,
};
use crate::tools::builtins::{
    BackgroundTaskInfo, ExternalTask, ExternalTaskRequest, TaskKind, TaskOrigin, TaskStatus,
};

/// Longest task label taken from a prompt (characters).
const LABEL_CHARS: usize = 80;

/// `Explore: find the tests` — what the task list shows for a subagent task.
fn task_label(agent_type: &str, description: Option<&str>, prompt: &str) -> String {
    let text = description.unwrap_or_else(|| prompt.lines().next().unwrap_or(""));
    let mut label: String = text.trim().chars().take(LABEL_CHARS).collect();
    if text.trim().chars().count() > LABEL_CHARS {
        label.push('…');
    }
    format!("{agent_type}: {label}")
}

/// How a background subagent's task ends, given its report.
fn ending(report: &SubagentReport, cancelled: bool) -> (TaskStatus, Option<String>) {
    if report.interrupted {
        if cancelled {
            (
                TaskStatus::Cancelled,
                Some("cancelled; the subagent was stopped".into()),
            )
        } else {
            (
                TaskStatus::Failed,
                Some("the subagent was interrupted".into()),
            )
        }
    } else if let Some(error) = &report.error {
        (TaskStatus::Failed, Some(error.clone()))
    } else {
        (TaskStatus::Completed, None)
    }
}

impl Inner {
    /// Starts `request` as a background subagent task (see the module docs) and returns the
    /// task at once. An unknown agent, an empty prompt, a model the provider cannot serve and
    /// the manager's concurrency limit are refused before anything runs.
    pub(crate) fn start_background_subagent(
        self: &Arc<Self>,
        catalog: AgentCatalog,
        request: SubagentRequest,
        description: Option<String>,
        origin: TaskOrigin,
    ) -> Result<BackgroundTaskInfo, String> {
        if request.prompt.trim().is_empty() {
            return Err(SubagentError::EmptyPrompt.to_string());
        }
        let agent_type = request
            .agent_type
            .clone()
            .unwrap_or_else(|| DEFAULT_AGENT_TYPE.to_string());
        let Some(definition) = catalog.get(&agent_type) else {
            return Err(SubagentError::UnknownAgent {
                name: agent_type,
                available: catalog.definitions().map(|d| d.name.clone()).collect(),
            }
            .to_string());
        };
        let requested = request.model.as_deref().or(definition.model.as_deref());
        resolve_subagent_model(&self.session, requested).map_err(|e| e.to_string())?;
        let label = task_label(&definition.name, description.as_deref(), &request.prompt);
        let task = self.session.start_external_task(ExternalTaskRequest {
            kind: TaskKind::Agent,
            id_prefix: "agent",
            origin,
            command: &label,
            description: description.as_deref(),
            cwd: self.session.cwd(),
        })?;
        let task = Arc::new(task);
        let info = self
            .session
            .background_tasks()
            .and_then(|tasks| tasks.get(task.id()))
            .ok_or_else(|| format!("background task `{}` vanished", task.id()))?;
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            inner.run_background_subagent(catalog, request, task).await;
        });
        Ok(info)
    }

    /// Runs a background subagent to its end and records the ending on its task.
    async fn run_background_subagent(
        self: Arc<Self>,
        catalog: AgentCatalog,
        request: SubagentRequest,
        task: Arc<ExternalTask>,
    ) {
        let cancel = task.cancellation().clone();
        let progress = {
            let weak = Arc::downgrade(&self);
            let task = Arc::clone(&task);
            Arc::new(move |event: SubagentProgress| {
                match &event {
                    SubagentProgress::ToolStart { tool_name, .. } => {
                        task.set_current_action(Some(format!("running {tool_name}")));
                    }
                    SubagentProgress::ToolEnd { .. } => task.set_current_action(None),
                    SubagentProgress::PermissionWaiting { .. } => task.set_waiting_permission(true),
                    SubagentProgress::PermissionAnswered { .. } => {
                        task.set_waiting_permission(false)
                    }
                    _ => {}
                }
                if let Some(inner) = weak.upgrade() {
                    let mut data = event.to_event_data();
                    if let Value::Object(map) = &mut data {
                        map.insert("task_id".into(), Value::String(task.id().to_string()));
                    }
                    inner.emit_background(data);
                }
            })
        };
        let result = run_subagent(&self.session, &catalog, request, &cancel, Some(progress)).await;
        match result {
            Ok(report) => {
                task.write_output(&report.message());
                let (status, error) = ending(&report, cancel.is_cancelled());
                task.finish(status, error);
            }
            Err(error) => {
                let message = format!("the subagent could not run: {error}");
                task.write_output(&message);
                task.finish(TaskStatus::Failed, Some(message));
            }
        }
    }
}

impl InteractiveSession {
    /// Runs a subagent to its final report from host code (as `/agent` does), registered for
    /// `abort` and reporting progress as `background_task_event`s.
    pub async fn run_subagent(
        &self,
        request: SubagentRequest,
    ) -> Result<SubagentReport, InteractiveError> {
        let catalog = self.subagent_catalog()?;
        self.inner
            .run_subagent_for(&catalog, request)
            .await
            .map_err(|e| InteractiveError::Subagent(e.to_string()))
    }

    /// Starts a subagent as a background task from host code and returns the task at once
    /// (see the module docs); wait for it with
    /// [`wait_background_task`](Self::wait_background_task), read its report with
    /// [`read_background_task_log`](Self::read_background_task_log).
    pub fn start_background_subagent(
        &self,
        request: SubagentRequest,
    ) -> Result<BackgroundTaskInfo, InteractiveError> {
        let catalog = self.subagent_catalog()?;
        self.inner
            .start_background_subagent(catalog, request, None, TaskOrigin::host())
            .map_err(InteractiveError::Subagent)
    }

    pub(super) fn subagent_catalog(&self) -> Result<AgentCatalog, InteractiveError> {
        self.inner.agent_catalog().ok_or_else(|| {
            InteractiveError::Subagent(
                "subagents are not enabled in this session: compose the agent command module \
                 (agent_command_module) to enable them"
                    .into(),
            )
        })
    }
}
