//! Swift objects as the engine's `HostFunction`: [`HostCallback`] is the one foreign trait
//! every Swift extension (tool, permission handler, hook, command, provider, in-process MCP
//! tool, OAuth browser step) implements, and [`SwiftHostFunction`] hands it to core's adapters
//! in `robota::api`, which own the answer shapes, defaults and cancellation rules. A command
//! call also carries its live [`NativeCommandContext`].

use std::sync::Arc;

use robota::api::{
    async_trait, ApiErrorKind, HostCall, HostCommandContext, HostFunction, HostStream,
};
use serde_json::Value;

use crate::error::{HostError, RobotaError};

/// A host extension implemented in Swift: answers one JSON request (the shapes are those of
/// `robota::api::host`) with JSON text. `stream` is set for provider calls only, `context` for
/// command calls only. When the engine stops waiting, the Swift task running the call is
/// cancelled.
#[uniffi::export(with_foreign)]
#[async_trait]
pub trait HostCallback: Send + Sync {
    /// Answers `request_json`; throwing rejects the call.
    async fn call(
        &self,
        request_json: String,
        stream: Option<Arc<ProviderStream>>,
        context: Option<Arc<NativeCommandContext>>,
    ) -> Result<String, HostError>;
}

/// A [`HostCallback`] as core's [`HostFunction`].
pub struct SwiftHostFunction(Arc<dyn HostCallback>);

impl SwiftHostFunction {
    /// The host function calling `callback`.
    pub fn shared(callback: Arc<dyn HostCallback>) -> Arc<dyn HostFunction> {
        Arc::new(SwiftHostFunction(callback))
    }
}

#[async_trait]
impl HostFunction for SwiftHostFunction {
    async fn call(&self, call: HostCall) -> Result<Value, String> {
        let HostCall {
            request,
            cancel,
            stream,
            context,
        } = call;
        let stream = stream.map(|stream| Arc::new(ProviderStream { stream }));
        let context = context.map(|context| Arc::new(NativeCommandContext { context }));
        let answer = self.0.call(request.to_string(), stream, context);
        tokio::select! {
            biased;
            // Dropping `answer` cancels the Swift task.
            () = cancel.cancelled() => Err("aborted".into()),
            answer = answer => match answer {
                Ok(text) => serde_json::from_str(&text)
                    .map_err(|e| format!("the host answered invalid JSON: {e}")),
                Err(HostError::Rejected { message }) => Err(message),
            },
        }
    }
}

/// Where a Swift provider streams events while a model call runs (core's [`HostStream`]).
#[derive(uniffi::Object)]
pub struct ProviderStream {
    stream: HostStream,
}

#[uniffi::export]
impl ProviderStream {
    /// Sends one provider event (`{"type": "text_delta", "text": …}`, `thinking_delta`,
    /// `tool_call`, `usage`, `retry`). Throws `invalidJson` for a malformed event; an event sent
    /// after the call is over is ignored.
    pub fn send(&self, event_json: String) -> Result<(), RobotaError> {
        let event: Value =
            serde_json::from_str(&event_json).map_err(|e| RobotaError::InvalidJson {
                message: format!("invalid provider event: {e}"),
            })?;
        match self.stream.send(event) {
            Ok(()) => Ok(()),
            Err(e) if e.kind == ApiErrorKind::InvalidJson => Err(e.into()),
            // The call was answered, aborted or dropped: nobody listens any more.
            Err(_) => Ok(()),
        }
    }
}

/// A Swift command's live context (core's [`HostCommandContext`]): the operations the built-in
/// commands use, valid while the command runs; afterwards every call throws `command`.
#[derive(uniffi::Object)]
pub struct NativeCommandContext {
    context: HostCommandContext,
}

#[uniffi::export]
impl NativeCommandContext {
    /// Runs one operation given as JSON (`{"op": "clear"}`, …; the table of
    /// `robota::api::HostCommandContext`) and returns its JSON answer.
    pub async fn call(&self, op_json: String) -> Result<String, RobotaError> {
        let op: Value = serde_json::from_str(&op_json).map_err(|e| RobotaError::InvalidJson {
            message: format!("invalid command context op: {e}"),
        })?;
        let context = self.context.clone();
        crate::runtime::on_runtime(async move {
            let answer = context.call_json(op).await?;
            serde_json::to_string(&answer)
                .map_err(|e| RobotaError::internal(format!("cannot encode an answer: {e}")))
        })
        .await
    }

    /// True while the command runs.
    pub fn is_valid(&self) -> Result<bool, RobotaError> {
        Ok(self.context.is_valid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use robota::api::CancellationToken;
    use serde_json::json;

    /// A callback answering a fixed result.
    struct Fixed(Result<String, HostError>);

    #[async_trait]
    impl HostCallback for Fixed {
        async fn call(
            &self,
            _request_json: String,
            _stream: Option<Arc<ProviderStream>>,
            _context: Option<Arc<NativeCommandContext>>,
        ) -> Result<String, HostError> {
            self.0.clone()
        }
    }

    async fn answer(callback: Fixed, cancel: CancellationToken) -> Result<Value, String> {
        SwiftHostFunction::shared(Arc::new(callback))
            .call(HostCall {
                request: json!({"tool": "t"}),
                cancel,
                stream: None,
                context: None,
            })
            .await
    }

    #[tokio::test]
    async fn answers_rejections_bad_json_and_cancellation() {
        let ok = answer(
            Fixed(Ok(r#"{"content": "42"}"#.into())),
            CancellationToken::new(),
        );
        assert_eq!(ok.await, Ok(json!({"content": "42"})));
        let rejected = Fixed(Err(HostError::Rejected {
            message: "no".into(),
        }));
        assert_eq!(
            answer(rejected, CancellationToken::new()).await,
            Err("no".into())
        );
        let bad = answer(Fixed(Ok("{not json".into())), CancellationToken::new()).await;
        assert!(bad.is_err_and(|e| e.starts_with("the host answered invalid JSON")));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let aborted = answer(Fixed(Ok("{}".into())), cancel).await;
        assert_eq!(aborted, Err("aborted".into()));
    }
}
