//! The store conformance suite run on a session store written in JavaScript: each check gets a
//! fresh store from the host's factory, reached as `store` calls routed by `store_index` (the
//! facade's dispatcher makes store number `n` on first sight).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::json;

use robota::api::{HostStoreBackend, HostStoreFunction};

use crate::host::{BridgeFunction, HostBridge, JsDispatcher};

/// Runs the suite off the JavaScript thread (the stores' methods run on it).
pub struct StoreConformance {
    bridge: Arc<HostBridge>,
}

impl Task for StoreConformance {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let next = AtomicU64::new(0);
        let fresh = || -> Result<Arc<dyn HostStoreBackend>, String> {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let function =
                BridgeFunction::new(&self.bridge, "store", json!({ "store_index": index }));
            Ok(Arc::new(HostStoreFunction::new("javascript", function)))
        };
        Ok(robota::api::run_store_conformance(&fresh).to_string())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// Runs the engine's store conformance suite on stores the dispatcher answers for (`store`
/// calls with a `store_index`, one fresh store per index); resolves to
/// `[{"check", "passed", "message"}, …]` as JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn run_store_conformance(
    #[napi(ts_arg_type = "(request: string) => Promise<string>")] host: JsDispatcher,
) -> AsyncTask<StoreConformance> {
    AsyncTask::new(StoreConformance {
        bridge: HostBridge::new(host),
    })
}
