//! A loopback OTLP receiver for tests: a real gRPC `TraceService`/`MetricsService` server (the
//! official `opentelemetry-proto` definitions on tonic) and an HTTP server taking
//! `POST /v1/traces` and `POST /v1/metrics` protobuf bodies (decoded with prost), both on
//! 127.0.0.1. Everything that arrives is kept, flattened into [`ReceivedSpan`]s and
//! [`ReceivedMetric`]s, for assertions.
//!
//! The `otlp-receiver` binary runs one for tests in other languages: it prints its endpoints as
//! one JSON line, then one JSON line per span or metric as they arrive.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as ProtoValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;
use serde::Serialize;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::broadcast;

/// How a span or metric reached the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// gRPC.
    Grpc,
    /// HTTP/protobuf.
    Http,
}

/// One received span, flattened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceivedSpan {
    /// How it arrived.
    pub transport: Transport,
    /// The resource's `service.name`.
    pub service_name: Option<String>,
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    /// 16 hex digits; empty for a root span.
    pub parent_span_id: String,
    /// The W3C tracestate.
    pub trace_state: String,
    /// The name.
    pub name: String,
    /// OTLP span kind (1 internal, 2 server, 3 client, …).
    pub kind: i32,
    /// OTLP status code (0 unset, 1 ok, 2 error).
    pub status_code: i32,
    /// The status message.
    pub status_message: String,
    /// Attributes, as JSON values (arrays for array values).
    pub attributes: BTreeMap<String, Value>,
    /// Start, nanoseconds since the epoch.
    pub start_unix_nano: u64,
    /// End, nanoseconds since the epoch.
    pub end_unix_nano: u64,
}

impl ReceivedSpan {
    /// The attribute `key` as text.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// The attribute `key` as an integer.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.attributes.get(key).and_then(Value::as_i64)
    }
}

/// One data point of a received metric, flattened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceivedMetric {
    /// How it arrived.
    pub transport: Transport,
    /// The metric's name.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// The point's attributes.
    pub attributes: BTreeMap<String, Value>,
    /// Histogram: the number of measurements; sum/gauge: 1.
    pub count: u64,
    /// Histogram: the sum of measurements; sum/gauge: the value.
    pub value: f64,
}

#[derive(Default)]
struct Store {
    spans: Vec<ReceivedSpan>,
    metrics: Vec<ReceivedMetric>,
}

/// What arrives, as JSON lines (for the binary).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Arrival {
    /// A span.
    Span(ReceivedSpan),
    /// A metric data point.
    Metric(ReceivedMetric),
}

#[derive(Clone)]
struct Shared {
    store: Arc<Mutex<Store>>,
    arrivals: broadcast::Sender<Arrival>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take_traces(&self, request: ExportTraceServiceRequest, transport: Transport) {
        let spans = flatten_traces(request, transport);
        for span in &spans {
            let _ = self.arrivals.send(Arrival::Span(span.clone()));
        }
        self.lock().spans.extend(spans);
    }

    fn take_metrics(&self, request: ExportMetricsServiceRequest, transport: Transport) {
        let metrics = flatten_metrics(request, transport);
        for metric in &metrics {
            let _ = self.arrivals.send(Arrival::Metric(metric.clone()));
        }
        self.lock().metrics.extend(metrics);
    }
}

/// A running receiver; stops when dropped.
pub struct OtlpReceiver {
    http: SocketAddr,
    grpc: SocketAddr,
    shared: Shared,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl OtlpReceiver {
    /// Starts both servers on free loopback ports (inside a tokio runtime).
    pub async fn start() -> std::io::Result<OtlpReceiver> {
        let (arrivals, _) = broadcast::channel(4096);
        let shared = Shared {
            store: Arc::default(),
            arrivals,
        };
        let http_listener = TcpListener::bind("127.0.0.1:0").await?;
        let grpc_listener = TcpListener::bind("127.0.0.1:0").await?;
        let http = http_listener.local_addr()?;
        let grpc = grpc_listener.local_addr()?;
        let http_task = tokio::spawn(serve_http(http_listener, shared.clone()));
        let grpc_shared = shared.clone();
        let grpc_task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(GrpcReceiver(grpc_shared.clone())))
                .add_service(MetricsServiceServer::new(GrpcReceiver(grpc_shared)))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(grpc_listener))
                .await;
        });
        Ok(OtlpReceiver {
            http,
            grpc,
            shared,
            tasks: vec![http_task, grpc_task],
        })
    }

    /// The HTTP endpoint's base URL (`http://127.0.0.1:port`; robota appends `/v1/traces`).
    pub fn http_endpoint(&self) -> String {
        format!("http://{}", self.http)
    }

    /// The gRPC endpoint's URL.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.shared.lock().spans.clone()
    }

    /// Every metric data point received so far.
    pub fn metrics(&self) -> Vec<ReceivedMetric> {
        self.shared.lock().metrics.clone()
    }

    /// Everything that arrives from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arrival> {
        self.shared.arrivals.subscribe()
    }

    /// Waits until `done` holds for the spans received, `timeout` at most; returns the spans.
    pub async fn wait_for_spans(
        &self,
        timeout: Duration,
        done: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) || Instant::now() >= deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

struct GrpcReceiver(Shared);

#[tonic::async_trait]
impl TraceService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.take_traces(request.into_inner(), Transport::Grpc);
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

#[tonic::async_trait]
impl MetricsService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.take_metrics(request.into_inner(), Transport::Grpc);
        Ok(tonic::Response::new(ExportMetricsServiceResponse {
            partial_success: None,
        }))
    }
}

async fn serve_http(listener: TcpListener, shared: Shared) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle_http(request, shared.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle_http(
    request: Request<Incoming>,
    shared: Shared,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = request.uri().path().to_string();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(reply(StatusCode::BAD_REQUEST, Bytes::new())),
    };
    if content_type != "application/x-protobuf" {
        return Ok(reply(StatusCode::UNSUPPORTED_MEDIA_TYPE, Bytes::new()));
    }
    match path.as_str() {
        "/v1/traces" => match ExportTraceServiceRequest::decode(body) {
            Ok(decoded) => {
                shared.take_traces(decoded, Transport::Http);
                let answer = ExportTraceServiceResponse {
                    partial_success: None,
                };
                Ok(reply(StatusCode::OK, answer.encode_to_vec().into()))
            }
            Err(_) => Ok(reply(StatusCode::BAD_REQUEST, Bytes::new())),
        },
        "/v1/metrics" => match ExportMetricsServiceRequest::decode(body) {
            Ok(decoded) => {
                shared.take_metrics(decoded, Transport::Http);
                let answer = ExportMetricsServiceResponse {
                    partial_success: None,
                };
                Ok(reply(StatusCode::OK, answer.encode_to_vec().into()))
            }
            Err(_) => Ok(reply(StatusCode::BAD_REQUEST, Bytes::new())),
        },
        _ => Ok(reply(StatusCode::NOT_FOUND, Bytes::new())),
    }
}

fn reply(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/x-protobuf"),
    );
    response
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn json_value(value: Option<&AnyValue>) -> Value {
    match value.and_then(|v| v.value.as_ref()) {
        Some(ProtoValue::StringValue(s)) => Value::from(s.clone()),
        Some(ProtoValue::BoolValue(b)) => Value::from(*b),
        Some(ProtoValue::IntValue(i)) => Value::from(*i),
        Some(ProtoValue::DoubleValue(d)) => Value::from(*d),
        Some(ProtoValue::ArrayValue(array)) => {
            Value::Array(array.values.iter().map(|v| json_value(Some(v))).collect())
        }
        Some(ProtoValue::KvlistValue(list)) => Value::Object(
            list.values
                .iter()
                .map(|kv| (kv.key.clone(), json_value(kv.value.as_ref())))
                .collect(),
        ),
        Some(ProtoValue::BytesValue(bytes)) => Value::from(hex(bytes)),
        Some(_) | None => Value::Null,
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, Value> {
    list.iter()
        .map(|kv| (kv.key.clone(), json_value(kv.value.as_ref())))
        .collect()
}

fn flatten_traces(request: ExportTraceServiceRequest, transport: Transport) -> Vec<ReceivedSpan> {
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let service_name = resource_spans.resource.as_ref().and_then(|r| {
            attributes(&r.attributes)
                .get("service.name")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                let status = span.status.unwrap_or_default();
                spans.push(ReceivedSpan {
                    transport,
                    service_name: service_name.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    trace_state: span.trace_state,
                    name: span.name,
                    kind: span.kind,
                    status_code: status.code,
                    status_message: status.message,
                    attributes: attributes(&span.attributes),
                    start_unix_nano: span.start_time_unix_nano,
                    end_unix_nano: span.end_time_unix_nano,
                });
            }
        }
    }
    spans
}

fn flatten_metrics(
    request: ExportMetricsServiceRequest,
    transport: Transport,
) -> Vec<ReceivedMetric> {
    let mut points = Vec::new();
    for resource in request.resource_metrics {
        for scope in resource.scope_metrics {
            for metric in scope.metrics {
                let point = |attrs: &[KeyValue], count: u64, value: f64| ReceivedMetric {
                    transport,
                    name: metric.name.clone(),
                    unit: metric.unit.clone(),
                    attributes: attributes(attrs),
                    count,
                    value,
                };
                match &metric.data {
                    Some(Data::Histogram(histogram)) => {
                        for p in &histogram.data_points {
                            points.push(point(&p.attributes, p.count, p.sum.unwrap_or(0.0)));
                        }
                    }
                    Some(Data::Sum(sum)) => {
                        for p in &sum.data_points {
                            points.push(point(&p.attributes, 1, number(p.value.as_ref())));
                        }
                    }
                    Some(Data::Gauge(gauge)) => {
                        for p in &gauge.data_points {
                            points.push(point(&p.attributes, 1, number(p.value.as_ref())));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    points
}

fn number(
    value: Option<&opentelemetry_proto::tonic::metrics::v1::number_data_point::Value>,
) -> f64 {
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
    match value {
        Some(Number::AsDouble(d)) => *d,
        Some(Number::AsInt(i)) => *i as f64,
        None => 0.0,
    }
}
