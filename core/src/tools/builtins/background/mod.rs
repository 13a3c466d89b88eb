//! The background task manager of one session (spec 000 "Background Task Execution"): addressable
//! task records with the spec's lifecycle (`queued` → `running` → `completed` / `failed` /
//! `cancelled`, plus `lost` for a task whose process died with an earlier run of the session),
//! bounded concurrency with a clear refusal, watchdogs (overall and idle timeouts, the reason kept
//! on the failed state), bounded in-memory output with the full output on disk, input to a
//! running task, paged log reads, and a `state_changed` event for every transition.
//!
//! Why it sits with the built-in tools: `Bash` with `run_in_background: true` hands its process
//! to the manager, and `BashOutput` / `KillShell` read and stop it, so the manager must live at or
//! below the tools layer; the framework (commands, the interactive session, the bindings) uses it
//! from above. Runners own how work runs: the process runner (`process_runner`) runs a shell command; work that runs
//! above this layer (a subagent session) is registered as an [`ExternalTask`] and reports its
//! output and ending through it, under the same lifecycle and limits.
//!
//! Every task's process group joins the session's [`ProcessGroups`](crate::process::ProcessGroups)
//! (stopped on shutdown), the group is stopped as a whole when the task ends (so `cmd &` inside a
//! task ends with it), and dropping the last handle on the manager kills every task still running.
//!
//! When the session is saved, the task records go to `tasks/index.json` in the session's folder
//! on every transition; a resumed session lists them again, and reports the tasks that were
//! running when the previous process ended as `lost` instead of dropping them.

mod capture;
mod external;
pub(crate) mod process_runner;

pub use external::{ExternalTask, ExternalTaskRequest};

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::process::ChildStdin;
use tokio_util::sync::CancellationToken;

use super::budget;
use crate::process::kill_group;
use capture::Capture;

/// Where a task stands (spec 000 `TBackgroundTaskStatus`, plus `lost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Accepted, not started yet.
    Queued,
    /// Running.
    Running,
    /// Running, but blocked on a permission answer.
    WaitingPermission,
    /// Ended successfully (a process exited with code 0).
    Completed,
    /// Ended with an error: a non-zero exit, a signal, a watchdog (see
    /// [`BackgroundTaskInfo::timeout_reason`]) or a failure to run.
    Failed,
    /// Stopped on request (cancel, `KillShell`) or by the session's shutdown.
    Cancelled,
    /// Was running when the process that ran the session ended; its outcome is unknown.
    Lost,
}

impl TaskStatus {
    /// True once the task can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Lost
        )
    }

    /// True while the task counts against the concurrency limit.
    pub fn is_active(self) -> bool {
        !self.is_terminal()
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::WaitingPermission => "waiting_permission",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Lost => "lost",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The lifecycle as a pure function (spec 000 `transitionBackgroundTaskStatus`): the new status
/// when `from → to` is allowed, else a sentence naming both. A terminal status never changes.
pub fn transition_status(from: TaskStatus, to: TaskStatus) -> Result<TaskStatus, String> {
    use TaskStatus::*;
    let allowed = match from {
        Queued => matches!(to, Running | Failed | Cancelled | Lost),
        Running => matches!(
            to,
            WaitingPermission | Completed | Failed | Cancelled | Lost
        ),
        WaitingPermission => matches!(to, Running | Completed | Failed | Cancelled | Lost),
        Completed | Failed | Cancelled | Lost => false,
    };
    if allowed {
        Ok(to)
    } else {
        Err(format!("a background task cannot go from {from} to {to}"))
    }
}

/// Which watchdog ended a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutReason {
    /// It ran longer than its overall limit.
    MaxRuntime,
    /// It produced no output for longer than its idle limit.
    Idle,
}

/// What runs in a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A shell command (Bash with `run_in_background`).
    Process,
    /// A subagent session.
    Agent,
}

/// Who started a task (spec 000 `IExecutionOrigin`, reduced to what the runtime knows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskOrigin {
    /// `tool` (the model called a tool), `command`, `host`.
    pub kind: String,
    /// The tool or command name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool call's id, for `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

impl TaskOrigin {
    /// Started by the model through `tool`, in call `tool_use_id`.
    pub fn tool(tool: &str, tool_use_id: &str) -> Self {
        TaskOrigin {
            kind: "tool".into(),
            name: Some(tool.into()),
            tool_use_id: Some(tool_use_id.into()),
        }
    }

    /// Started by the host program.
    pub fn host() -> Self {
        TaskOrigin {
            kind: "host".into(),
            name: None,
            tool_use_id: None,
        }
    }
}

/// The limits and watchdogs of a session's background tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundLimits {
    /// Most tasks queued or running at once; one more is refused with a message naming the
    /// running ones. Default 16.
    pub max_concurrent: usize,
    /// Default overall limit of a task (a Bash call's `timeout` sets its own); `None`: no limit
    /// (the default, as in Claude Code).
    pub max_runtime: Option<Duration>,
    /// A task that writes nothing for this long fails with [`TimeoutReason::Idle`]; `None` (the
    /// default): no idle limit.
    pub idle_timeout: Option<Duration>,
    /// Bytes of each output stream kept in memory for `BashOutput` (the file has everything).
    /// Default 256 KiB.
    pub capture_bytes: usize,
}

impl Default for BackgroundLimits {
    fn default() -> Self {
        BackgroundLimits {
            max_concurrent: 16,
            max_runtime: None,
            idle_timeout: None,
            capture_bytes: 256 * 1024,
        }
    }
}

/// A snapshot of one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundTaskInfo {
    /// Task id (`bash_1`, `bash_2`, …), unique within the session, also across resumes.
    pub id: String,
    /// What runs in it.
    pub kind: TaskKind,
    /// Who started it.
    pub origin: TaskOrigin,
    /// The command line as given.
    pub command: String,
    /// A short description (Bash's `description`), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// The shell's pid, which is also the process-group id of the task's tree.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Current status.
    pub status: TaskStatus,
    /// The exit code, once the process exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended the process, if one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// Why it failed, was cancelled or was lost.
    #[serde(default)]
    pub error: Option<String>,
    /// Which watchdog ended it, when one did.
    #[serde(default)]
    pub timeout_reason: Option<TimeoutReason>,
    /// What it is doing now, when its runner says (a subagent's current tool).
    #[serde(default)]
    pub current_action: Option<String>,
    /// File receiving its stdout (the full output).
    pub stdout_path: PathBuf,
    /// File receiving its stderr.
    pub stderr_path: PathBuf,
    /// Bytes of output so far (both streams).
    #[serde(default)]
    pub output_bytes: u64,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it ended, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub ended_at_ms: Option<u64>,
}

/// A task's lifecycle change, delivered to [`BackgroundTasks::subscribe`] listeners (an
/// interactive session sends it as `background_task_event` data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackgroundTaskEvent {
    /// `state_changed`.
    pub event: &'static str,
    /// `process` or `agent`.
    pub task_kind: TaskKind,
    /// The task.
    pub task_id: String,
    /// Who started it.
    pub origin: TaskOrigin,
    /// The status before (`None` when the task was just created).
    pub from: Option<TaskStatus>,
    /// The status now.
    pub status: TaskStatus,
    /// The whole task after the change.
    pub task: BackgroundTaskInfo,
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

/// The output a task produced since the previous [`BackgroundTasks::read_new_output`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewTaskOutput {
    /// The task at the time of reading.
    pub info: BackgroundTaskInfo,
    /// New stdout.
    pub stdout: String,
    /// New stderr.
    pub stderr: String,
    /// New bytes that no longer fit in memory (read them from the files).
    pub dropped_bytes: u64,
}

/// Which output file of a task a log read pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    /// Standard output.
    #[default]
    Stdout,
    /// Standard error.
    Stderr,
}

/// One page of a task's log file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskLogPage {
    /// The task.
    pub task_id: String,
    /// The file read.
    pub stream: LogStream,
    /// The file's path.
    pub path: PathBuf,
    /// Byte offset the page starts at.
    pub offset: u64,
    /// Offset of the next page (equals `total_bytes` at the end).
    pub next_offset: u64,
    /// The file's size when read.
    pub total_bytes: u64,
    /// The page (UTF-8, invalid sequences replaced).
    pub text: String,
}

/// Largest page [`BackgroundTasks::read_log`] returns.
pub const MAX_LOG_PAGE_BYTES: usize = 1024 * 1024;

/// A listener of task events.
pub type BackgroundTaskListener = Arc<dyn Fn(&BackgroundTaskEvent) + Send + Sync>;

struct Task {
    info: BackgroundTaskInfo,
    /// Cancels the runner (`None` for tasks loaded from an earlier run).
    stop: Option<CancellationToken>,
    stdin: Option<Arc<tokio::sync::Mutex<Option<ChildStdin>>>>,
    stdout: Capture,
    stderr: Capture,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    tasks: BTreeMap<u64, Task>,
    loaded: bool,
    warnings: Vec<String>,
    listeners: Vec<BackgroundTaskListener>,
}

impl Registry {
    fn find(&self, id: &str) -> Option<&Task> {
        self.tasks.values().find(|t| t.info.id == id)
    }

    fn find_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.values_mut().find(|t| t.info.id == id)
    }

    fn unknown(&self, id: &str) -> String {
        let known: Vec<&str> = self.tasks.values().map(|t| t.info.id.as_str()).collect();
        if known.is_empty() {
            format!("No background task `{id}`: none has been started in this session.")
        } else {
            format!(
                "No background task `{id}`. Known tasks: {}.",
                known.join(", ")
            )
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            if let Some(stop) = task
                .info
                .status
                .is_active()
                .then_some(())
                .and(task.stop.as_ref())
            {
                stop.cancel();
                // The runner may never run again (runtime shutting down), so kill directly.
                if let Some(pid) = task.info.pid {
                    kill_group(pid);
                }
            }
        }
    }
}

pub(crate) struct ManagerInner {
    registry: Mutex<Registry>,
    /// Woken on every transition.
    changed: tokio::sync::Notify,
    limits: BackgroundLimits,
    /// The saved session's folder (`None`: not saved, nothing is persisted).
    store_dir: Option<PathBuf>,
}

/// The background tasks of one session. Cheap to clone; all clones share the tasks. When the
/// last clone is dropped, every task still running is killed (its whole process group).
#[derive(Clone)]
pub struct BackgroundTasks {
    inner: Arc<ManagerInner>,
}

/// The spec's name for the manager.
pub type BackgroundTaskManager = BackgroundTasks;

impl Default for BackgroundTasks {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for BackgroundTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundTasks")
            .field("tasks", &self.list())
            .finish()
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Where the records of a saved session's tasks are kept.
fn index_path(store_dir: &Path) -> PathBuf {
    store_dir.join("tasks").join("index.json")
}

/// The largest task index read back on resume.
const TASK_INDEX_FILE: crate::files::FileKind =
    crate::files::FileKind::new("background task index", 16 * 1024 * 1024);

#[derive(Serialize, Deserialize)]
struct TaskIndex {
    tasks: Vec<BackgroundTaskInfo>,
}

impl BackgroundTasks {
    /// An empty manager with the default limits that persists nothing.
    pub fn new() -> Self {
        Self::with_limits(BackgroundLimits::default(), None)
    }

    /// A manager with `limits`, keeping its records in `store_dir` (a saved session's folder),
    /// where it also finds the tasks of earlier runs of the session.
    pub fn with_limits(limits: BackgroundLimits, store_dir: Option<PathBuf>) -> Self {
        BackgroundTasks {
            inner: Arc::new(ManagerInner {
                registry: Mutex::new(Registry::default()),
                changed: tokio::sync::Notify::new(),
                limits,
                store_dir,
            }),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &BackgroundLimits {
        &self.inner.limits
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.inner.lock()
    }

    /// Calls `listener` with every later task event (on the thread that made the change; keep
    /// it short and never call back into the manager from it).
    pub fn subscribe(&self, listener: BackgroundTaskListener) {
        self.lock().listeners.push(listener);
    }

    /// Problems met reading the records of earlier runs (a damaged index file), one sentence
    /// each naming the file.
    pub fn warnings(&self) -> Vec<String> {
        self.lock().warnings.clone()
    }

    /// Every task, oldest first.
    pub fn list(&self) -> Vec<BackgroundTaskInfo> {
        self.lock().tasks.values().map(|t| t.info.clone()).collect()
    }

    /// One task by id.
    pub fn get(&self, id: &str) -> Option<BackgroundTaskInfo> {
        self.lock().find(id).map(|t| t.info.clone())
    }

    /// The task's stdout and stderr so far from its files, each cut to `max_bytes` (head + tail
    /// with an exact omission marker naming the file that holds everything).
    pub fn read_output(&self, id: &str, max_bytes: usize) -> Result<BackgroundOutput, String> {
        let info = self.get(id).ok_or_else(|| self.lock().unknown(id))?;
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

    /// The output the task produced since the last call (for `BashOutput`), from memory.
    pub fn read_new_output(&self, id: &str) -> Result<NewTaskOutput, String> {
        let mut registry = self.lock();
        let Some(task) = registry.find_mut(id) else {
            return Err(registry.unknown(id));
        };
        let stdout = task.stdout.take_new();
        let stderr = task.stderr.take_new();
        Ok(NewTaskOutput {
            info: task.info.clone(),
            stdout: stdout.text,
            stderr: stderr.text,
            dropped_bytes: stdout.dropped + stderr.dropped,
        })
    }

    /// A page of the task's log file: up to `max_bytes` (at most [`MAX_LOG_PAGE_BYTES`]) from
    /// byte `offset`. Works for finished tasks and tasks of earlier runs too.
    pub fn read_log(
        &self,
        id: &str,
        stream: LogStream,
        offset: u64,
        max_bytes: usize,
    ) -> Result<TaskLogPage, String> {
        let info = self.get(id).ok_or_else(|| self.lock().unknown(id))?;
        let path = match stream {
            LogStream::Stdout => info.stdout_path,
            LogStream::Stderr => info.stderr_path,
        };
        let describe = |err: std::io::Error| format!("cannot read {}: {err}", path.display());
        let mut file = std::fs::File::open(&path).map_err(describe)?;
        let total_bytes = file.metadata().map_err(describe)?.len();
        let offset = offset.min(total_bytes);
        file.seek(SeekFrom::Start(offset)).map_err(describe)?;
        let mut bytes = Vec::new();
        file.take(max_bytes.clamp(1, MAX_LOG_PAGE_BYTES) as u64)
            .read_to_end(&mut bytes)
            .map_err(describe)?;
        Ok(TaskLogPage {
            task_id: id.to_string(),
            stream,
            next_offset: offset + bytes.len() as u64,
            offset,
            total_bytes,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            path,
        })
    }

    /// Waits until the task has ended (or `timeout` passes) and returns it as it is then.
    pub async fn wait(&self, id: &str, timeout: Duration) -> Result<BackgroundTaskInfo, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.inner.changed.notified();
            let info = self.get(id).ok_or_else(|| self.lock().unknown(id))?;
            if info.status.is_terminal() {
                return Ok(info);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.get(id).ok_or_else(|| self.lock().unknown(id));
            }
        }
    }

    /// Waits until no task is queued or running, at most `timeout` (after the session stopped
    /// its processes, so every task's final state is recorded before shutdown returns).
    pub async fn settle(&self, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.inner.changed.notified();
            let active = self
                .lock()
                .tasks
                .values()
                .any(|t| t.info.status.is_active() && t.stop.is_some());
            if !active || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return;
            }
        }
    }

    /// Stops the task's whole process tree (TERM, grace, KILL) and returns it once stopped.
    /// A task that already ended is refused with its status.
    pub async fn cancel(&self, id: &str) -> Result<BackgroundTaskInfo, String> {
        {
            let registry = self.lock();
            let task = registry.find(id).ok_or_else(|| registry.unknown(id))?;
            if task.info.status.is_terminal() {
                return Err(format!(
                    "Background task `{id}` is not running: it {}.",
                    describe_end(&task.info)
                ));
            }
            if let Some(stop) = &task.stop {
                stop.cancel();
            }
        }
        self.wait(id, Duration::from_secs(30)).await
    }

    /// [`cancel`](Self::cancel) under its older name.
    pub async fn kill(&self, id: &str) -> Result<BackgroundTaskInfo, String> {
        self.cancel(id).await
    }

    /// Stops every running task (see [`BackgroundTasks::cancel`]).
    pub async fn kill_all(&self) {
        let ids: Vec<String> = self
            .list()
            .into_iter()
            .filter(|t| t.status.is_active())
            .map(|t| t.id)
            .collect();
        for id in ids {
            let _ = self.cancel(&id).await;
        }
    }

    /// Removes an ended task from the list (its output files stay in the session's folder).
    /// A task still running is refused: cancel it first.
    pub fn close(&self, id: &str) -> Result<BackgroundTaskInfo, String> {
        let mut registry = self.lock();
        let Some((&key, task)) = registry.tasks.iter().find(|(_, t)| t.info.id == id) else {
            return Err(registry.unknown(id));
        };
        if task.info.status.is_active() {
            return Err(format!(
                "Background task `{id}` is still {}; cancel it before closing it.",
                task.info.status
            ));
        }
        let removed = registry.tasks.remove(&key).map(|t| t.info);
        self.inner.persist(&mut registry);
        removed.ok_or_else(|| registry.unknown(id))
    }

    /// Writes `input` to the task's standard input (a REPL, a server reading commands).
    pub async fn send(&self, id: &str, input: &str) -> Result<(), String> {
        let stdin = {
            let registry = self.lock();
            let task = registry.find(id).ok_or_else(|| registry.unknown(id))?;
            if !task.info.status.is_active() {
                return Err(format!(
                    "Background task `{id}` is not running: it {}.",
                    describe_end(&task.info)
                ));
            }
            task.stdin
                .clone()
                .ok_or_else(|| format!("Background task `{id}` takes no input."))?
        };
        use tokio::io::AsyncWriteExt;
        let mut guard = stdin.lock().await;
        let pipe = guard
            .as_mut()
            .ok_or_else(|| format!("The input of background task `{id}` is closed."))?;
        let written = async {
            pipe.write_all(input.as_bytes()).await?;
            pipe.flush().await
        };
        written
            .await
            .map_err(|err| format!("Cannot write to background task `{id}`: {err}"))
    }

    /// The ids of the active tasks, or the refusal when one more would exceed the limit.
    fn check_capacity(&self, registry: &Registry) -> Result<(), String> {
        let active: Vec<&str> = registry
            .tasks
            .values()
            .filter(|t| t.info.status.is_active())
            .map(|t| t.info.id.as_str())
            .collect();
        let limit = self.inner.limits.max_concurrent;
        if active.len() >= limit {
            return Err(format!(
                "Too many background tasks: {} of at most {limit} are running ({}). Stop one \
                 with KillShell, or wait for one to finish, before starting another.",
                active.len(),
                active.join(", ")
            ));
        }
        Ok(())
    }

    /// Reserves an id for a new task after checking the limit.
    pub(crate) fn reserve(&self, prefix: &str) -> Result<(u64, String), String> {
        let mut registry = self.lock();
        self.check_capacity(&registry)?;
        registry.next_id += 1;
        let number = registry.next_id;
        Ok((number, format!("{prefix}_{number}")))
    }

    /// Adds a new task as `queued`, then marks it `running` (two events); returns it.
    pub(crate) fn insert_running(
        &self,
        number: u64,
        info: BackgroundTaskInfo,
        stop: CancellationToken,
        stdin: Option<ChildStdin>,
    ) -> BackgroundTaskInfo {
        let capture = self.inner.limits.capture_bytes;
        let id = info.id.clone();
        let mut fallback = info.clone();
        fallback.status = TaskStatus::Running;
        let event = {
            let mut registry = self.lock();
            registry.tasks.insert(
                number,
                Task {
                    info,
                    stop: Some(stop),
                    stdin: stdin.map(|s| Arc::new(tokio::sync::Mutex::new(Some(s)))),
                    stdout: Capture::new(capture),
                    stderr: Capture::new(capture),
                },
            );
            self.inner.persist(&mut registry);
            let task = registry.find(&id).map(|t| t.info.clone());
            let listeners = registry.listeners.clone();
            (task, listeners)
        };
        if let (Some(task), listeners) = event {
            notify(
                &listeners,
                &BackgroundTaskEvent {
                    event: "state_changed",
                    task_kind: task.kind,
                    task_id: task.id.clone(),
                    origin: task.origin.clone(),
                    from: None,
                    status: task.status,
                    task,
                },
            );
        }
        let _ = self.inner.transition(&id, TaskStatus::Running, |_| {});
        self.get(&id).unwrap_or(fallback)
    }

    pub(crate) fn downgrade(&self) -> Weak<ManagerInner> {
        Arc::downgrade(&self.inner)
    }
}

impl ManagerInner {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        // Every critical section is a map update: a panic cannot leave it half done.
        let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        if !registry.loaded {
            registry.loaded = true;
            self.load(&mut registry);
        }
        registry
    }

    /// Reads the records of earlier runs, marking what was still running as lost.
    fn load(&self, registry: &mut Registry) {
        let Some(dir) = &self.store_dir else { return };
        let path = index_path(dir);
        if !path.exists() {
            return;
        }
        let parsed = crate::files::read_regular_text(&path, &TASK_INDEX_FILE)
            .map_err(|err| err.to_string())
            .and_then(|text| {
                serde_json::from_str::<TaskIndex>(&text)
                    .map_err(|err| format!("{} is not a valid task index: {err}", path.display()))
            });
        let index = match parsed {
            Ok(index) => index,
            Err(problem) => {
                registry.warnings.push(format!(
                    "The background tasks of the earlier run are not listed: {problem}"
                ));
                return;
            }
        };
        let mut lost = false;
        for mut info in index.tasks {
            if info.status.is_active() {
                info.status = TaskStatus::Lost;
                info.ended_at_ms = Some(now_ms());
                info.error = Some(format!(
                    "The process running the session ended while this task ran{}; its outcome \
                     is unknown.",
                    info.pid
                        .map(|pid| format!(" (pid {pid})"))
                        .unwrap_or_default()
                ));
                lost = true;
            }
            let number = info
                .id
                .rsplit('_')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(registry.next_id + 1);
            registry.next_id = registry.next_id.max(number);
            let key = if registry.tasks.contains_key(&number) {
                registry.next_id + 1 + registry.tasks.len() as u64
            } else {
                number
            };
            registry.tasks.insert(
                key,
                Task {
                    info,
                    stop: None,
                    stdin: None,
                    stdout: Capture::new(1),
                    stderr: Capture::new(1),
                },
            );
        }
        if lost {
            self.persist(registry);
        }
    }

    /// Writes the records when the session is saved. A failure is kept as a warning: the tasks
    /// themselves go on.
    fn persist(&self, registry: &mut Registry) {
        let Some(dir) = &self.store_dir else { return };
        let index = TaskIndex {
            tasks: registry.tasks.values().map(|t| t.info.clone()).collect(),
        };
        let path = index_path(dir);
        let written = serde_json::to_vec_pretty(&index)
            .map_err(|err| err.to_string())
            .and_then(|bytes| {
                super::fsutil::atomic_write(&path, &bytes).map_err(|err| err.to_string())
            });
        if let Err(err) = written {
            // Said once, not on every transition.
            let warning = format!(
                "The background tasks cannot be saved to {}: {err}. They run on, but a resumed \
                 session will not list them.",
                path.display()
            );
            if !registry.warnings.contains(&warning) {
                registry.warnings.push(warning);
            }
        }
    }

    /// Moves task `id` to `to` (when the lifecycle allows it), lets `update` fill in the
    /// details, saves, wakes waiters and tells the listeners.
    fn transition(
        &self,
        id: &str,
        to: TaskStatus,
        update: impl FnOnce(&mut BackgroundTaskInfo),
    ) -> Result<(), String> {
        let (event, listeners) = {
            let mut registry = self.lock();
            let Some(task) = registry.find_mut(id) else {
                return Err(format!("no background task `{id}`"));
            };
            let from = task.info.status;
            task.info.status = transition_status(from, to)?;
            update(&mut task.info);
            if to.is_terminal() {
                task.info.ended_at_ms = Some(now_ms());
                task.stdin = None;
            }
            let info = task.info.clone();
            self.persist(&mut registry);
            let event = BackgroundTaskEvent {
                event: "state_changed",
                task_kind: info.kind,
                task_id: info.id.clone(),
                origin: info.origin.clone(),
                from: Some(from),
                status: to,
                task: info,
            };
            (event, registry.listeners.clone())
        };
        self.changed.notify_waiters();
        notify(&listeners, &event);
        Ok(())
    }

    /// Records a chunk of output of task `id`.
    fn record_output(&self, id: &str, stream: LogStream, chunk: &[u8]) {
        let mut registry = self.lock();
        if let Some(task) = registry.find_mut(id) {
            match stream {
                LogStream::Stdout => task.stdout.push(chunk),
                LogStream::Stderr => task.stderr.push(chunk),
            }
            task.info.output_bytes = task.stdout.total() + task.stderr.total();
        }
    }
}

fn notify(listeners: &[BackgroundTaskListener], event: &BackgroundTaskEvent) {
    for listener in listeners {
        listener(event);
    }
}

/// `exited with code 0`, `was cancelled`, … for messages about an ended task.
pub fn describe_end(info: &BackgroundTaskInfo) -> String {
    let detail = info
        .error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    match info.status {
        TaskStatus::Completed => "completed (exit code 0)".to_string(),
        TaskStatus::Failed => format!("failed{detail}"),
        TaskStatus::Cancelled => format!("was cancelled{detail}"),
        TaskStatus::Lost => format!("was lost{detail}"),
        other => format!("is {other}"),
    }
}
