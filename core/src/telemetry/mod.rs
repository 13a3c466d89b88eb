//! OpenTelemetry export: traces and metrics of sessions sent over OTLP (HTTP/protobuf or gRPC) to
//! the collector a host configures. The only module that touches the OpenTelemetry crates, and
//! only with core's `otel` feature; without it [`Telemetry::start`] says so and nothing else
//! changes.
//!
//! It knows nothing of sessions or engines: it hands out [`TraceSpan`]s (start, attributes,
//! error status, end — with explicit times where the moment was measured elsewhere) and records
//! the few instruments robota reports. `session::telemetry` decides which moments become spans.
//! A session without telemetry holds no [`Telemetry`] at all: no exporter, no span is built.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(feature = "otel")]
mod otlp;

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OtlpProtocol {
    /// HTTP with protobuf bodies (`/v1/traces`, `/v1/metrics` under the endpoint), the OTLP
    /// default (port 4318 by convention).
    #[serde(alias = "http/protobuf")]
    Http,
    /// gRPC (port 4317 by convention). Plaintext (`http://`) endpoints only.
    Grpc,
}

impl OtlpProtocol {
    /// The protocol named `value` (`http`, `http/protobuf`, `grpc`); `None` for anything else.
    pub fn parse(value: &str) -> Option<OtlpProtocol> {
        match value.trim() {
            "http" | "http/protobuf" => Some(OtlpProtocol::Http),
            "grpc" => Some(OtlpProtocol::Grpc),
            _ => None,
        }
    }
}

/// Where and how a session's traces and metrics are exported. Every field is optional: what is
/// left out comes from the standard `OTEL_EXPORTER_OTLP_*` / `OTEL_SERVICE_NAME` environment
/// variables, then from the OTLP defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's base URL (`http://collector:4318` for HTTP, `http://collector:4317` for
    /// gRPC). For HTTP, `/v1/traces` and `/v1/metrics` are appended. `None`:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (and the per-signal variables), else localhost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The transport. `None`: `OTEL_EXPORTER_OTLP_PROTOCOL` (`grpc` or `http/protobuf`), else
    /// HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<OtlpProtocol>,
    /// Headers sent with every export (an API key, say). Empty: `OTEL_EXPORTER_OTLP_HEADERS`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The `service.name` resource attribute. `None`: `OTEL_SERVICE_NAME`, else `robota`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "service_name"
    )]
    pub service_name: Option<String>,
    /// How long one export may take, and how long [`Telemetry::flush`] at shutdown waits at
    /// most. `None`: [`DEFAULT_EXPORT_TIMEOUT`].
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "timeout_ms")]
    pub timeout_ms: Option<u64>,
}

/// How long an export (and the flush at shutdown) may take when the configuration does not say.
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

impl TelemetryConfig {
    /// The export timeout in force.
    pub fn timeout(&self) -> Duration {
        self.timeout_ms
            .map_or(DEFAULT_EXPORT_TIMEOUT, Duration::from_millis)
    }

    /// The protocol in force: the configured one, else `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else HTTP. An environment value robota cannot export with
    /// (`http/json`) is an error naming the variable.
    pub fn resolved_protocol(&self) -> Result<OtlpProtocol, TelemetryError> {
        if let Some(protocol) = self.protocol {
            return Ok(protocol);
        }
        for variable in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Ok(value) = std::env::var(variable) {
                return OtlpProtocol::parse(&value).ok_or_else(|| TelemetryError::Config {
                    message: format!(
                        "{variable}=`{value}` is not a protocol robota exports with; use \
                         `http/protobuf` or `grpc`"
                    ),
                });
            }
        }
        Ok(OtlpProtocol::Http)
    }
}

/// The host's trace context (W3C Trace Context), so robota's spans join the host's trace: the
/// prompt spans become children of the span `traceparent` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceParent {
    /// `version-traceid-parentid-flags`, e.g. `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
    pub traceparent: String,
    /// The vendor data that travels with it, passed on unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

impl TraceParent {
    /// A trace context from a `traceparent` header value (no `tracestate`).
    pub fn new(traceparent: impl Into<String>) -> Self {
        TraceParent {
            traceparent: traceparent.into(),
            tracestate: None,
        }
    }

    /// Checks the `traceparent` format (`00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero), so
    /// a malformed one is refused where it is given rather than silently starting a new trace.
    pub fn validate(&self) -> Result<(), TelemetryError> {
        let invalid = || TelemetryError::Config {
            message: format!(
                "traceparent `{}` is not a W3C traceparent \
                 (`00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`)",
                self.traceparent
            ),
        };
        let parts: Vec<&str> = self.traceparent.trim().split('-').collect();
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        match parts.as_slice() {
            [version, trace, parent, flags]
                if hex(version, 2)
                    && *version != "ff"
                    && hex(trace, 32)
                    && !zero(trace)
                    && hex(parent, 16)
                    && !zero(parent)
                    && hex(flags, 2) =>
            {
                Ok(())
            }
            _ => Err(invalid()),
        }
    }
}

/// Why telemetry could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// This build of robota has no OpenTelemetry export (core's `otel` feature is off).
    #[error(
        "telemetry is configured but this build of robota has no OpenTelemetry export \
         (build the `robota` crate with its `otel` feature)"
    )]
    NotBuiltIn,
    /// The configuration (or an `OTEL_*` environment variable) is unusable.
    #[error("telemetry configuration: {message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// A span attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// Text.
    Text(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A flag.
    Bool(bool),
    /// A list of texts.
    TextList(Vec<String>),
}

impl From<&str> for AttributeValue {
    fn from(value: &str) -> Self {
        AttributeValue::Text(value.to_string())
    }
}

impl From<String> for AttributeValue {
    fn from(value: String) -> Self {
        AttributeValue::Text(value)
    }
}

impl From<u64> for AttributeValue {
    fn from(value: u64) -> Self {
        AttributeValue::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<u32> for AttributeValue {
    fn from(value: u32) -> Self {
        AttributeValue::Int(i64::from(value))
    }
}

impl From<i32> for AttributeValue {
    fn from(value: i32) -> Self {
        AttributeValue::Int(i64::from(value))
    }
}

impl From<bool> for AttributeValue {
    fn from(value: bool) -> Self {
        AttributeValue::Bool(value)
    }
}

impl From<f64> for AttributeValue {
    fn from(value: f64) -> Self {
        AttributeValue::Float(value)
    }
}

impl From<Vec<String>> for AttributeValue {
    fn from(value: Vec<String>) -> Self {
        AttributeValue::TextList(value)
    }
}

/// One span attribute.
pub type Attribute = (&'static str, AttributeValue);

/// What a span stands for, in OpenTelemetry's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanRole {
    /// Work done inside robota (a prompt, a tool call, a hook, a compaction).
    Internal,
    /// A call robota makes to another service (a model call).
    Client,
}

/// What one model call measured, for the GenAI client metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCallMetrics<'a> {
    /// `gen_ai.provider.name`.
    pub provider: &'a str,
    /// `gen_ai.request.model`.
    pub request_model: &'a str,
    /// `gen_ai.response.model` (the request's model when the provider did not say).
    pub response_model: &'a str,
    /// Input tokens (cache reads and writes included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// How long the call took.
    pub duration: Duration,
    /// The call's cost in US dollars, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// `error.type` when the call failed.
    pub error_type: Option<&'a str>,
}

#[cfg(feature = "otel")]
pub use otlp::{Telemetry, TraceSpan};

#[cfg(not(feature = "otel"))]
pub use disabled::{Telemetry, TraceSpan};

#[cfg(not(feature = "otel"))]
mod disabled {
    //! Without the `otel` feature no [`Telemetry`] can exist; its methods keep the callers'
    //! code identical in both builds.
    use super::*;
    use std::time::SystemTime;

    #[derive(Debug, Clone, Copy)]
    enum Never {}

    /// The exporters of one session (never built without the `otel` feature).
    #[derive(Debug, Clone)]
    pub struct Telemetry(Never);

    /// A span in progress (never built without the `otel` feature).
    #[derive(Debug, Clone)]
    pub struct TraceSpan(Never);

    impl Telemetry {
        /// Always [`TelemetryError::NotBuiltIn`] in this build.
        pub fn start(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
            let _ = config;
            Err(TelemetryError::NotBuiltIn)
        }

        /// See the `otel` build.
        pub fn remote_parent(&self, parent: &TraceParent) -> Option<TraceSpan> {
            let _ = parent;
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn start_span(
            &self,
            name: String,
            role: SpanRole,
            parent: Option<&TraceSpan>,
            start: Option<SystemTime>,
            attributes: Vec<Attribute>,
        ) -> TraceSpan {
            let _ = (name, role, parent, start, attributes);
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn record_model_call(&self, call: &ModelCallMetrics<'_>) {
            let _ = call;
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn record_tool_call(&self, tool: &str, duration: Duration, failed: bool) {
            let _ = (tool, duration, failed);
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn flush(&self) -> bool {
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn shutdown(&self) -> bool {
            match self.0 {}
        }
    }

    impl TraceSpan {
        /// See the `otel` build.
        pub fn set_attributes(&self, attributes: Vec<Attribute>) {
            let _ = attributes;
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn set_error(&self, message: &str) {
            let _ = message;
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn end(&self, at: Option<SystemTime>) {
            let _ = at;
            match self.0 {}
        }

        /// See the `otel` build.
        pub fn trace_id(&self) -> String {
            match self.0 {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_checked() {
        let good = TraceParent::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert!(good.validate().is_ok());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            let error = TraceParent::new(bad).validate().err();
            assert!(
                matches!(&error, Some(TelemetryError::Config { message }) if message.contains("W3C")),
                "{bad}: {error:?}"
            );
        }
    }

    #[test]
    fn protocols_parse_by_their_otlp_names() {
        assert_eq!(OtlpProtocol::parse("grpc"), Some(OtlpProtocol::Grpc));
        assert_eq!(
            OtlpProtocol::parse("http/protobuf"),
            Some(OtlpProtocol::Http)
        );
        assert_eq!(OtlpProtocol::parse("http/json"), None);
        let config: TelemetryConfig =
            serde_json::from_value(serde_json::json!({"endpoint": "http://x:4317", "protocol": "grpc", "serviceName": "svc"}))
                .unwrap_or_default();
        assert_eq!(config.protocol, Some(OtlpProtocol::Grpc));
        assert_eq!(config.service_name.as_deref(), Some("svc"));
    }
}
