//! The `http` executor: POSTs the event JSON to a URL and maps the answer to the same semantics
//! as a command hook's exit code and stdout.
//!
//! Mapping (Claude Code's contract): a 2xx with an empty body is success with no output; a 2xx
//! whose body starts with `{` is parsed as hook JSON output (so blocking is done with
//! `decision: "block"`, `permissionDecision: "deny"`, … — or `ok: false`, the form TypeScript
//! Robota used); a 2xx with any other body is plain text (context for UserPromptSubmit and
//! SessionStart). A non-2xx status, a connection failure or a timeout is a non-blocking error: an
//! endpoint that is down never blocks the agent.
//!
//! Header values may reference environment variables as `$VAR` or `${VAR}`; only variables
//! listed in `allowedEnvVars` are substituted, any other reference becomes empty, so a settings
//! file cannot exfiltrate arbitrary secrets by naming them.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::config::HttpHook;
use super::outcome::{cap_chars, HookFailure};
use super::runner::{OutputOverflow, RawReply, RawResult};

/// Replaces `$VAR` and `${VAR}` in `value`: allowed variables from `env`, others with nothing.
pub(crate) fn interpolate_header(
    value: &str,
    allowed: &[String],
    env: &HashMap<String, String>,
) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(close) => (&braced[..close], close + 2),
                None => ("", 0),
            }
        } else {
            let len = after
                .char_indices()
                .find(|(i, c)| {
                    !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit())
                })
                .map_or(after.len(), |(i, _)| i);
            (&after[..len], len)
        };
        if name.is_empty() || consumed == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        if allowed.iter().any(|a| a == name) {
            if let Some(v) = env.get(name) {
                out.push_str(v);
            }
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

/// Runs an HTTP hook.
pub(crate) async fn run(
    hook: &HttpHook,
    client: &reqwest::Client,
    input_json: &str,
    env: &HashMap<String, String>,
    timeout: Duration,
    output_limit: usize,
    cancel: &CancellationToken,
) -> RawResult {
    let mut request = client
        .post(&hook.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(input_json.to_string());
    for (name, value) in &hook.headers {
        request = request.header(
            name.as_str(),
            interpolate_header(value, &hook.allowed_env_vars, env),
        );
    }
    let exchange = async {
        let response = request.send().await.map_err(|e| HookFailure::Http {
            message: describe(&e),
        })?;
        let status = response.status();
        let mut body = Vec::new();
        let mut dropped = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| HookFailure::Http {
                message: format!("reading the response body: {}", describe(&e)),
            })?;
            let room = output_limit.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                dropped = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok::<_, HookFailure>((status, String::from_utf8_lossy(&body).into_owned(), dropped))
    };
    let result = tokio::select! {
        r = tokio::time::timeout(timeout, exchange) => r,
        () = cancel.cancelled() => return RawResult::reply(RawReply::Cancelled),
    };
    match result {
        Err(_) => RawResult::reply(RawReply::Failed(HookFailure::Timeout {
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        })),
        Ok(Err(failure)) => RawResult::reply(RawReply::Failed(failure)),
        Ok(Ok((status, body, dropped))) => {
            if !status.is_success() {
                return RawResult::reply(RawReply::Failed(HookFailure::HttpStatus {
                    status: status.as_u16(),
                    body: cap_chars(body.trim(), 2_000),
                }));
            }
            RawResult {
                exit_code: None,
                stdout: body,
                stderr: String::new(),
                reply: RawReply::Success,
                // Reading stopped at the limit, so the full size is unknown.
                stdout_overflow: dropped.then_some(OutputOverflow {
                    total_bytes: None,
                    limit: output_limit,
                }),
            }
        }
    }
}

/// reqwest's error with its sources, which hold the useful part (connection refused, …).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_only_allowed_variables() {
        let env: HashMap<String, String> = [
            ("TOKEN".to_string(), "abc".to_string()),
            ("SECRET".to_string(), "xyz".to_string()),
        ]
        .into();
        let allowed = vec!["TOKEN".to_string()];
        assert_eq!(
            interpolate_header("Bearer $TOKEN", &allowed, &env),
            "Bearer abc"
        );
        assert_eq!(interpolate_header("${TOKEN}-x", &allowed, &env), "abc-x");
        assert_eq!(interpolate_header("$SECRET!", &allowed, &env), "!");
        assert_eq!(interpolate_header("cost $5", &allowed, &env), "cost $5");
        assert_eq!(interpolate_header("a$", &allowed, &env), "a$");
        assert_eq!(
            interpolate_header("${UNCLOSED", &allowed, &env),
            "${UNCLOSED"
        );
    }
}
