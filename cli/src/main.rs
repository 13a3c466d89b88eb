//! `robota`: the command line for the robota agent engine.
//!
//! `robota -p PROMPT` runs one query headless and prints the answer (text, JSON or a stream of
//! JSON events; `-p -` reads the prompt from stdin); `robota` alone starts a small line-based
//! REPL, `robota PROMPT` starts it with that prompt. Progress — tool calls with their end and
//! duration, denials, a spinner on a terminal — goes to stderr ([`render`]). Both drive core's
//! `InteractiveSession` (the session logic lives there): argument handling is in [`args`], the
//! session is opened in [`driver`], output formatting in [`output`] and [`repl`].
//! `robota serve` hosts sessions over HTTP + SSE and WebSocket with a web monitor ([`serve`],
//! over crate `robota-server`); `robota mcp-serve` is the agent as an MCP server over stdio or
//! streamable HTTP ([`mcp_serve`]); `robota acp` is an Agent Client Protocol agent over stdio for
//! editors ([`acp`]); `robota providers` lists provider types and the model catalog and probes
//! an endpoint and key ([`providers`]). `--input-format stream-json --output-format stream-json` speaks the Claude
//! Agent SDK's protocol on stdin/stdout, so the SDKs run robota as their CLI ([`claude_sdk`]).
//!
//! Exit codes: 0 the model answered, 1 the run failed (model/network error, a prompt a hook
//! rejected), 2 usage or configuration error (bad flag, bad settings, missing API key), 3 the
//! model refused, 4 the answer was cut off at the output token limit, 130 interrupted (Ctrl-C),
//! 143 terminated (SIGTERM), 129 hung up (SIGHUP). On any of these signals the running turn is
//! aborted and the session shut down before the CLI exits, so no process it started is left
//! running (see [`signals`]).

mod acp;
mod args;
mod claude_sdk;
mod driver;
mod mcp_serve;
mod output;
mod prompt;
mod providers;
mod render;
mod repl;
mod serve;
mod session_flags;
mod signals;

use std::process::ExitCode;

use args::Cli;
use driver::CliError;

/// Exit code: the run failed.
pub const EXIT_RUN_ERROR: u8 = 1;
/// Exit code: bad arguments or configuration.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the model refused to answer (`stop_reason: "refused"`).
pub const EXIT_REFUSED: u8 = 3;
/// Exit code: the answer was cut off at the output token limit (`stop_reason: "truncated"`).
pub const EXIT_TRUNCATED: u8 = 4;
/// Exit code: interrupted by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit code: ended by SIGTERM (128 + 15).
pub const EXIT_TERMINATED: u8 = 143;
/// Exit code: ended by SIGHUP (128 + 1).
pub const EXIT_HANGUP: u8 = 129;

/// The prompt `-p` runs: the argument, or stdin for `-` (or when no prompt is given and stdin
/// is not a terminal, as in `cat task.md | robota -p`).
fn headless_prompt(cli: &args::Cli) -> Result<String, CliError> {
    use std::io::{IsTerminal, Read};
    let from_stdin =
        match cli.prompt.as_deref() {
            Some("-") => true,
            Some(_) => false,
            None if !std::io::stdin().is_terminal() => true,
            None => return Err(CliError::usage(
                "-p needs a prompt: robota -p \"What is in this project?\" (or -p - to read it \
                 from stdin)",
            )),
        };
    let prompt = if from_stdin {
        if cli.permission_prompt == args::PermissionPrompt::Stdin {
            return Err(CliError::usage(
                "the prompt is read from stdin, so --permission-prompt stdin cannot ask there; \
                 give the prompt as an argument",
            ));
        }
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::usage(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        cli.prompt.clone().unwrap_or_default()
    };
    if prompt.trim().is_empty() {
        return Err(CliError::usage(if from_stdin {
            "the prompt read from stdin is empty"
        } else {
            "the prompt is empty"
        }));
    }
    Ok(prompt)
}

/// Parses arguments with clap; help and version go to stdout (exit 0), usage errors to stderr
/// (exit 2).
fn parse_or_exit<T: clap::Parser>(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<T, ExitCode> {
    T::try_parse_from(args).map_err(|error| {
        let code = if error.use_stderr() { EXIT_USAGE } else { 0 };
        let _ = error.print();
        ExitCode::from(code)
    })
}

/// The multi-threaded runtime every mode runs on.
fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("robota: cannot start the async runtime: {error}");
            ExitCode::from(EXIT_RUN_ERROR)
        })
}

/// Runs a subcommand with flags of its own (`robota serve`, `robota mcp-serve`, `robota acp`):
/// parses them without the first argument (the subcommand's name), runs `run` on the runtime,
/// and reports a failure as `robota <name>: …`.
fn subcommand_main<A, F, Fut>(name: &str, run: F) -> ExitCode
where
    A: clap::Parser,
    F: FnOnce(A) -> Fut,
    Fut: std::future::Future<Output = Result<u8, CliError>>,
{
    // The program name clap shows in usage lines and errors: `robota serve`, not `serve`.
    let argv = std::iter::once(std::ffi::OsString::from(format!("robota {name}")))
        .chain(std::env::args_os().skip(2));
    let args: A = match parse_or_exit(argv) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let result = runtime.block_on(run(args));
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(CliError { code, message }) => {
            eprintln!("robota {name}: {message}");
            ExitCode::from(code)
        }
    }
}

fn main() -> ExitCode {
    // `robota serve`, `robota mcp-serve` and `robota acp` are subcommands with flags of their
    // own; everything else is the agent CLI (a prompt that is literally `serve` can be given as
    // `robota -- serve`).
    match std::env::args_os()
        .nth(1)
        .as_deref()
        .and_then(|a| a.to_str())
    {
        Some("serve") => return subcommand_main("serve", serve::run),
        Some("mcp-serve") => return subcommand_main("mcp-serve", mcp_serve::run),
        Some("acp") => return subcommand_main("acp", acp::run),
        Some("providers") => return subcommand_main("providers", providers::run),
        _ => {}
    }
    let cli: Cli = match parse_or_exit(std::env::args_os()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let result = runtime.block_on(async move {
        if cli.input_format == args::InputFormat::StreamJson {
            if cli.output_format != args::OutputFormat::StreamJson {
                return Err(CliError::usage(
                    "--input-format stream-json needs --output-format stream-json (the Claude \
                     Agent SDK's protocol)",
                ));
            }
            claude_sdk::run(&cli).await
        } else if let Some(flag) = [
            (cli.await_initialize, "--await-initialize"),
            (cli.replay_user_messages, "--replay-user-messages"),
        ]
        .into_iter()
        .find_map(|(set, flag)| set.then_some(flag))
        {
            Err(CliError::usage(format!(
                "{flag} belongs to the Claude Agent SDK's protocol: use it with --input-format \
                 stream-json --output-format stream-json"
            )))
        } else if cli.init_only {
            output::run_setup_only(&cli).await
        } else if cli.print {
            match headless_prompt(&cli) {
                Ok(prompt) => output::run_headless(&cli, prompt).await,
                Err(error) => Err(error),
            }
        } else {
            repl::run_repl(&cli, cli.prompt.clone()).await
        }
    });
    // Do not wait for blocked stdin readers (the prompt reader thread) before exiting.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(CliError { code, message }) => {
            eprintln!("robota: {message}");
            ExitCode::from(code)
        }
    }
}
