//! The `mock-llm` binary: runs the mock provider as a process for tests written in any language.
//! It prints one JSON line with its port, then serves until SIGTERM/SIGINT or (by default, when
//! stdin is a pipe) until stdin reaches EOF, so a dying parent never leaves it running.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use mock_llm::{MockLlm, Script};

const USAGE: &str = "\
usage: mock-llm [--script FILE.json] [--port N] [--host ADDR]
                [--exit-on-stdin-eof | --no-exit-on-stdin-eof]

Serves the Anthropic Messages (POST /v1/messages) and OpenAI Chat Completions
(POST /v1/chat/completions, POST /chat/completions) streaming APIs from a JSON script.

  --script FILE           script to serve (default: no turns; set one with POST /_mock/script)
  --port N                port to listen on (default 0: the OS picks one)
  --host ADDR             IP address to bind (default 127.0.0.1)
  --exit-on-stdin-eof     exit when stdin reaches EOF, whatever stdin is
  --no-exit-on-stdin-eof  never watch stdin
                          (default: exit on stdin EOF only if stdin is a pipe or socket,
                          so running it with stdin from /dev/null or a terminal works)
  -h, --help              print this help

Prints exactly one line to stdout once listening:
  {\"port\": N, \"base_url\": \"http://127.0.0.1:N\"}
Exit codes: 0 after a signal or stdin EOF, 1 if it cannot listen, 2 for bad arguments or an
invalid script.";

/// When to treat stdin EOF as the signal to exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdinWatch {
    /// Only when stdin is a pipe or socket (what a parent process passes when spawning).
    Auto,
    Always,
    Never,
}

#[derive(Debug)]
struct Args {
    script: Option<String>,
    host: IpAddr,
    port: u16,
    stdin: StdinWatch,
}

/// Parses the command line; `Ok(None)` means help was requested.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        script: None,
        host: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        stdin: StdinWatch::Auto,
    };
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--script" => parsed.script = Some(value("--script")?),
            "--port" => {
                let v = value("--port")?;
                parsed.port = v
                    .parse()
                    .map_err(|_| format!("--port: {v:?} is not a port number (0-65535)"))?;
            }
            "--host" => {
                let v = value("--host")?;
                parsed.host = if v == "localhost" {
                    IpAddr::V4(Ipv4Addr::LOCALHOST)
                } else {
                    v.parse()
                        .map_err(|_| format!("--host: {v:?} is not an IP address"))?
                };
            }
            "--exit-on-stdin-eof" => parsed.stdin = StdinWatch::Always,
            "--no-exit-on-stdin-eof" => parsed.stdin = StdinWatch::Never,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Some(parsed))
}

fn load_script(path: Option<&str>) -> Result<Script, String> {
    let Some(path) = path else {
        return Ok(Script::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    Script::from_json_str(&text).map_err(|e| format!("{path}: {e}"))
}

/// True when stdin is something a parent process holds open for us (pipe or socket).
#[cfg(unix)]
fn stdin_is_pipe() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .map(|m| m.file_type().is_fifo() || m.file_type().is_socket())
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn stdin_is_pipe() -> bool {
    false
}

/// Resolves when stdin reaches EOF (or fails). Uses a plain thread because a blocking read
/// cannot be cancelled, and a thread does not keep the process alive at exit.
fn stdin_eof() -> tokio::sync::oneshot::Receiver<()> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 4096];
        loop {
            match std::io::Read::read(&mut stdin, &mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(());
    });
    rx
}

async fn terminate_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

async fn serve(args: Args, script: Script) -> ExitCode {
    let server = match MockLlm::start_on(SocketAddr::new(args.host, args.port), script).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "mock-llm: cannot listen on {}:{}: {e}",
                args.host, args.port
            );
            return ExitCode::from(1);
        }
    };
    let port = server.addr().port();
    // A wildcard bind is reached through loopback.
    let reachable = match args.host {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port),
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(std::net::Ipv6Addr::LOCALHOST.into(), port)
        }
        _ => server.addr(),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        r#"{{"port": {port}, "base_url": "http://{reachable}"}}"#
    );
    let _ = out.flush();
    drop(out);

    let watch = match args.stdin {
        StdinWatch::Always => true,
        StdinWatch::Never => false,
        StdinWatch::Auto => stdin_is_pipe(),
    };
    if watch {
        let eof = stdin_eof();
        tokio::select! {
            _ = terminate_signal() => {}
            _ = eof => {}
        }
    } else {
        terminate_signal().await;
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    // `args_os` rather than `args`: a non-UTF-8 argument is a usage error, not a panic.
    let args: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect();
    let Ok(args) = args else {
        eprintln!("mock-llm: arguments must be valid UTF-8\n\n{USAGE}");
        return ExitCode::from(2);
    };
    let args = match parse_args(args.into_iter()) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("mock-llm: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let script = match load_script(args.script.as_deref()) {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("mock-llm: invalid script: {msg}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mock-llm: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(serve(args, script))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_flags_in_both_spellings() {
        let a = parse(&["--script", "s.json", "--port=8080", "--host", "localhost"])
            .unwrap()
            .unwrap();
        assert_eq!(a.script.as_deref(), Some("s.json"));
        assert_eq!(a.port, 8080);
        assert_eq!(a.host, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(a.stdin, StdinWatch::Auto);
        let a = parse(&["--host=::1", "--no-exit-on-stdin-eof"])
            .unwrap()
            .unwrap();
        assert_eq!(a.host.to_string(), "::1");
        assert_eq!(a.stdin, StdinWatch::Never);
        assert_eq!(
            parse(&["--exit-on-stdin-eof"]).unwrap().unwrap().stdin,
            StdinWatch::Always
        );
        assert!(parse(&["-h"]).unwrap().is_none());
    }

    #[test]
    fn rejects_bad_arguments_with_a_reason() {
        assert!(parse(&["--script"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--port", "x"]).unwrap_err().contains("port"));
        assert!(parse(&["--host", "nowhere"])
            .unwrap_err()
            .contains("IP address"));
        assert!(parse(&["extra"]).unwrap_err().contains("extra"));
    }
}
