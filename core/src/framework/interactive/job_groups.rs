//! Background job groups (spec 000 `BackgroundJobOrchestrator`): several background tasks of a
//! session — typically subagents started together — grouped under one id with a wait policy.
//! When the policy is met the group completes once: its summary (counts and one line per task
//! with the start of its output) is sent as a `background_task_event` (`event:
//! "group_completed"`, `task_kind: "group"`), and, unless the group is detached, handed to the
//! model as context of the next prompt, so the parent reads the results without polling.
//!
//! Groups sit above the task manager and never run anything themselves: the tasks keep their own
//! lifecycle, controls and logs. A watcher per group holds only a weak reference to the session,
//! so a group never keeps a session (or its tasks) alive.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{Inner, InteractiveError, InteractiveSession};
use crate::framework::agents::SubagentRequest;
use crate::tools::builtins::{LogStream, TaskOrigin, TaskStatus};

/// When a group counts as done (spec 000 `TBackgroundJobWaitPolicy`, without `manual`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobGroupWaitPolicy {
    /// When every task has ended; the summary goes to the model.
    #[default]
    WaitAll,
    /// When the first task has ended; the summary goes to the model.
    WaitAny,
    /// When every task has ended; the summary is an event only (the model is not told).
    Detached,
}

/// Where a group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobGroupStatus {
    /// Its wait policy is not met yet.
    Running,
    /// Its wait policy was met; the summary is final.
    Completed,
}

/// A request to group existing tasks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobGroupRequest {
    /// What the group is for (shown in the summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The tasks (ids of the session's background tasks); at least one.
    pub task_ids: Vec<String>,
    /// When it completes.
    #[serde(default)]
    pub wait_policy: JobGroupWaitPolicy,
}

/// Counts and result lines of a group (spec 000 `IBackgroundJobGroupSummary`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobGroupSummary {
    /// Tasks in the group.
    pub total: usize,
    /// Tasks that completed.
    pub completed: usize,
    /// Tasks that failed.
    pub failed: usize,
    /// Tasks that were cancelled.
    pub cancelled: usize,
    /// Tasks lost with an earlier process, or closed before the summary.
    pub lost: usize,
    /// Tasks still queued or running.
    pub running: usize,
    /// One line per task: id, command, how it ended, the start of its output.
    pub lines: Vec<String>,
    /// The whole summary as the model reads it.
    pub text: String,
}

/// A group snapshot (spec 000 `IBackgroundJobGroupState`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundJobGroup {
    /// `group_1`, `group_2`, … (unique within the session).
    pub id: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its tasks.
    pub task_ids: Vec<String>,
    /// When it completes.
    pub wait_policy: JobGroupWaitPolicy,
    /// Running or completed.
    pub status: JobGroupStatus,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Completion time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// The summary taken when it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<JobGroupSummary>,
}

/// The groups of one interactive session.
#[derive(Default)]
pub(crate) struct JobGroups {
    state: Mutex<GroupsState>,
    /// Woken when a group completes.
    completed: tokio::sync::Notify,
}

#[derive(Default)]
struct GroupsState {
    next_id: u64,
    groups: BTreeMap<u64, BackgroundJobGroup>,
}

impl JobGroups {
    fn lock(&self) -> std::sync::MutexGuard<'_, GroupsState> {
        // Every critical section is a map update: a panic cannot leave it half done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, id: &str) -> Option<BackgroundJobGroup> {
        self.lock().groups.values().find(|g| g.id == id).cloned()
    }
}

/// Characters of a task's output quoted in its summary line.
const PREVIEW_CHARS: usize = 300;
/// Bytes of a task's log read for its preview.
const PREVIEW_BYTES: usize = 4096;
/// How often a group's watcher looks again when no task it waits on ended.
const WATCH_INTERVAL: Duration = Duration::from_millis(250);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn unknown_group(id: &str, known: &[String]) -> InteractiveError {
    InteractiveError::BackgroundTask {
        task_id: id.to_string(),
        message: if known.is_empty() {
            format!("No background job group `{id}`: none has been created in this session.")
        } else {
            format!(
                "No background job group `{id}`. Known groups: {}.",
                known.join(", ")
            )
        },
    }
}

impl Inner {
    /// The summary of `group` as the tasks are now.
    fn summarize_group(&self, group: &BackgroundJobGroup) -> JobGroupSummary {
        let tasks = self.session.background_tasks();
        let mut summary = JobGroupSummary {
            total: group.task_ids.len(),
            completed: 0,
            failed: 0,
            cancelled: 0,
            lost: 0,
            running: 0,
            lines: Vec::new(),
            text: String::new(),
        };
        for id in &group.task_ids {
            let Some(info) = tasks.and_then(|t| t.get(id)) else {
                summary.lost += 1;
                summary
                    .lines
                    .push(format!("- {id}: closed; its result is gone"));
                continue;
            };
            match info.status {
                TaskStatus::Completed => summary.completed += 1,
                TaskStatus::Failed => summary.failed += 1,
                TaskStatus::Cancelled => summary.cancelled += 1,
                TaskStatus::Lost => summary.lost += 1,
                _ => summary.running += 1,
            }
            let output = tasks
                .and_then(|t| t.read_log(id, LogStream::Stdout, 0, PREVIEW_BYTES).ok())
                .map(|page| page.text)
                .unwrap_or_default();
            let flat = output.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut preview: String = flat.chars().take(PREVIEW_CHARS).collect();
            if flat.chars().count() > PREVIEW_CHARS {
                preview.push('…');
            }
            let state = match (&info.error, info.status.is_terminal()) {
                (Some(error), true) => format!("{}: {error}", info.status),
                (None, true) => info.status.to_string(),
                (_, false) => format!("still {}", info.status),
            };
            let mut line = format!("- {id} ({}) {state}", info.command);
            if !preview.is_empty() {
                line.push_str(&format!(": {preview}"));
            }
            summary.lines.push(line);
        }
        let label = group
            .label
            .as_deref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        summary.text = format!(
            "Background job group {}{label}: {} task(s) — {} completed, {} failed, {} \
             cancelled, {} lost, {} still running.\n{}\nRead a task's whole output with \
             BashOutput (bash_id: the task id).",
            group.id,
            summary.total,
            summary.completed,
            summary.failed,
            summary.cancelled,
            summary.lost,
            summary.running,
            summary.lines.join("\n")
        );
        summary
    }

    /// Whether `group`'s policy is met; else a task to wait on.
    fn group_pending(&self, group: &BackgroundJobGroup) -> Option<String> {
        let tasks = self.session.background_tasks();
        let ended = |id: &String| {
            tasks
                .and_then(|t| t.get(id))
                .is_none_or(|info| info.status.is_terminal())
        };
        let done = match group.wait_policy {
            JobGroupWaitPolicy::WaitAny => group.task_ids.iter().any(ended),
            JobGroupWaitPolicy::WaitAll | JobGroupWaitPolicy::Detached => {
                group.task_ids.iter().all(ended)
            }
        };
        if done {
            None
        } else {
            group.task_ids.iter().find(|&id| !ended(id)).cloned()
        }
    }

    /// Completes group `id` when its policy is met (once); returns a task to wait on otherwise.
    fn check_group(&self, id: &str) -> Option<String> {
        let group = self.job_groups.get(id)?;
        if group.status == JobGroupStatus::Completed {
            return None;
        }
        if let Some(pending) = self.group_pending(&group) {
            return Some(pending);
        }
        let summary = self.summarize_group(&group);
        let completed = {
            let mut state = self.job_groups.lock();
            let stored = state.groups.values_mut().find(|g| g.id == id)?;
            if stored.status == JobGroupStatus::Completed {
                return None;
            }
            stored.status = JobGroupStatus::Completed;
            stored.completed_at_ms = Some(now_ms());
            stored.summary = Some(summary.clone());
            stored.clone()
        };
        self.job_groups.completed.notify_waiters();
        if completed.wait_policy != JobGroupWaitPolicy::Detached {
            // The parent model reads the results with its next prompt.
            self.session
                .add_context_for_next_prompt(summary.text.clone());
        }
        let data = serde_json::json!({
            "event": "group_completed",
            "task_kind": "group",
            "group_id": completed.id,
            "group": completed,
        });
        self.emit_background(data);
        None
    }
}

/// Watches group `id` until it completes or the session is gone.
async fn watch_group(weak: Weak<Inner>, id: String) {
    loop {
        let (pending, tasks) = {
            let Some(inner) = weak.upgrade() else { return };
            let Some(pending) = inner.check_group(&id) else {
                return;
            };
            (pending, inner.session.background_tasks().cloned())
        };
        let Some(tasks) = tasks else { return };
        // Bounded, so the watcher lets go of the session's tasks now and then.
        let _ = tasks.wait(&pending, WATCH_INTERVAL).await;
    }
}

impl InteractiveSession {
    /// Groups existing background tasks (see the module docs) and returns the group. Unknown
    /// task ids and an empty list are refused. Needs a tokio runtime (the group's watcher runs
    /// on it).
    pub fn create_background_job_group(
        &self,
        request: JobGroupRequest,
    ) -> Result<BackgroundJobGroup, InteractiveError> {
        let refuse = |message: String| InteractiveError::BackgroundTask {
            task_id: request.task_ids.join(","),
            message,
        };
        if request.task_ids.is_empty() {
            return Err(refuse(
                "A background job group needs at least one task id.".into(),
            ));
        }
        let unknown: Vec<&str> = request
            .task_ids
            .iter()
            .filter(|id| self.get_background_task(id).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(refuse(format!(
                "No background task {} to group.",
                unknown.join(", ")
            )));
        }
        let group = {
            let mut state = self.inner.job_groups.lock();
            state.next_id += 1;
            let number = state.next_id;
            let group = BackgroundJobGroup {
                id: format!("group_{number}"),
                label: request.label.filter(|l| !l.trim().is_empty()),
                task_ids: request.task_ids,
                wait_policy: request.wait_policy,
                status: JobGroupStatus::Running,
                created_at_ms: now_ms(),
                completed_at_ms: None,
                summary: None,
            };
            state.groups.insert(number, group.clone());
            group
        };
        tokio::spawn(watch_group(Arc::downgrade(&self.inner), group.id.clone()));
        Ok(group)
    }

    /// Starts every request as a background subagent and groups them (see the module docs): the
    /// group completes with one summary of all their reports. All or nothing: when one cannot
    /// start (an unknown agent, the concurrency limit), those already started are cancelled and
    /// the refusal is returned.
    pub fn start_background_subagent_group(
        &self,
        requests: Vec<SubagentRequest>,
        label: Option<String>,
        wait_policy: JobGroupWaitPolicy,
    ) -> Result<BackgroundJobGroup, InteractiveError> {
        if requests.is_empty() {
            return Err(InteractiveError::Subagent(
                "a subagent group needs at least one request".into(),
            ));
        }
        let catalog = self.subagent_catalog()?;
        let mut started: Vec<String> = Vec::new();
        for request in requests {
            let result = self.inner.start_background_subagent(
                catalog.clone(),
                request,
                None,
                TaskOrigin::host(),
            );
            match result {
                Ok(task) => started.push(task.id),
                Err(message) => {
                    if let Some(tasks) = self.session().background_tasks().cloned() {
                        let ids = started.clone();
                        tokio::spawn(async move {
                            for id in ids {
                                let _ = tasks.cancel(&id).await;
                            }
                        });
                    }
                    let message = if started.is_empty() {
                        message
                    } else {
                        format!(
                            "{message} (the group's other subagents, {}, were cancelled)",
                            started.join(", ")
                        )
                    };
                    return Err(InteractiveError::Subagent(message));
                }
            }
        }
        self.create_background_job_group(JobGroupRequest {
            label,
            task_ids: started,
            wait_policy,
        })
    }

    /// Every job group, oldest first.
    pub fn list_background_job_groups(&self) -> Vec<BackgroundJobGroup> {
        self.inner
            .job_groups
            .lock()
            .groups
            .values()
            .cloned()
            .collect()
    }

    /// One job group.
    pub fn get_background_job_group(&self, id: &str) -> Option<BackgroundJobGroup> {
        self.inner.job_groups.get(id)
    }

    /// The group's summary as its tasks are now (the final one once it completed).
    pub fn summarize_background_job_group(
        &self,
        id: &str,
    ) -> Result<JobGroupSummary, InteractiveError> {
        let group = self.group_or_refuse(id)?;
        Ok(group
            .summary
            .clone()
            .unwrap_or_else(|| self.inner.summarize_group(&group)))
    }

    /// Waits until the group has completed, at most `timeout`, and returns it as it is then.
    pub async fn wait_background_job_group(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<BackgroundJobGroup, InteractiveError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let completed = self.inner.job_groups.completed.notified();
            // Checked here too, so a wait does not depend on the watcher's timing.
            self.inner.check_group(id);
            let group = self.group_or_refuse(id)?;
            if group.status == JobGroupStatus::Completed {
                return Ok(group);
            }
            let next = (tokio::time::Instant::now() + WATCH_INTERVAL).min(deadline);
            if tokio::time::timeout_at(next, completed).await.is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return self.group_or_refuse(id);
            }
        }
    }

    fn group_or_refuse(&self, id: &str) -> Result<BackgroundJobGroup, InteractiveError> {
        self.inner.job_groups.get(id).ok_or_else(|| {
            let known: Vec<String> = self
                .list_background_job_groups()
                .into_iter()
                .map(|g| g.id)
                .collect();
            unknown_group(id, &known)
        })
    }
}
