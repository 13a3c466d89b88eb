//! A minimal registry of background shell tasks started by `Bash` with `run_in_background: true`:
//! each has an id, the files its output goes to, and a status; hosts (and later a task tool) can
//! list them, read their output, wait for them and kill them.
//!
//! Why minimal: the background-task feature of the framework will add notifications and a model
//! tool on top; this registry only owns the processes so none outlives the session: each task's
//! process group joins the session's [`ProcessGroups`](crate::process::ProcessGroups) (stopped on
//! shutdown), a task's group is stopped as a whole when its shell ends (so `cmd &` inside a task
//! ends with the task), and dropping the last handle kills every task still running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::budget;
use super::process;
use crate::process::{kill_group, ProcessKind};

/// Where a background task stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BackgroundTaskStatus {
    /// Still running.
    Running,
    /// The shell exited with this code.
    Exited {
        /// Exit code.
        code: i32,
    },
    /// The shell was ended by a signal it did not expect (not by [`BackgroundTasks::kill`]).
    Signaled {
        /// Signal number.
        signal: i32,
    },
    /// Stopped by [`BackgroundTasks::kill`], by the session's shutdown, or because the registry
    /// was dropped.
    Killed,
    /// Waiting on the process failed.
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl BackgroundTaskStatus {
    /// True while the task runs.
    pub fn is_running(&self) -> bool {
        matches!(self, BackgroundTaskStatus::Running)
    }
}

/// A snapshot of one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackgroundTaskInfo {
    /// Task id (`bash_1`, `bash_2`, …), unique within the registry.
    pub id: String,
    /// The command line as the model gave it.
    pub command: String,
    /// The shell's pid, which is also the process-group id of the task's tree.
    pub pid: Option<u32>,
    /// File receiving the task's stdout.
    pub stdout_path: PathBuf,
    /// File receiving the task's stderr.
    pub stderr_path: PathBuf,
    /// When it started.
    pub started_at: SystemTime,
    /// Current status.
    pub status: BackgroundTaskStatus,
}

/// A task's output so far, cut to a byte budget (head + tail, like every tool output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackgroundOutput {
    /// The task at the time of reading.
    pub info: BackgroundTaskInfo,
    /// Stdout so far (cut with an omission marker naming the file when too long).
    pub stdout: String,
    /// Stderr so far (likewise).
    pub stderr: String,
}

struct Task {
    id: String,
    command: String,
    pid: Option<u32>,
    stdout_path: PathBuf,
    stderr_path: PathBuf,
    started_at: SystemTime,
    status: watch::Receiver<BackgroundTaskStatus>,
    stop: CancellationToken,
}

impl Task {
    fn info(&self) -> BackgroundTaskInfo {
        BackgroundTaskInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            pid: self.pid,
            stdout_path: self.stdout_path.clone(),
            stderr_path: self.stderr_path.clone(),
            started_at: self.started_at,
            status: self.status.borrow().clone(),
        }
    }
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    tasks: BTreeMap<u64, Task>,
}

impl Drop for Registry {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            if task.status.borrow().is_running() {
                task.stop.cancel();
                // The watcher may never run again (runtime shutting down), so kill directly.
                if let Some(pid) = task.pid {
                    kill_group(pid);
                }
            }
        }
    }
}

/// The background tasks of one session. Cheap to clone; all clones share the tasks. When the
/// last clone is dropped, every task still running is killed (its whole process group).
#[derive(Clone, Default)]
pub struct BackgroundTasks {
    registry: Arc<Mutex<Registry>>,
}

impl std::fmt::Debug for BackgroundTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundTasks")
            .field("tasks", &self.list())
            .finish()
    }
}

impl BackgroundTasks {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding this short lock cannot leave the map inconsistent.
        self.registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every task, oldest first.
    pub fn list(&self) -> Vec<BackgroundTaskInfo> {
        self.lock().tasks.values().map(Task::info).collect()
    }

    /// One task by id.
    pub fn get(&self, id: &str) -> Option<BackgroundTaskInfo> {
        let registry = self.lock();
        registry.tasks.values().find(|t| t.id == id).map(Task::info)
    }

    /// The task's stdout and stderr so far, each cut to `max_bytes` (head + tail with an exact
    /// omission marker naming the file that holds everything).
    pub fn read_output(&self, id: &str, max_bytes: usize) -> Result<BackgroundOutput, String> {
        let info = self.get(id).ok_or_else(|| self.unknown(id))?;
        let read = |path: &Path| -> Result<String, String> {
            budget::cut_file(path, max_bytes)
                .map(|cut| cut.render(Some(path)))
                .map_err(|err| format!("cannot read {}: {err}", path.display()))
        };
        Ok(BackgroundOutput {
            stdout: read(&info.stdout_path)?,
            stderr: read(&info.stderr_path)?,
            info,
        })
    }

    /// Waits until the task is no longer running (or `timeout` passes) and returns its status.
    pub async fn wait(&self, id: &str, timeout: Duration) -> Result<BackgroundTaskStatus, String> {
        let mut status = {
            let registry = self.lock();
            registry
                .tasks
                .values()
                .find(|t| t.id == id)
                .map(|t| t.status.clone())
                .ok_or_else(|| self.unknown_in(&registry, id))?
        };
        let finished = {
            let waited = tokio::time::timeout(timeout, status.wait_for(|s| !s.is_running())).await;
            match waited {
                Ok(Ok(final_status)) => Some(final_status.clone()),
                Ok(Err(_)) | Err(_) => None,
            }
        };
        // On timeout, or when the watcher is gone (runtime shut down), report the last status.
        Ok(finished.unwrap_or_else(|| status.borrow().clone()))
    }

    /// Stops the task's whole process tree (TERM, grace, KILL) and returns its final status.
    pub async fn kill(&self, id: &str) -> Result<BackgroundTaskStatus, String> {
        {
            let registry = self.lock();
            let task = registry
                .tasks
                .values()
                .find(|t| t.id == id)
                .ok_or_else(|| self.unknown_in(&registry, id))?;
            task.stop.cancel();
        }
        self.wait(id, Duration::from_secs(30)).await
    }

    /// Stops every running task (see [`BackgroundTasks::kill`]).
    pub async fn kill_all(&self) {
        let ids: Vec<String> = self
            .list()
            .into_iter()
            .filter(|t| t.status.is_running())
            .map(|t| t.id)
            .collect();
        for id in ids {
            let _ = self.kill(&id).await;
        }
    }

    fn unknown(&self, id: &str) -> String {
        let registry = self.lock();
        self.unknown_in(&registry, id)
    }

    fn unknown_in(&self, registry: &Registry, id: &str) -> String {
        let known: Vec<&str> = registry.tasks.values().map(|t| t.id.as_str()).collect();
        if known.is_empty() {
            format!("No background task `{id}`: none has been started in this session.")
        } else {
            format!(
                "No background task `{id}`. Known tasks: {}.",
                known.join(", ")
            )
        }
    }

    /// Starts `command` in the background; its output goes to two files in the session directory.
    pub(crate) fn start(
        &self,
        shared: &super::Shared,
        command: &str,
        cwd: &Path,
        sandbox: Option<&crate::sandbox::Sandbox>,
    ) -> Result<BackgroundTaskInfo, String> {
        let env = shared.env();
        let (shell, env, grace) = (&shared.shell, &env, shared.kill_grace);
        if shared.processes.is_closed() {
            return Err("the session is shutting down".into());
        }
        let session_dir = shared.workspace.session_dir();
        let number = {
            let mut registry = self.lock();
            registry.next_id += 1;
            registry.next_id
        };
        let id = format!("bash_{number}");
        let stdout_path = session_dir.new_task_path(&id, "stdout")?;
        let stderr_path = stdout_path.with_extension("stderr");
        let open = |path: &Path| {
            std::fs::File::create(path)
                .map_err(|err| format!("cannot create {}: {err}", path.display()))
        };
        let mut child = process::spawn_shell(
            shell,
            command,
            cwd,
            env,
            open(&stdout_path)?,
            open(&stderr_path)?,
            sandbox,
        )
        .map_err(|err| err.describe(shell))?;
        let pid = child.id();
        // The task's tree belongs to the session: its shutdown (or drop) stops it.
        let group = pid.map(|pgid| {
            shared.processes.adopt(
                pgid,
                ProcessKind::BackgroundTask,
                &format!("{id}: {command}"),
            )
        });
        let (status_tx, status_rx) = watch::channel(BackgroundTaskStatus::Running);
        let stop = CancellationToken::new();
        let task = Task {
            id: id.clone(),
            command: command.to_string(),
            pid,
            stdout_path,
            stderr_path,
            started_at: SystemTime::now(),
            status: status_rx,
            stop: stop.clone(),
        };
        let info = task.info();
        self.lock().tasks.insert(number, task);
        tokio::spawn(async move {
            let session_ended = async {
                match &group {
                    Some(group) => group.stop_requested().await,
                    None => std::future::pending().await,
                }
            };
            let status = tokio::select! {
                waited = child.wait() => match waited {
                    Ok(status) => match process::exit_parts(&status) {
                        (Some(code), _) => BackgroundTaskStatus::Exited { code },
                        (None, Some(signal)) => BackgroundTaskStatus::Signaled { signal },
                        (None, None) => BackgroundTaskStatus::Failed {
                            message: "the process ended without an exit code".into(),
                        },
                    },
                    Err(err) => BackgroundTaskStatus::Failed { message: err.to_string() },
                },
                () = stop.cancelled() => {
                    if let Some(group) = &group {
                        group.terminate(&mut child, grace).await;
                    }
                    BackgroundTaskStatus::Killed
                }
                () = session_ended => {
                    if let Some(group) = &group {
                        group.terminate(&mut child, grace).await;
                    }
                    BackgroundTaskStatus::Killed
                }
            };
            // The task ends with its shell: what it left running in its group is stopped too.
            if let Some(group) = group {
                group.finish(grace).await;
            }
            let _ = status_tx.send(status);
        });
        Ok(info)
    }
}
