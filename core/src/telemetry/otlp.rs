//! The `otel` build of [`Telemetry`]: an OpenTelemetry SDK tracer and meter provider per
//! configuration, exporting through `opentelemetry-otlp` on the SDK's own background threads.
//!
//! gRPC (tonic) needs a tokio runtime for its connections; hosts call robota from any thread,
//! with or without a runtime, so gRPC export gets a one-thread runtime of its own, stopped with
//! `shutdown_background` (never dropped on an async thread). Flushing waits on a helper thread
//! with a deadline, so an unreachable collector delays shutdown by the timeout at most.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{
    SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue, Value};
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_otlp::{Protocol, WithTonicConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use super::{
    Attribute, AttributeValue, ModelCallMetrics, OtlpProtocol, SpanRole, TelemetryConfig,
    TelemetryError, TraceParent,
};

/// Bucket boundaries of `gen_ai.client.token.usage` (the GenAI semantic conventions' advice).
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// Bucket boundaries (seconds) of `gen_ai.client.operation.duration` and the tool latency.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The exporters of one session (shared with its subagents). Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Exporters>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

struct Exporters {
    tracer: SdkTracer,
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
    cost: Counter<f64>,
    timeout: Duration,
    shut_down: AtomicBool,
    /// The gRPC exporters' runtime (see the module docs).
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

impl Drop for Exporters {
    fn drop(&mut self) {
        if !self.shut_down.swap(true, Ordering::SeqCst) {
            // Dropping the SDK providers shuts them down, which waits on the exporters: hand
            // them to a thread so a drop on an async thread (or with the collector unreachable)
            // never blocks.
            let traces = self.traces.clone();
            let metrics = self.metrics.clone();
            let _ = std::thread::Builder::new()
                .name("robota-otlp-drop".into())
                .spawn(move || {
                    let _ = traces.shutdown();
                    let _ = metrics.shutdown();
                });
        }
        let runtime = self
            .runtime
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_background();
        }
    }
}

impl Telemetry {
    /// Builds the exporters `config` describes (with the `OTEL_*` environment variables for what
    /// it leaves out). Nothing is sent until spans end; no connection is made here.
    pub fn start(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
        let protocol = config.resolved_protocol()?;
        let timeout = config.timeout();
        let endpoint = config
            .endpoint
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| e.trim_end_matches('/').to_string());
        if let Some(endpoint) = &endpoint {
            let parsed = url::Url::parse(endpoint).map_err(|e| TelemetryError::Config {
                message: format!("endpoint `{endpoint}` is not a URL: {e}"),
            })?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(TelemetryError::Config {
                    message: format!("endpoint `{endpoint}` must be an http:// or https:// URL"),
                });
            }
        }
        let failed = |what: &str, e: &dyn std::fmt::Display| TelemetryError::Config {
            message: format!("the OTLP {what} exporter could not be built: {e}"),
        };
        let (span_exporter, metric_exporter, runtime) = match protocol {
            OtlpProtocol::Http => {
                // The exporters' reqwest 0.13 clients take the process's rustls provider.
                crate::tls::ensure_crypto_provider();
                let headers: HashMap<String, String> = config
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut spans = SpanExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_timeout(timeout);
                let mut metrics = MetricExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_timeout(timeout);
                if let Some(endpoint) = &endpoint {
                    spans = spans.with_endpoint(format!("{endpoint}/v1/traces"));
                    metrics = metrics.with_endpoint(format!("{endpoint}/v1/metrics"));
                }
                if !headers.is_empty() {
                    spans = spans.with_headers(headers.clone());
                    metrics = metrics.with_headers(headers);
                }
                (
                    spans.build().map_err(|e| failed("trace", &e))?,
                    metrics.build().map_err(|e| failed("metric", &e))?,
                    None,
                )
            }
            OtlpProtocol::Grpc => {
                let mut headers = http::HeaderMap::new();
                for (key, value) in &config.headers {
                    let name = http::HeaderName::from_bytes(key.to_ascii_lowercase().as_bytes())
                        .map_err(|_| TelemetryError::Config {
                            message: format!("header `{key}` is not a valid gRPC metadata name"),
                        })?;
                    let value =
                        http::HeaderValue::from_str(value).map_err(|_| TelemetryError::Config {
                            message: format!(
                                "the value of header `{key}` is not valid in gRPC metadata"
                            ),
                        })?;
                    headers.insert(name, value);
                }
                let metadata =
                    opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(headers);
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("robota-otlp-grpc")
                    .enable_all()
                    .build()
                    .map_err(|e| TelemetryError::Config {
                        message: format!("the gRPC exporter's runtime could not start: {e}"),
                    })?;
                let built = {
                    let _entered = runtime.enter();
                    let mut spans = SpanExporter::builder()
                        .with_tonic()
                        .with_timeout(timeout)
                        .with_metadata(metadata.clone());
                    let mut metrics = MetricExporter::builder()
                        .with_tonic()
                        .with_timeout(timeout)
                        .with_metadata(metadata);
                    if let Some(endpoint) = &endpoint {
                        spans = spans.with_endpoint(endpoint.clone());
                        metrics = metrics.with_endpoint(endpoint.clone());
                    }
                    spans
                        .build()
                        .map_err(|e| failed("trace", &e))
                        .and_then(|s| {
                            metrics
                                .build()
                                .map(|m| (s, m))
                                .map_err(|e| failed("metric", &e))
                        })
                };
                match built {
                    Ok((spans, metrics)) => (spans, metrics, Some(runtime)),
                    Err(error) => {
                        runtime.shutdown_background();
                        return Err(error);
                    }
                }
            }
        };

        let service_name = config
            .service_name
            .clone()
            .filter(|s| !s.trim().is_empty())
            .or_else(|| {
                std::env::var("OTEL_SERVICE_NAME")
                    .ok()
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or_else(|| "robota".to_string());
        let resource = Resource::builder().with_service_name(service_name).build();
        let traces = SdkTracerProvider::builder()
            .with_batch_exporter(span_exporter)
            .with_resource(resource.clone())
            .build();
        let metrics = SdkMeterProvider::builder()
            .with_periodic_exporter(metric_exporter)
            .with_resource(resource)
            .build();
        let scope = InstrumentationScope::builder("robota")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = traces.tracer_with_scope(scope.clone());
        let meter = metrics.meter_with_scope(scope);
        let token_usage = meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_unit("{token}")
            .with_description("Number of input and output tokens used")
            .with_boundaries(TOKEN_BUCKETS.to_vec())
            .build();
        let operation_duration = meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_unit("s")
            .with_description("GenAI operation duration")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build();
        let tool_duration = meter
            .f64_histogram("robota.tool.duration")
            .with_unit("s")
            .with_description("How long tool calls took, from request to result")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build();
        let cost = meter
            .f64_counter("robota.cost")
            .with_unit("USD")
            .with_description("What model calls cost, by the session's price table")
            .build();
        Ok(Telemetry {
            inner: Arc::new(Exporters {
                tracer,
                traces,
                metrics,
                token_usage,
                operation_duration,
                tool_duration,
                cost,
                timeout,
                shut_down: AtomicBool::new(false),
                runtime: Mutex::new(runtime),
            }),
        })
    }

    /// The host's span as a parent (W3C Trace Context); `None` when `parent` does not parse.
    pub fn remote_parent(&self, parent: &TraceParent) -> Option<TraceSpan> {
        let mut carrier = HashMap::new();
        carrier.insert(
            "traceparent".to_string(),
            parent.traceparent.trim().to_string(),
        );
        if let Some(state) = &parent.tracestate {
            carrier.insert("tracestate".to_string(), state.clone());
        }
        let context = TraceContextPropagator::new().extract(&carrier);
        context
            .span()
            .span_context()
            .is_valid()
            .then_some(TraceSpan {
                context,
                owned: false,
            })
    }

    /// Starts a span, a child of `parent` (a new trace without one), at `start` (now without
    /// one).
    pub fn start_span(
        &self,
        name: String,
        role: SpanRole,
        parent: Option<&TraceSpan>,
        start: Option<SystemTime>,
        attributes: Vec<Attribute>,
    ) -> TraceSpan {
        let parent_context = parent.map_or_else(Context::new, |p| p.context.clone());
        let mut builder = self
            .inner
            .tracer
            .span_builder(name)
            .with_kind(match role {
                SpanRole::Internal => SpanKind::Internal,
                SpanRole::Client => SpanKind::Client,
            })
            .with_attributes(attributes.into_iter().map(key_value));
        if let Some(start) = start {
            builder = builder.with_start_time(start);
        }
        let span = builder.start_with_context(&self.inner.tracer, &parent_context);
        TraceSpan {
            context: parent_context.with_span(span),
            owned: true,
        }
    }

    /// Records one model call in the GenAI client metrics and the cost counter.
    pub fn record_model_call(&self, call: &ModelCallMetrics<'_>) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", call.provider.to_string()),
            KeyValue::new("gen_ai.request.model", call.request_model.to_string()),
            KeyValue::new("gen_ai.response.model", call.response_model.to_string()),
        ];
        if let Some(error) = call.error_type {
            attributes.push(KeyValue::new("error.type", error.to_string()));
        }
        self.inner
            .operation_duration
            .record(call.duration.as_secs_f64(), &attributes);
        if call.error_type.is_some() {
            return;
        }
        for (kind, tokens) in [("input", call.input_tokens), ("output", call.output_tokens)] {
            let mut by_type = attributes.clone();
            by_type.push(KeyValue::new("gen_ai.token.type", kind));
            self.inner.token_usage.record(tokens, &by_type);
        }
        if let Some(cost) = call.cost_usd {
            self.inner.cost.add(cost, &attributes);
        }
    }

    /// Records one tool call's latency (`robota.tool.duration`, by `gen_ai.tool.name`).
    pub fn record_tool_call(&self, tool: &str, duration: Duration, failed: bool) {
        let mut attributes = vec![KeyValue::new("gen_ai.tool.name", tool.to_string())];
        if failed {
            attributes.push(KeyValue::new("error.type", "tool_error"));
        }
        self.inner
            .tool_duration
            .record(duration.as_secs_f64(), &attributes);
    }

    /// Sends every ended span and the metrics now, waiting the configured timeout at most.
    /// True when the exporters finished in time.
    pub fn flush(&self) -> bool {
        let traces = self.inner.traces.clone();
        let metrics = self.inner.metrics.clone();
        within(self.inner.timeout, move || {
            let traced = traces.force_flush().is_ok();
            let measured = metrics.force_flush().is_ok();
            traced && measured
        })
    }

    /// Flushes and stops the exporters (later spans are dropped), waiting the configured timeout
    /// at most. True when they stopped in time. Only the first call does anything.
    pub fn shutdown(&self) -> bool {
        if self.inner.shut_down.swap(true, Ordering::SeqCst) {
            return true;
        }
        let traces = self.inner.traces.clone();
        let metrics = self.inner.metrics.clone();
        let timeout = self.inner.timeout;
        within(timeout, move || {
            let traced = traces.shutdown_with_timeout(timeout).is_ok();
            let measured = metrics.shutdown_with_timeout(timeout).is_ok();
            traced && measured
        })
    }
}

/// Runs `work` on a helper thread and waits for it `timeout` at most (the work goes on in the
/// background after that, bounded by the exporters' own timeouts).
fn within(timeout: Duration, work: impl FnOnce() -> bool + Send + 'static) -> bool {
    let (done, finished) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("robota-otlp-flush".into())
        .spawn(move || {
            let _ = done.send(work());
        });
    if spawned.is_err() {
        return false;
    }
    // A little over the exporters' timeout: the SDK's own deadline should answer first.
    finished
        .recv_timeout(timeout + Duration::from_millis(250))
        .unwrap_or(false)
}

/// A span in progress (or the host's span, as a parent). Cheap to clone; ending it twice does
/// nothing more.
#[derive(Clone, Debug)]
pub struct TraceSpan {
    context: Context,
    /// False for the host's span: robota never ends it.
    owned: bool,
}

impl TraceSpan {
    /// Adds attributes.
    pub fn set_attributes(&self, attributes: Vec<Attribute>) {
        if self.owned {
            self.context
                .span()
                .set_attributes(attributes.into_iter().map(key_value));
        }
    }

    /// Marks the span failed, with `message` as the status description.
    pub fn set_error(&self, message: &str) {
        if self.owned {
            self.context
                .span()
                .set_status(Status::error(message.to_string()));
        }
    }

    /// Ends the span at `at` (now without one).
    pub fn end(&self, at: Option<SystemTime>) {
        if !self.owned {
            return;
        }
        let span = self.context.span();
        match at {
            Some(at) => span.end_with_timestamp(at),
            None => span.end(),
        }
    }

    /// The trace id, as 32 hex digits.
    pub fn trace_id(&self) -> String {
        self.context.span().span_context().trace_id().to_string()
    }
}

fn key_value((key, value): Attribute) -> KeyValue {
    let value = match value {
        AttributeValue::Text(text) => Value::from(text),
        AttributeValue::Int(int) => Value::I64(int),
        AttributeValue::Float(float) => Value::F64(float),
        AttributeValue::Bool(flag) => Value::Bool(flag),
        AttributeValue::TextList(list) => Value::Array(opentelemetry::Array::String(
            list.into_iter()
                .map(opentelemetry::StringValue::from)
                .collect(),
        )),
    };
    KeyValue::new(key, value)
}
