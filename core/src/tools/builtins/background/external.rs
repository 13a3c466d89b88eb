//! Tasks whose work runs above the tools layer (a subagent session, [`TaskKind::Agent`]): the
//! manager keeps their record, lifecycle, log file and limits exactly as for a process, while the
//! caller runs the work and reports through an [`ExternalTask`] handle — output, the current
//! action, the ending. Cancelling the task (cancel, `KillShell`, the manager dropped) cancels the
//! handle's token; the runner must watch it and then end the task as cancelled.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError, Weak};

use tokio_util::sync::CancellationToken;

use super::{
    now_ms, BackgroundTaskInfo, BackgroundTasks, LogStream, ManagerInner, TaskKind, TaskOrigin,
    TaskStatus,
};

/// What to register.
#[derive(Debug, Clone)]
pub struct ExternalTaskRequest<'a> {
    /// What runs (an agent task is [`TaskKind::Agent`]).
    pub kind: TaskKind,
    /// Prefix of the task id (`agent` gives `agent_3`).
    pub id_prefix: &'a str,
    /// Who started it.
    pub origin: TaskOrigin,
    /// What the task list shows as its command (`Explore: find the tests`).
    pub command: &'a str,
    /// A short description.
    pub description: Option<&'a str>,
    /// Where it runs.
    pub cwd: &'a Path,
}

/// The runner's handle on a task registered with
/// [`Builtins::start_external_task`](crate::tools::builtins::Builtins::start_external_task).
/// Dropping it before [`finish`](Self::finish) ends the task as failed, so a runner that
/// panics or is dropped never leaves a task running forever.
pub struct ExternalTask {
    id: String,
    manager: Weak<ManagerInner>,
    stop: CancellationToken,
    log: Mutex<std::fs::File>,
    finished: AtomicBool,
    /// Calls of the work waiting for a permission answer (several can wait at once).
    waiting_permissions: AtomicUsize,
}

impl std::fmt::Debug for ExternalTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalTask")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ExternalTask {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Cancelled when the task is to stop.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.stop
    }

    /// Appends `text` to the task's output (its log file and what `BashOutput` returns next).
    pub fn write_output(&self, text: &str) {
        // The file is the full record; a write error (disk full) must not stop the task.
        let _ = self
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_all(text.as_bytes());
        if let Some(manager) = self.manager.upgrade() {
            manager.record_output(&self.id, LogStream::Stdout, text.as_bytes());
        }
    }

    /// Sets what the task is doing now (a subagent's current tool); `None` clears it.
    pub fn set_current_action(&self, action: Option<String>) {
        if let Some(manager) = self.manager.upgrade() {
            let mut registry = manager.lock();
            if let Some(task) = registry.find_mut(&self.id) {
                task.info.current_action = action;
            }
        }
    }

    /// Says that one of the work's calls started (`true`) or stopped (`false`) waiting for the
    /// host's permission answer: the task is `waiting_permission` while any call waits, then
    /// `running` again (spec 000 lifecycle).
    pub fn set_waiting_permission(&self, waiting: bool) {
        let to = if waiting {
            let before = self.waiting_permissions.fetch_add(1, Ordering::SeqCst);
            (before == 0).then_some(TaskStatus::WaitingPermission)
        } else {
            let before = self
                .waiting_permissions
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    Some(n.saturating_sub(1))
                })
                .unwrap_or(0);
            (before == 1).then_some(TaskStatus::Running)
        };
        if let (Some(to), Some(manager)) = (to, self.manager.upgrade()) {
            // An ended task stays ended: the lifecycle refuses the change, which is right.
            let _ = manager.transition(&self.id, to, |_| {});
        }
    }

    /// Ends the task: `Completed`, `Failed` (with `error`) or `Cancelled`. A status that is not
    /// terminal is taken as `Failed`.
    /// Later calls do nothing.
    pub fn finish(&self, status: TaskStatus, error: Option<String>) {
        if self.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush();
        let status = if status.is_terminal() {
            status
        } else {
            TaskStatus::Failed
        };
        if let Some(manager) = self.manager.upgrade() {
            let _ = manager.transition(&self.id, status, |info| {
                info.error = error;
                info.current_action = None;
            });
        }
    }
}

impl Drop for ExternalTask {
    fn drop(&mut self) {
        self.finish(
            TaskStatus::Failed,
            Some("its runner ended without reporting a result".into()),
        );
    }
}

/// The record of a task about to start, as `queued`.
pub(crate) fn queued_info(
    id: String,
    request: ExternalTaskRequest<'_>,
    pid: Option<u32>,
    (stdout_path, stderr_path): (std::path::PathBuf, std::path::PathBuf),
) -> BackgroundTaskInfo {
    BackgroundTaskInfo {
        id,
        kind: request.kind,
        origin: request.origin,
        command: request.command.to_string(),
        description: request.description.map(str::to_string),
        cwd: request.cwd.to_path_buf(),
        pid,
        status: TaskStatus::Queued,
        exit_code: None,
        signal: None,
        error: None,
        timeout_reason: None,
        current_action: None,
        stdout_path,
        stderr_path,
        output_bytes: 0,
        created_at_ms: now_ms(),
        ended_at_ms: None,
    }
}

impl BackgroundTasks {
    /// Asks every running external task to stop (the session is shutting down); each records
    /// its ending when its runner sees the cancellation.
    pub fn stop_external(&self) {
        let registry = self.lock();
        for task in registry.tasks.values() {
            if task.info.kind != TaskKind::Process && task.info.status.is_active() {
                if let Some(stop) = &task.stop {
                    stop.cancel();
                }
            }
        }
    }

    /// Registers a running task whose work the caller runs (see the module docs), its output
    /// going to `stdout_path` (`stderr_path` is created empty). Refused when the concurrency
    /// limit is reached.
    pub(crate) fn start_external(
        &self,
        request: ExternalTaskRequest<'_>,
        new_path: impl FnOnce(&str) -> Result<std::path::PathBuf, String>,
    ) -> Result<ExternalTask, String> {
        let (number, id) = self.reserve(request.id_prefix)?;
        let stdout_path = new_path(&id)?;
        let stderr_path = stdout_path.with_extension("stderr");
        let open = |path: &Path| {
            std::fs::File::create(path)
                .map_err(|err| format!("cannot create {}: {err}", path.display()))
        };
        let log = open(&stdout_path)?;
        open(&stderr_path)?;
        let stop = CancellationToken::new();
        let info = queued_info(id.clone(), request, None, (stdout_path, stderr_path));
        self.insert_running(number, info, stop.clone(), None);
        Ok(ExternalTask {
            id,
            manager: self.downgrade(),
            stop,
            log: Mutex::new(log),
            finished: AtomicBool::new(false),
            waiting_permissions: AtomicUsize::new(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(tasks: &BackgroundTasks, dir: &Path) -> Result<ExternalTask, String> {
        tasks.start_external(
            ExternalTaskRequest {
                kind: TaskKind::Agent,
                id_prefix: "agent",
                origin: TaskOrigin::host(),
                command: "Explore: look",
                description: None,
                cwd: dir,
            },
            |id| Ok(dir.join(format!("{id}.stdout"))),
        )
    }

    #[test]
    fn output_ending_limit_and_a_dropped_runner() {
        let dir = tempfile::tempdir().expect("temp dir");
        let tasks = BackgroundTasks::with_limits(
            crate::tools::builtins::BackgroundLimits {
                max_concurrent: 1,
                ..Default::default()
            },
            None,
        );
        let task = start(&tasks, dir.path()).expect("starts");
        assert_eq!(task.id(), "agent_1");
        let refused = start(&tasks, dir.path()).expect_err("over the limit");
        assert!(refused.contains("agent_1"), "{refused}");
        task.set_current_action(Some("running Grep".into()));
        assert_eq!(
            tasks.get("agent_1").and_then(|t| t.current_action),
            Some("running Grep".into())
        );
        task.write_output("REPORT");
        assert_eq!(
            tasks.read_new_output("agent_1").expect("read").stdout,
            "REPORT"
        );
        // Two calls wait for a permission answer: waiting until both are answered.
        task.set_waiting_permission(true);
        task.set_waiting_permission(true);
        let status = |tasks: &BackgroundTasks| tasks.get("agent_1").map(|t| t.status);
        assert_eq!(status(&tasks), Some(TaskStatus::WaitingPermission));
        task.set_waiting_permission(false);
        assert_eq!(status(&tasks), Some(TaskStatus::WaitingPermission));
        task.set_waiting_permission(false);
        assert_eq!(status(&tasks), Some(TaskStatus::Running));
        task.finish(TaskStatus::Completed, None);
        task.finish(TaskStatus::Failed, Some("ignored".into()));
        let info = tasks.get("agent_1").expect("listed");
        assert_eq!(info.status, TaskStatus::Completed);
        assert_eq!(
            std::fs::read_to_string(&info.stdout_path).expect("log"),
            "REPORT"
        );
        drop(task);
        assert_eq!(
            tasks.get("agent_1").map(|t| t.status),
            Some(TaskStatus::Completed)
        );

        // A runner that goes away without a result leaves a failed task, never a running one.
        let task = start(&tasks, dir.path()).expect("room again");
        let id = task.id().to_string();
        drop(task);
        let info = tasks.get(&id).expect("listed");
        assert_eq!(info.status, TaskStatus::Failed);
        assert!(info.error.unwrap_or_default().contains("without reporting"));
    }
}
