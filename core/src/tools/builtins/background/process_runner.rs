//! The process runner: a shell command in the session's cwd and environment, in its own process
//! group joined to the session's registry, its output streamed to two files and to the manager's
//! bounded capture, its input open for [`BackgroundTasks::send`], and the watchdogs (overall and
//! idle timeouts) around it. However it ends — exit, cancel, watchdog, session shutdown — its
//! whole group is stopped before the task's final state is recorded.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::external::queued_info;
use super::{
    BackgroundTaskInfo, BackgroundTasks, ExternalTaskRequest, LogStream, ManagerInner, TaskKind,
    TaskOrigin, TaskStatus, TimeoutReason,
};
use crate::process::ProcessKind;
use crate::sandbox::Sandbox;
use crate::tools::builtins::{process, Shared};

/// What to run.
pub(crate) struct ProcessRequest<'a> {
    pub command: &'a str,
    pub description: Option<&'a str>,
    pub cwd: &'a Path,
    pub origin: TaskOrigin,
    /// Overall limit (else the manager's default).
    pub max_runtime: Option<Duration>,
}

/// How the shell's run ended.
enum Ending {
    Exited(std::io::Result<std::process::ExitStatus>),
    Cancelled,
    SessionEnded,
    TimedOut(TimeoutReason, Duration),
}

/// How often the idle watchdog looks at the last output time.
fn idle_tick(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(1))
}

/// Starts `request` as a background task of `manager`.
pub(crate) fn start(
    manager: &BackgroundTasks,
    shared: &Shared,
    request: ProcessRequest<'_>,
    sandbox: Option<&Sandbox>,
) -> Result<BackgroundTaskInfo, String> {
    if shared.processes.is_closed() {
        return Err("the session is shutting down".into());
    }
    let (number, id) = manager.reserve("bash")?;
    let session_dir = shared.workspace.session_dir();
    let stdout_path = session_dir.new_task_path(&id, "stdout")?;
    let stderr_path = stdout_path.with_extension("stderr");
    let open = |path: &Path| {
        std::fs::File::create(path)
            .map_err(|err| format!("cannot create {}: {err}", path.display()))
    };
    let files = (open(&stdout_path)?, open(&stderr_path)?);
    let mut child = process::spawn_shell(
        &shared.shell,
        request.command,
        request.cwd,
        &shared.env(),
        [Stdio::piped(), Stdio::piped(), Stdio::piped()],
        sandbox,
    )
    .map_err(|err| err.describe(&shared.shell))?;
    let pid = child.id();
    // The task's tree belongs to the session: its shutdown (or drop) stops it.
    let group = pid.map(|pgid| {
        shared.processes.adopt(
            pgid,
            ProcessKind::BackgroundTask,
            &format!("{id}: {}", request.command),
        )
    });
    let stop = CancellationToken::new();
    let info = queued_info(
        id.clone(),
        ExternalTaskRequest {
            kind: TaskKind::Process,
            id_prefix: "bash",
            origin: request.origin,
            command: request.command,
            description: request.description,
            cwd: request.cwd,
        },
        pid,
        (stdout_path.clone(), stderr_path.clone()),
    );
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let started = manager.insert_running(number, info, stop.clone(), stdin);

    let weak = manager.downgrade();
    let last_output = Arc::new(Mutex::new(Instant::now()));
    let readers = [
        stdout.map(|pipe| pump(pipe, files.0, LogStream::Stdout, &id, &weak, &last_output)),
        stderr.map(|pipe| pump(pipe, files.1, LogStream::Stderr, &id, &weak, &last_output)),
    ];
    let limits = manager.limits().clone();
    let max_runtime = request.max_runtime.or(limits.max_runtime);
    let idle = limits.idle_timeout;
    let grace = shared.kill_grace;
    tokio::spawn(async move {
        let started = tokio::time::Instant::now();
        let ending = loop {
            let session_ended = async {
                match &group {
                    Some(group) => group.stop_requested().await,
                    None => std::future::pending().await,
                }
            };
            let overall = async {
                match max_runtime {
                    Some(limit) => tokio::time::sleep_until(started + limit).await,
                    None => std::future::pending().await,
                }
            };
            let tick = async {
                match idle {
                    Some(limit) => tokio::time::sleep(idle_tick(limit)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                waited = child.wait() => break Ending::Exited(waited),
                () = stop.cancelled() => break Ending::Cancelled,
                () = session_ended => break Ending::SessionEnded,
                () = overall => {
                    break Ending::TimedOut(TimeoutReason::MaxRuntime, max_runtime.unwrap_or_default())
                }
                () = tick => {
                    let quiet = last_output.lock().unwrap_or_else(PoisonError::into_inner).elapsed();
                    if let Some(limit) = idle.filter(|limit| quiet >= *limit) {
                        break Ending::TimedOut(TimeoutReason::Idle, limit);
                    }
                }
            }
        };
        // The session's shutdown signals every group itself: a shell that died of that signal
        // was stopped by the session, not failed.
        let ending = match ending {
            Ending::Exited(Ok(status))
                if group.as_ref().is_some_and(|g| g.is_stop_requested())
                    && process::exit_parts(&status).0 != Some(0) =>
            {
                Ending::SessionEnded
            }
            other => other,
        };
        let stopped = match &ending {
            Ending::Exited(_) => None,
            _ => match &group {
                Some(group) => group.terminate(&mut child, grace).await,
                None => None,
            },
        };
        // The task ends with its shell: what it left running in its group is stopped too.
        if let Some(group) = group {
            group.finish(grace).await;
        }
        // The pipes close once the group is gone; a process that left the group on purpose
        // could hold them open, so the readers get a moment and are then left behind.
        for reader in readers.into_iter().flatten() {
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        let Some(manager) = weak.upgrade() else {
            return;
        };
        let (status, exit, error, reason) = outcome(ending, stopped);
        let (code, signal) = exit;
        let _ = manager.transition(&id, status, |info| {
            info.exit_code = code;
            info.signal = signal;
            info.error = error;
            info.timeout_reason = reason;
        });
    });
    Ok(started)
}

type Outcome = (
    TaskStatus,
    (Option<i32>, Option<i32>),
    Option<String>,
    Option<TimeoutReason>,
);

/// The final status of a run, its exit parts, the error sentence and the watchdog's reason.
fn outcome(ending: Ending, stopped: Option<std::process::ExitStatus>) -> Outcome {
    let parts = |status: Option<std::process::ExitStatus>| {
        status
            .as_ref()
            .map(process::exit_parts)
            .unwrap_or((None, None))
    };
    match ending {
        Ending::Exited(Ok(status)) => match process::exit_parts(&status) {
            (Some(0), _) => (TaskStatus::Completed, (Some(0), None), None, None),
            (Some(code), _) => (
                TaskStatus::Failed,
                (Some(code), None),
                Some(format!("exit code {code}")),
                None,
            ),
            (None, Some(signal)) => (
                TaskStatus::Failed,
                (None, Some(signal)),
                Some(format!(
                    "killed by signal {signal} ({})",
                    process::signal_name(signal)
                )),
                None,
            ),
            (None, None) => (
                TaskStatus::Failed,
                (None, None),
                Some("the process ended without an exit status".into()),
                None,
            ),
        },
        Ending::Exited(Err(err)) => (
            TaskStatus::Failed,
            (None, None),
            Some(format!("waiting for the process failed: {err}")),
            None,
        ),
        Ending::Cancelled => (
            TaskStatus::Cancelled,
            parts(stopped),
            Some("cancelled; its process tree was stopped".into()),
            None,
        ),
        Ending::SessionEnded => (
            TaskStatus::Cancelled,
            parts(stopped),
            Some("the session ended; its process tree was stopped".into()),
            None,
        ),
        Ending::TimedOut(reason, limit) => {
            let ms = limit.as_millis();
            let why = match reason {
                TimeoutReason::MaxRuntime => format!("ran longer than its limit of {ms} ms"),
                TimeoutReason::Idle => format!("wrote no output for {ms} ms (idle limit)"),
            };
            (
                TaskStatus::Failed,
                parts(stopped),
                Some(format!("{why}; its process tree was stopped")),
                Some(reason),
            )
        }
    }
}

/// Copies one output pipe to its file and to the manager's capture, noting when output came.
fn pump(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    mut file: std::fs::File,
    stream: LogStream,
    id: &str,
    manager: &Weak<ManagerInner>,
    last_output: &Arc<Mutex<Instant>>,
) -> tokio::task::JoinHandle<()> {
    let (id, manager, last_output) = (id.to_string(), manager.clone(), last_output.clone());
    tokio::spawn(async move {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            let read = match pipe.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = &buffer[..read];
            // The file is the full record; a write error (disk full) must not stop the task.
            let _ = file.write_all(chunk);
            *last_output.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
            if let Some(manager) = manager.upgrade() {
                manager.record_output(&id, stream, chunk);
            }
        }
        let _ = file.flush();
    })
}
