//! Provider definitions (spec 000 `IProviderDefinition`): for each provider type robota builds —
//! its name, aliases, the credentials it needs, default model and endpoint, setup help links —
//! and [`probe`], which checks an endpoint and key and says exactly what failed.
//!
//! Generic layers (the CLI's `providers` command, setup flows, bindings) read these records
//! instead of branching on provider names.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How a provider type's API is reached, which decides how it is probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// Anthropic Messages (`POST /v1/messages`; models at `GET /v1/models`).
    AnthropicMessages,
    /// OpenAI-compatible Chat Completions (models at `GET {base}/models`).
    OpenAiChat,
    /// OpenAI Responses (models at `GET {base}/models`).
    OpenAiResponses,
    /// Google Gemini API (models at `GET /v1beta/models`).
    Gemini,
    /// Anthropic on Amazon Bedrock (SigV4-signed; no listing on the runtime endpoint).
    Bedrock,
    /// Anthropic on Google Vertex AI (OAuth bearer tokens; no listing on the model endpoint).
    Vertex,
    /// No network: scripted turns or a recorded log.
    Offline,
}

/// Where a user gets what a provider needs, most useful first (spec 000: the key issuance page,
/// then the console, then the documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HelpLinks {
    /// Where API keys are created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_keys: Option<&'static str>,
    /// The provider's console.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub console: Option<&'static str>,
    /// The API documentation.
    pub docs: &'static str,
}

/// One provider type robota can build from a settings profile (`providers.<name>.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProviderDefinition {
    /// The profile `type`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// A name for people.
    pub display_name: &'static str,
    /// Other names accepted for the type.
    pub aliases: &'static [&'static str],
    /// How its API is reached.
    pub wire: WireFormat,
    /// The environment variables that can hold its key or credentials, in the order they are
    /// read (empty: none needed).
    pub credential_env: &'static [&'static str],
    /// Whether a key is required (local OpenAI-compatible servers need none).
    pub key_required: bool,
    /// The model used when the profile names none (`None`: the profile must name one).
    pub default_model: Option<&'static str>,
    /// The endpoint used when the profile gives no `baseURL`.
    pub default_base_url: Option<&'static str>,
    /// Where to get a key and read the docs.
    pub help: HelpLinks,
}

/// Every provider type robota builds, in the order setup flows offer them.
pub const DEFINITIONS: &[ProviderDefinition] = &[
    ProviderDefinition {
        kind: "anthropic",
        display_name: "Anthropic",
        aliases: &["claude"],
        wire: WireFormat::AnthropicMessages,
        credential_env: &["ANTHROPIC_API_KEY"],
        key_required: true,
        default_model: Some("claude-sonnet-4-5"),
        default_base_url: Some("https://api.anthropic.com"),
        help: HelpLinks {
            api_keys: Some("https://platform.claude.com/settings/keys"),
            console: Some("https://platform.claude.com"),
            docs: "https://platform.claude.com/docs/en/api/overview",
        },
    },
    ProviderDefinition {
        kind: "openai",
        display_name: "OpenAI (or any OpenAI-compatible server)",
        aliases: &["chatgpt"],
        wire: WireFormat::OpenAiChat,
        credential_env: &["OPENAI_API_KEY"],
        key_required: true,
        default_model: Some("gpt-4.1"),
        default_base_url: Some("https://api.openai.com/v1"),
        help: HelpLinks {
            api_keys: Some("https://platform.openai.com/api-keys"),
            console: Some("https://platform.openai.com"),
            docs: "https://platform.openai.com/docs/api-reference",
        },
    },
    ProviderDefinition {
        kind: "gemini",
        display_name: "Google Gemini API",
        aliases: &["google"],
        wire: WireFormat::Gemini,
        credential_env: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        key_required: true,
        default_model: Some("gemini-2.5-flash"),
        default_base_url: Some("https://generativelanguage.googleapis.com"),
        help: HelpLinks {
            api_keys: Some("https://aistudio.google.com/apikey"),
            console: Some("https://aistudio.google.com"),
            docs: "https://ai.google.dev/gemini-api/docs",
        },
    },
    ProviderDefinition {
        kind: "bedrock",
        display_name: "Anthropic on Amazon Bedrock",
        aliases: &["aws-bedrock"],
        wire: WireFormat::Bedrock,
        credential_env: &[
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "AWS_BEARER_TOKEN_BEDROCK",
        ],
        key_required: true,
        default_model: None,
        default_base_url: None,
        help: HelpLinks {
            api_keys: Some("https://console.aws.amazon.com/iam/home#/security_credentials"),
            console: Some("https://console.aws.amazon.com/bedrock"),
            docs: "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-claude.html",
        },
    },
    ProviderDefinition {
        kind: "vertex",
        display_name: "Anthropic on Google Vertex AI",
        aliases: &["google-vertex"],
        wire: WireFormat::Vertex,
        credential_env: &["GOOGLE_APPLICATION_CREDENTIALS"],
        key_required: true,
        default_model: None,
        default_base_url: None,
        help: HelpLinks {
            api_keys: Some("https://console.cloud.google.com/iam-admin/serviceaccounts"),
            console: Some("https://console.cloud.google.com/vertex-ai"),
            docs: "https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude",
        },
    },
    ProviderDefinition {
        kind: "deepseek",
        display_name: "DeepSeek",
        aliases: &[],
        wire: WireFormat::OpenAiChat,
        credential_env: &["DEEPSEEK_API_KEY"],
        key_required: true,
        default_model: Some("deepseek-chat"),
        default_base_url: Some("https://api.deepseek.com"),
        help: HelpLinks {
            api_keys: Some("https://platform.deepseek.com/api_keys"),
            console: Some("https://platform.deepseek.com"),
            docs: "https://api-docs.deepseek.com",
        },
    },
    ProviderDefinition {
        kind: "qwen",
        display_name: "Qwen (Alibaba Cloud Model Studio)",
        aliases: &["dashscope"],
        wire: WireFormat::OpenAiChat,
        credential_env: &["DASHSCOPE_API_KEY"],
        key_required: true,
        default_model: Some("qwen-plus"),
        // Chat Completions compatible mode; a profile with built-in web tools talks to the same
        // host's Responses API (`/api/v2/apps/protocols/compatible-mode/v1`), derived from it.
        default_base_url: Some("https://dashscope-intl.aliyuncs.com/compatible-mode/v1"),
        help: HelpLinks {
            api_keys: Some("https://modelstudio.console.alibabacloud.com/?tab=playground#/api-key"),
            console: Some("https://modelstudio.console.alibabacloud.com"),
            docs: "https://www.alibabacloud.com/help/en/model-studio/compatibility-of-openai-with-dashscope",
        },
    },
    ProviderDefinition {
        kind: "gemma",
        display_name: "Gemma on a local server (LM Studio, Ollama)",
        aliases: &[],
        wire: WireFormat::OpenAiChat,
        credential_env: &[],
        key_required: false,
        default_model: None,
        default_base_url: Some("http://localhost:1234/v1"),
        help: HelpLinks {
            api_keys: None,
            console: None,
            docs: "https://ai.google.dev/gemma/docs",
        },
    },
    ProviderDefinition {
        kind: "scripted",
        display_name: "Scripted turns (tests and demos)",
        aliases: &[],
        wire: WireFormat::Offline,
        credential_env: &[],
        key_required: false,
        default_model: Some("scripted"),
        default_base_url: None,
        help: HelpLinks {
            api_keys: None,
            console: None,
            docs: "https://github.com/robota-dev/robota#providers",
        },
    },
    ProviderDefinition {
        kind: "replay",
        display_name: "Replay of a recorded session log",
        aliases: &[],
        wire: WireFormat::Offline,
        credential_env: &[],
        key_required: false,
        default_model: Some("replay"),
        default_base_url: None,
        help: HelpLinks {
            api_keys: None,
            console: None,
            docs: "https://github.com/robota-dev/robota#providers",
        },
    },
];

/// The definition of a provider type or one of its aliases (case-insensitive).
pub fn definition(kind: &str) -> Option<&'static ProviderDefinition> {
    let kind = kind.trim().to_ascii_lowercase();
    DEFINITIONS
        .iter()
        .find(|d| d.kind == kind || d.aliases.contains(&kind.as_str()))
}

/// What [`probe`] checks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeRequest {
    /// The provider type (or an alias).
    #[serde(rename = "type")]
    pub kind: String,
    /// The endpoint; the type's default when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The key; without one, a type that requires a key fails the probe before any request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// A model to look for in the endpoint's list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Which step of a probe failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStage {
    /// The request could not be made: unknown type, no key, a malformed URL.
    Config,
    /// The host name did not resolve.
    Dns,
    /// Nothing accepted the connection (refused, unreachable).
    Connect,
    /// No answer within the probe's time limit.
    Timeout,
    /// The server rejected the key (HTTP 401/403).
    Auth,
    /// The URL does not exist on the server (HTTP 404): usually a wrong `baseURL`.
    NotFound,
    /// Any other HTTP error status.
    Http,
    /// The answer was not the API's model list.
    Response,
    /// The endpoint answered, but does not list the model asked about.
    Model,
    /// This type cannot be probed over the network (offline types, or no listing endpoint).
    Unsupported,
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// True when the endpoint answered with its model list (and listed the model, when one was
    /// asked about).
    pub ok: bool,
    /// The provider type probed.
    #[serde(rename = "type")]
    pub kind: String,
    /// The URL requested (without the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The HTTP status, when the server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the request took.
    pub elapsed_ms: u64,
    /// How many models the endpoint listed.
    pub models_listed: usize,
    /// Whether the model asked about is listed (`None`: none asked about, or no list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_found: Option<bool>,
    /// The step that failed (`None` when `ok`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<ProbeStage>,
    /// What happened and, on failure, what to do about it.
    pub message: String,
}

/// How long a probe waits for the whole answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a model list a probe reads.
const MAX_PROBE_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Checks that an endpoint answers and accepts the key, by asking for its model list, and says
/// exactly what failed. Never errors: a failure is a report with `ok: false` and the `stage`.
pub async fn probe(request: &ProbeRequest) -> ProbeReport {
    let started = Instant::now();
    let report = |stage: Option<ProbeStage>, message: String| ProbeReport {
        ok: stage.is_none(),
        kind: request.kind.clone(),
        url: None,
        status: None,
        elapsed_ms: 0,
        models_listed: 0,
        model_found: None,
        stage,
        message,
    };
    let Some(definition) = definition(&request.kind) else {
        let known: Vec<&str> = DEFINITIONS.iter().map(|d| d.kind).collect();
        return report(
            Some(ProbeStage::Config),
            format!(
                "unknown provider type \"{}\" (known: {})",
                request.kind,
                known.join(", ")
            ),
        );
    };
    let key = request
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let listing = match definition.wire {
        WireFormat::AnthropicMessages => Listing::Anthropic,
        WireFormat::OpenAiChat | WireFormat::OpenAiResponses => Listing::OpenAi,
        WireFormat::Gemini => Listing::Gemini,
        WireFormat::Bedrock | WireFormat::Vertex | WireFormat::Offline => {
            return report(
                Some(ProbeStage::Unsupported),
                format!(
                    "{} cannot be probed without making a model call: its endpoint has no \
                     model list (send a prompt to check it)",
                    definition.display_name
                ),
            );
        }
    };
    if key.is_none() && definition.key_required {
        return report(
            Some(ProbeStage::Config),
            format!(
                "no API key for {}: set {} or the profile's `apiKey` (keys: {})",
                definition.display_name,
                definition.credential_env.join(" or "),
                definition.help.api_keys.unwrap_or(definition.help.docs)
            ),
        );
    }
    let base = request
        .base_url
        .as_deref()
        .or(definition.default_base_url)
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned();
    let url = listing.url(&base);
    let mut probe_report = ProbeReport {
        url: Some(url.clone()),
        ..report(None, String::new())
    };
    let outcome = fetch(listing, &url, key).await;
    probe_report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let fail = |mut r: ProbeReport, stage: ProbeStage, message: String| {
        r.ok = false;
        r.stage = Some(stage);
        r.message = message;
        r
    };
    let (status, body) = match outcome {
        Ok(answer) => answer,
        Err((stage, message)) => return fail(probe_report, stage, message),
    };
    probe_report.status = Some(status);
    match status {
        200..=299 => {}
        401 | 403 => {
            return fail(
                probe_report,
                ProbeStage::Auth,
                format!(
                    "{url} rejected the key (HTTP {status}{}): check {} (keys: {})",
                    provider_message(&body).map_or(String::new(), |m| format!(": {m}")),
                    if definition.credential_env.is_empty() {
                        "the profile's `apiKey`".to_owned()
                    } else {
                        definition.credential_env.join(" / ")
                    },
                    definition.help.api_keys.unwrap_or(definition.help.docs)
                ),
            )
        }
        404 => {
            return fail(
                probe_report,
                ProbeStage::NotFound,
                format!(
                    "{url} does not exist (HTTP 404): the base URL is probably wrong{}",
                    definition
                        .default_base_url
                        .map_or(String::new(), |d| format!(" (the default is {d})"))
                ),
            )
        }
        _ => {
            return fail(
                probe_report,
                ProbeStage::Http,
                format!(
                    "{url} answered HTTP {status}{}",
                    provider_message(&body).map_or(String::new(), |m| format!(": {m}"))
                ),
            )
        }
    }
    let Some(ids) = listing.model_ids(&body) else {
        return fail(
            probe_report,
            ProbeStage::Response,
            format!(
                "{url} answered, but not with a {} model list: is the base URL the API's?",
                definition.display_name
            ),
        );
    };
    probe_report.models_listed = ids.len();
    if let Some(model) = request.model.as_deref().filter(|m| !m.trim().is_empty()) {
        let found = ids.iter().any(|id| id == model);
        probe_report.model_found = Some(found);
        if !found {
            let mut sample: Vec<&str> = ids.iter().map(String::as_str).take(8).collect();
            if ids.len() > sample.len() {
                sample.push("…");
            }
            return fail(
                probe_report,
                ProbeStage::Model,
                format!(
                    "the endpoint and key work, but {url} does not list model \"{model}\" \
                     (it lists {}: {})",
                    ids.len(),
                    sample.join(", ")
                ),
            );
        }
    }
    probe_report.message = format!(
        "{} answered in {} ms and lists {} model(s){}",
        url,
        probe_report.elapsed_ms,
        ids.len(),
        request
            .model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .map_or(String::new(), |m| format!(", including {m}"))
    );
    probe_report
}

#[derive(Debug, Clone, Copy)]
enum Listing {
    Anthropic,
    OpenAi,
    Gemini,
}

impl Listing {
    fn url(self, base: &str) -> String {
        match self {
            Listing::Anthropic => format!("{base}/v1/models?limit=1000"),
            Listing::OpenAi => format!("{base}/models"),
            Listing::Gemini => format!("{base}/v1beta/models?pageSize=1000"),
        }
    }

    /// The model ids of a listing body, `None` when it is not one.
    fn model_ids(self, body: &[u8]) -> Option<Vec<String>> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        let (items, field) = match self {
            Listing::Anthropic | Listing::OpenAi => (value.get("data")?.as_array()?, "id"),
            Listing::Gemini => (value.get("models")?.as_array()?, "name"),
        };
        Some(
            items
                .iter()
                .filter_map(|item| item.get(field)?.as_str())
                .map(|id| id.strip_prefix("models/").unwrap_or(id).to_owned())
                .collect(),
        )
    }
}

/// The provider's own error message in an error body (`error.message`), shortened.
fn provider_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = value.get("error")?.get("message")?.as_str()?;
    Some(message.chars().take(300).collect())
}

async fn fetch(
    listing: Listing,
    url: &str,
    key: Option<&str>,
) -> Result<(u16, Vec<u8>), (ProbeStage, String)> {
    let client = super::http::direct_client()
        .connect_timeout(PROBE_TIMEOUT)
        .timeout(PROBE_TIMEOUT)
        .build()
        .map_err(|e| {
            (
                ProbeStage::Config,
                format!("cannot build an HTTP client: {e}"),
            )
        })?;
    let mut builder = client.get(url);
    builder = match (listing, key) {
        (Listing::Anthropic, key) => builder
            .header("anthropic-version", "2023-06-01")
            .header("x-api-key", key.unwrap_or_default()),
        (Listing::OpenAi, Some(key)) => builder.bearer_auth(key),
        (Listing::OpenAi, None) => builder,
        (Listing::Gemini, key) => builder.header("x-goog-api-key", key.unwrap_or_default()),
    };
    let response = builder
        .send()
        .await
        .map_err(|error| classify(url, &error))?;
    let status = response.status().as_u16();
    let body = super::http::read_capped_body(response, MAX_PROBE_BODY_BYTES)
        .await
        .map_err(|error| classify(url, &error))?
        .ok_or_else(|| {
            (
                ProbeStage::Response,
                format!(
                    "{url} answered with more than {MAX_PROBE_BODY_BYTES} bytes: not a model list"
                ),
            )
        })?;
    Ok((status, body))
}

/// Names the failed step of a request that got no HTTP answer.
fn classify(url: &str, error: &reqwest::Error) -> (ProbeStage, String) {
    let chain = super::http::error_chain(error);
    let lower = chain.to_ascii_lowercase();
    if error.is_builder() {
        (
            ProbeStage::Config,
            format!("{url} is not a usable URL: {chain}"),
        )
    } else if error.is_timeout() {
        (
            ProbeStage::Timeout,
            format!(
                "{url} did not answer within {} s (a firewall, a proxy, or a server that is down)",
                PROBE_TIMEOUT.as_secs()
            ),
        )
    } else if lower.contains("dns")
        || lower.contains("failed to lookup")
        || lower.contains("name or service not known")
    {
        (
            ProbeStage::Dns,
            format!("the host of {url} does not resolve (check the base URL's spelling): {chain}"),
        )
    } else if error.is_connect() {
        (
            ProbeStage::Connect,
            format!("nothing accepts connections at {url} (is the server running, is the port right?): {chain}"),
        )
    } else {
        (
            ProbeStage::Response,
            format!("reading {url} failed: {chain}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_found_by_type_and_alias() {
        assert_eq!(definition("claude").map(|d| d.kind), Some("anthropic"));
        assert_eq!(definition(" Gemini ").map(|d| d.kind), Some("gemini"));
        assert!(definition("nope").is_none());
        for d in DEFINITIONS {
            assert!(d.help.docs.starts_with("https://"), "{}", d.kind);
            if d.key_required {
                assert!(!d.credential_env.is_empty(), "{}", d.kind);
            }
        }
    }

    #[tokio::test]
    async fn config_problems_are_reported_before_any_request() {
        let report = probe(&ProbeRequest {
            kind: "anthropic".into(),
            ..ProbeRequest::default()
        })
        .await;
        assert_eq!(report.stage, Some(ProbeStage::Config));
        assert!(
            report.message.contains("ANTHROPIC_API_KEY"),
            "{}",
            report.message
        );
        let report = probe(&ProbeRequest {
            kind: "telepathy".into(),
            ..ProbeRequest::default()
        })
        .await;
        assert_eq!(report.stage, Some(ProbeStage::Config));
        assert!(
            report.message.contains("known: anthropic"),
            "{}",
            report.message
        );
    }
}
