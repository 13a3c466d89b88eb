//! Background task controls of an interactive session (spec 000 `listBackgroundTasks`,
//! `getBackgroundTask`, `cancelBackgroundTask`, `closeBackgroundTask`, `sendBackgroundTask`,
//! `readBackgroundTaskLog`, plus `wait`), and the forwarding of the manager's lifecycle events as
//! `background_task_event`s.

use std::sync::Arc;
use std::time::Duration;

use super::events::{EventHub, InteractiveEventKind};
use super::{InteractiveError, InteractiveSession};
use crate::session::Session;
use crate::tools::builtins::{BackgroundTaskInfo, BackgroundTasks, LogStream, TaskLogPage};

/// Sends every lifecycle event of `session`'s tasks to `hub` as `background_task_event` data
/// (`task_kind: "process"`, `event: "state_changed"`, the task id, origin and snapshot).
pub(super) fn forward_task_events(session: &Session, hub: &Arc<EventHub>) {
    let Some(tasks) = session.background_tasks() else {
        return;
    };
    // The hub holds nothing of the session, so the manager keeping it alive makes no cycle.
    let hub = Arc::clone(hub);
    tasks.subscribe(Arc::new(move |event| {
        if let Ok(data) = serde_json::to_value(event) {
            hub.emit(InteractiveEventKind::BackgroundTaskEvent { data });
        }
    }));
}

fn refused(task_id: &str, message: String) -> InteractiveError {
    InteractiveError::BackgroundTask {
        task_id: task_id.to_string(),
        message,
    }
}

impl InteractiveSession {
    fn tasks(&self, task_id: &str) -> Result<&BackgroundTasks, InteractiveError> {
        self.session().background_tasks().ok_or_else(|| {
            refused(
                task_id,
                "This session has no background tasks: it runs without the built-in tools."
                    .to_string(),
            )
        })
    }

    /// Every background task of the session, oldest first (those of earlier runs of a resumed
    /// session included, still-running ones of those reported `lost`).
    pub fn list_background_tasks(&self) -> Vec<BackgroundTaskInfo> {
        self.session()
            .background_tasks()
            .map(BackgroundTasks::list)
            .unwrap_or_default()
    }

    /// One background task.
    pub fn get_background_task(&self, task_id: &str) -> Option<BackgroundTaskInfo> {
        self.session()
            .background_tasks()
            .and_then(|tasks| tasks.get(task_id))
    }

    /// Stops a running task with its whole process tree; returns it once stopped.
    pub async fn cancel_background_task(
        &self,
        task_id: &str,
    ) -> Result<BackgroundTaskInfo, InteractiveError> {
        self.tasks(task_id)?
            .cancel(task_id)
            .await
            .map_err(|message| refused(task_id, message))
    }

    /// Removes an ended task from the list (its log files stay).
    pub fn close_background_task(
        &self,
        task_id: &str,
    ) -> Result<BackgroundTaskInfo, InteractiveError> {
        self.tasks(task_id)?
            .close(task_id)
            .map_err(|message| refused(task_id, message))
    }

    /// Writes `input` to a running task's standard input.
    pub async fn send_background_task(
        &self,
        task_id: &str,
        input: &str,
    ) -> Result<(), InteractiveError> {
        self.tasks(task_id)?
            .send(task_id, input)
            .await
            .map_err(|message| refused(task_id, message))
    }

    /// A page of a task's output file (`max_bytes` from byte `offset`).
    pub fn read_background_task_log(
        &self,
        task_id: &str,
        stream: LogStream,
        offset: u64,
        max_bytes: usize,
    ) -> Result<TaskLogPage, InteractiveError> {
        self.tasks(task_id)?
            .read_log(task_id, stream, offset, max_bytes)
            .map_err(|message| refused(task_id, message))
    }

    /// Waits until the task has ended, at most `timeout`, and returns it as it is then.
    pub async fn wait_background_task(
        &self,
        task_id: &str,
        timeout: Duration,
    ) -> Result<BackgroundTaskInfo, InteractiveError> {
        self.tasks(task_id)?
            .wait(task_id, timeout)
            .await
            .map_err(|message| refused(task_id, message))
    }
}
