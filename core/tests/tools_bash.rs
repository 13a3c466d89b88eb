//! Bash on real processes: output and exit status, the non-interactive environment, timeouts and
//! aborts that stop a whole process tree, head/tail output with a readable spill file, and
//! background tasks.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod process_common;

use process_common::{alive, read_pid};
use robota::tools::builtins::{BashTool, BuiltinToolsConfig, Builtins, ReadTool, TaskStatus};
use robota::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct Env {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    builtins: Builtins,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        shell: Some("/bin/sh".into()),
        kill_grace: Duration::from_millis(300),
        ..BuiltinToolsConfig::default()
    });
    Env {
        _dir: dir,
        cwd,
        builtins,
    }
}

fn context(cwd: &Path) -> ToolContext {
    ToolContext {
        tool_use_id: "toolu_1".into(),
        cwd: cwd.to_path_buf(),
        cancel: CancellationToken::new(),
    }
}

async fn bash(env: &Env, input: Value) -> ToolOutput {
    BashTool::new(&env.builtins)
        .execute(input, context(&env.cwd))
        .await
}

/// A command whose child and grandchildren keep running: the child is a subshell running two
/// sleepers, one of which ignores SIGTERM (so only the SIGKILL escalation can stop it).
const TREE: &str = "echo started; \
    ( sleep 300 & echo $! > gc1.pid; \
      sh -c 'trap \"\" TERM; echo $$ > gc2.pid; while :; do sleep 1; done' & \
      echo $$ > child.pid; wait ) ; echo never-printed";

fn assert_tree_dead(cwd: &Path) {
    let pids: Vec<i32> = ["child.pid", "gc1.pid", "gc2.pid"]
        .iter()
        .map(|f| read_pid(&cwd.join(f)))
        .collect();
    // The group is already gone when the tool returns; allow the kernel a moment to deliver.
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(!alive(pid), "process {pid} survived");
    }
}

#[tokio::test]
async fn runs_command_and_reports_stdout_stderr_exit_code() {
    let env = env();
    let out = bash(&env, json!({"command": "echo out; echo err >&2; pwd"})).await;
    assert!(!out.is_error, "{}", out.content);
    let cwd = std::fs::canonicalize(&env.cwd).unwrap();
    assert_eq!(out.content, format!("out\n{}\nerr", cwd.display()));
    assert_eq!(out.response["stdout"], format!("out\n{}\n", cwd.display()));
    assert_eq!(out.response["stderr"], "err\n");
    assert_eq!(out.response["exit_code"], 0);
    assert_eq!(out.response["interrupted"], false);

    let out = bash(&env, json!({"command": "echo partial; exit 3"})).await;
    assert!(out.is_error);
    assert_eq!(out.content, "partial\nExit code 3");
    assert_eq!(out.response["exit_code"], 3);

    let out = bash(&env, json!({"command": "true"})).await;
    assert_eq!(out.content, "(no output)");
}

#[tokio::test]
async fn a_signal_is_reported_as_a_signal_not_as_success() {
    let env = env();
    let out = bash(&env, json!({"command": "echo before; kill -9 $$"})).await;
    assert!(out.is_error);
    assert_eq!(out.content, "before\nKilled by signal 9 (SIGKILL)");
    assert_eq!(out.response["exit_code"], Value::Null);
    assert_eq!(out.response["signal"], "SIGKILL");
}

#[tokio::test]
async fn environment_is_non_interactive_and_stdin_is_closed() {
    let env = env();
    let out = bash(
        &env,
        json!({"command": "echo \"$GIT_TERMINAL_PROMPT $PAGER $GIT_PAGER $TERM\"; cat; echo stdin-closed"}),
    )
    .await;
    assert_eq!(out.content, "0 cat cat dumb\nstdin-closed");
}

#[tokio::test]
async fn cdpath_never_reaches_the_shell() {
    // The permission engine resolves `cd name` relative to the working directory; a CDPATH in
    // the configured environment must not send the shell somewhere else.
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(dir.path().join("elsewhere/target")).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    let mut env_vars = std::collections::BTreeMap::new();
    env_vars.insert(
        "CDPATH".to_string(),
        dir.path().join("elsewhere").display().to_string(),
    );
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        shell: Some("/bin/sh".into()),
        env: env_vars,
        ..BuiltinToolsConfig::default()
    });
    let out = BashTool::new(&builtins)
        .execute(
            json!({"command": "echo \"[$CDPATH]\"; cd target && pwd"}),
            context(&cwd),
        )
        .await;
    assert!(out.content.starts_with("[]\n"), "{}", out.content);
    assert!(!out.content.contains("elsewhere"), "{}", out.content);
}

#[tokio::test]
async fn timeout_kills_the_whole_tree_and_returns_partial_output() {
    let env = env();
    let started = Instant::now();
    let out = bash(&env, json!({"command": TREE, "timeout": 700})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.is_error);
    assert!(out.content.starts_with("started\n"), "{}", out.content);
    assert!(
        out.content.contains("Command timed out after 700 ms"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("never-printed"));
    assert_eq!(out.response["timed_out"], true);
    assert_eq!(out.response["interrupted"], true);
    assert_tree_dead(&env.cwd);
}

#[tokio::test]
async fn abort_mid_command_kills_the_tree() {
    let env = env();
    let ctx = context(&env.cwd);
    let cancel = ctx.cancel.clone();
    let tool = BashTool::new(&env.builtins);
    let cwd = env.cwd.clone();
    let aborter = tokio::spawn(async move {
        // Abort once the whole tree is up.
        for file in ["child.pid", "gc1.pid", "gc2.pid"] {
            while !cwd.join(file).exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        cancel.cancel();
    });
    let out = tool.execute(json!({"command": TREE}), ctx).await;
    aborter.await.unwrap();
    assert!(out.is_error);
    assert!(out.content.starts_with("started\n"), "{}", out.content);
    assert!(
        out.content.contains("aborted by the user"),
        "{}",
        out.content
    );
    assert_eq!(out.response["interrupted"], true);
    assert_eq!(out.response["timed_out"], false);
    assert_tree_dead(&env.cwd);
}

#[tokio::test]
async fn abort_before_start_runs_nothing() {
    let env = env();
    let ctx = context(&env.cwd);
    ctx.cancel.cancel();
    let out = BashTool::new(&env.builtins)
        .execute(json!({"command": "touch ran"}), ctx)
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("Aborted before start"));
    assert!(!env.cwd.join("ran").exists());
}

#[tokio::test]
async fn dropping_the_call_kills_the_tree() {
    let env = env();
    let tool = BashTool::new(&env.builtins);
    let call = tool.execute(json!({"command": TREE}), context(&env.cwd));
    let cwd = env.cwd.clone();
    tokio::select! {
        _ = call => panic!("the command should not finish"),
        () = async {
            for file in ["child.pid", "gc1.pid", "gc2.pid"] {
                while !cwd.join(file).exists() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        } => {}
    }
    assert_tree_dead(&env.cwd);
}

#[tokio::test]
async fn huge_output_keeps_head_and_tail_and_spills_a_readable_file() {
    let env = env();
    let out = bash(&env, json!({"command": "seq 1 200000"})).await;
    assert!(!out.is_error);
    assert!(out.content.len() < 31_000, "{} bytes", out.content.len());
    assert!(out.content.starts_with("1\n2\n3\n"));
    assert!(out.content.ends_with("199999\n200000"));
    let marker = out
        .content
        .lines()
        .find(|l| l.starts_with("[... "))
        .expect("omission marker");
    // "[... N lines / M bytes omitted ... full output (200000 lines, 1288895 bytes) saved to P — …"
    let numbers: Vec<u64> = marker
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(4)
        .map(|s| s.parse().unwrap())
        .collect();
    let shown_lines = out.content.lines().count() as u64 - 1;
    assert_eq!(numbers[0] + shown_lines, 200_000, "{marker}");
    assert_eq!(&numbers[2..4], &[200_000, 1_288_895], "{marker}");
    let spill = out.response["stdout_file"].as_str().expect("spill path");
    assert!(marker.contains(spill));

    // The model can page through the spill file with Read.
    let read = ReadTool::new(&env.builtins)
        .execute(
            json!({"file_path": spill, "offset": 100000, "limit": 2}),
            context(&env.cwd),
        )
        .await;
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.contains("lines 100000-100001 of 200000"));
    assert!(read.content.contains("100000\t100000\n100001\t100001"));
}

#[tokio::test]
async fn background_task_runs_and_its_output_can_be_read() {
    let env = env();
    let out = bash(
        &env,
        json!({"command": "echo hi; sleep 0.2; echo bye >&2", "run_in_background": true}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    let id = out.response["background_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(out.content.contains(&id));
    let tasks = env.builtins.background_tasks();
    let task = tasks.wait(&id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.exit_code, Some(0));
    let output = tasks.read_output(&id, 10_000).unwrap();
    assert_eq!(output.stdout, "hi\n");
    assert_eq!(output.stderr, "bye\n");
    assert_eq!(tasks.list().len(), 1);
    // The output files are in the session directory, which Read may open.
    let stdout_file = out.response["stdout_file"].as_str().unwrap();
    let read = ReadTool::new(&env.builtins)
        .execute(json!({"file_path": stdout_file}), context(&env.cwd))
        .await;
    assert!(read.content.ends_with("     1\thi"), "{}", read.content);
}

#[tokio::test]
async fn background_task_can_be_killed_with_its_tree() {
    let env = env();
    let out = bash(&env, json!({"command": TREE, "runInBackground": true})).await;
    let id = out.response["background_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let tasks = env.builtins.background_tasks();
    for file in ["child.pid", "gc1.pid", "gc2.pid"] {
        read_pid(&env.cwd.join(file));
    }
    assert_eq!(tasks.get(&id).unwrap().status, TaskStatus::Running);
    let task = tasks.kill(&id).await.unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    assert_tree_dead(&env.cwd);
    assert!(tasks
        .read_output("bash_99", 100)
        .unwrap_err()
        .contains("bash_1"));
}

#[tokio::test]
async fn dropping_the_registry_kills_background_tasks() {
    let env = env();
    let out = bash(
        &env,
        json!({"command": "sleep 300 & echo $! > gc1.pid; echo $$ > child.pid; wait", "run_in_background": true}),
    )
    .await;
    assert!(!out.is_error);
    let pids = [
        read_pid(&env.cwd.join("child.pid")),
        read_pid(&env.cwd.join("gc1.pid")),
    ];
    let Env {
        _dir,
        cwd: _,
        builtins,
    } = env;
    drop(builtins);
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(pids.iter().all(|&p| !alive(p)));
}

#[tokio::test]
async fn bad_input_gets_actionable_errors() {
    let env = env();
    let out = bash(&env, json!({"timeout": "soon", "cmd": "ls"})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("unknown field `cmd`"),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains("`timeout` must be an integer >= 1, got a string \"soon\""),
        "{}",
        out.content
    );
    assert!(out.content.contains("missing required field `command`"));
    let out = bash(&env, json!({"command": "echo $((1+1))", "timeout": "5000"})).await;
    assert_eq!(out.content, "2");
}

#[tokio::test]
async fn processes_a_call_leaves_running_are_stopped_when_it_ends() {
    let env = env();
    // One leftover is a plain `&` sleeper, the other ignores SIGTERM (only SIGKILL stops it).
    let out = bash(
        &env,
        json!({"command": "sleep 300 & echo $! > gc1.pid; \
            sh -c 'trap \"\" TERM; echo $$ > gc2.pid; while :; do sleep 1; done' & \
            while [ ! -s gc2.pid ]; do sleep 0.05; done; echo started"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.starts_with("started\n"), "{}", out.content);
    assert!(
        out.content.contains("were stopped when it finished"),
        "{}",
        out.content
    );
    assert_eq!(out.response["left_running_stopped"], true);
    // Gone when the call returns, not some time later.
    for file in ["gc1.pid", "gc2.pid"] {
        let pid = read_pid(&env.cwd.join(file));
        assert!(!alive(pid), "{file}: process {pid} outlived its call");
    }
    assert!(env.builtins.processes().list().is_empty());

    // A call that leaves nothing behind gets no such note.
    let out = bash(&env, json!({"command": "echo quiet"})).await;
    assert_eq!(out.content, "quiet");
    assert_eq!(out.response["left_running_stopped"], false);
}

#[tokio::test]
async fn a_background_tasks_leftovers_end_with_the_task() {
    let env = env();
    let out = bash(
        &env,
        json!({"command": "sleep 300 & echo $! > gc1.pid; sleep 0.3", "run_in_background": true}),
    )
    .await;
    let id = out.response["background_task_id"].as_str().unwrap();
    let pid = read_pid(&env.cwd.join("gc1.pid"));
    let tasks = env.builtins.background_tasks();
    let task = tasks.wait(id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert!(!alive(pid), "the task's `&` child {pid} outlived the task");
    assert!(env.builtins.processes().list().is_empty());
}

#[tokio::test]
async fn stopping_the_sessions_processes_stops_background_tasks() {
    let env = env();
    let out = bash(&env, json!({"command": TREE, "run_in_background": true})).await;
    let id = out.response["background_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    for file in ["child.pid", "gc1.pid", "gc2.pid"] {
        read_pid(&env.cwd.join(file));
    }
    env.builtins
        .processes()
        .stop_all(Duration::from_millis(300))
        .await;
    assert_tree_dead(&env.cwd);
    let tasks = env.builtins.background_tasks();
    let task = tasks.wait(&id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled);
    // Once the session's processes are stopped, nothing new starts.
    for background in [true, false] {
        let input = json!({"command": "touch late", "run_in_background": background});
        let out = bash(&env, input).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("the command was not run"),
            "{}",
            out.content
        );
    }
    assert!(!env.cwd.join("late").exists());
}

/// The file names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn spill_files_are_bounded_oldest_first_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let session_dir = dir.path().join("session");
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(session_dir.clone()),
        shell: Some("/bin/sh".into()),
        max_spill_bytes: 300_000,
        ..BuiltinToolsConfig::default()
    });
    let run = |command: &str| {
        let tool = BashTool::new(&builtins);
        let input = json!({ "command": command });
        let ctx = context(&cwd);
        async move { tool.execute(input, ctx).await }
    };
    // `seq 1 30000` prints 168 894 bytes: one spill fits, two do not.
    let first = run("seq 1 30000").await;
    let first_file = PathBuf::from(first.response["stdout_file"].as_str().unwrap());
    assert_eq!(
        first_file.parent().unwrap(),
        session_dir.canonicalize().unwrap().join("spill")
    );
    assert!(!first.content.contains("removed"), "{}", first.content);
    let second = run("seq 1 30000").await;
    let second_file = PathBuf::from(second.response["stdout_file"].as_str().unwrap());
    let first_name = first_file
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        second
            .content
            .contains(&format!("({first_name}) was removed")),
        "{}",
        second.content
    );
    assert!(!first_file.exists());
    assert!(second_file.exists());
    assert!(names_in(&session_dir.join("running")).is_empty());

    // The model is told why its old spill file is gone.
    let read = ReadTool::new(&builtins)
        .execute(json!({"file_path": first_file}), context(&cwd))
        .await;
    assert!(read.is_error);
    assert!(
        read.content.contains("saved tool output"),
        "{}",
        read.content
    );

    // One output larger than the whole limit is kept cut to it.
    let huge = run("seq 1 100000").await;
    let huge_file = PathBuf::from(huge.response["stdout_file"].as_str().unwrap());
    assert!(
        huge.content.contains("was cut to its first"),
        "{}",
        huge.content
    );
    assert!(!second_file.exists());
    let total: u64 = std::fs::read_dir(session_dir.join("spill"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(total, 300_000);
    assert!(huge_file.exists());
}
