//! Permission requests answered over the network: the [`NetworkPermissions`] handler a hosted
//! session is built with parks each request until a client answers it (HTTP or WebSocket), the
//! run is aborted, or the configured timeout passes and the configured default applies.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use robota::session::{
    PermissionHandler, PermissionRequest, PermissionResponse, SettingsDestination,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;

struct Pending {
    request: PermissionRequest,
    answer: oneshot::Sender<PermissionResponse>,
}

/// The permission handler of a hosted session.
pub struct NetworkPermissions {
    pending: Mutex<HashMap<String, Pending>>,
    timeout: Duration,
    default: PermissionResponse,
}

impl std::fmt::Debug for NetworkPermissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkPermissions")
            .field("timeout", &self.timeout)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

impl NetworkPermissions {
    /// A handler that waits `timeout` for an answer, then answers `default`.
    pub fn new(timeout: Duration, default: PermissionResponse) -> Arc<Self> {
        Arc::new(NetworkPermissions {
            pending: Mutex::new(HashMap::new()),
            timeout,
            default,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The requests waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<PermissionRequest> {
        let mut requests: Vec<PermissionRequest> =
            self.lock().values().map(|p| p.request.clone()).collect();
        requests.sort_by_key(|r| {
            r.request_id
                .trim_start_matches("perm_")
                .parse::<u64>()
                .unwrap_or(u64::MAX)
        });
        requests
    }

    /// How many wait.
    pub fn pending_count(&self) -> usize {
        self.lock().len()
    }

    /// Answers a waiting request. An answer that would save rules into the user's settings
    /// file (outside every project root) is refused, whichever kind of "allow" carries it:
    /// network clients may change only the project's settings.
    pub fn answer(&self, request_id: &str, response: PermissionResponse) -> Result<(), ServeError> {
        let writes_user_settings = matches!(
            &response,
            PermissionResponse::AllowAlways {
                destination: SettingsDestination::UserSettings,
                ..
            } | PermissionResponse::AllowWithInput {
                destination: Some(SettingsDestination::UserSettings),
                ..
            }
        );
        if writes_user_settings {
            return Err(ServeError::outside_roots(
                "\"allow always\" into userSettings would write the user's settings file, \
                 outside the project roots; use localSettings or projectSettings",
            ));
        }
        let pending = self.lock().remove(request_id).ok_or_else(|| {
            ServeError::not_found(format!(
                "no permission request `{request_id}` is waiting (it was answered, timed out, or \
                 its prompt was aborted); GET …/permissions lists the waiting ones"
            ))
        })?;
        // The run may have stopped waiting an instant ago: nothing to do then.
        let _ = pending.answer.send(response);
        Ok(())
    }
}

#[async_trait]
impl PermissionHandler for NetworkPermissions {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        let (tx, rx) = oneshot::channel();
        let id = request.request_id.clone();
        self.lock().insert(
            id.clone(),
            Pending {
                request,
                answer: tx,
            },
        );
        // Removes the entry however the wait ends (also when this future is dropped).
        struct Remove<'a>(&'a NetworkPermissions, String);
        impl Drop for Remove<'_> {
            fn drop(&mut self) {
                self.0.lock().remove(&self.1);
            }
        }
        let _remove = Remove(self, id);
        tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| PermissionResponse::deny("the permission request was dropped")),
            _ = cancel.cancelled() => PermissionResponse::deny("the prompt was aborted"),
            _ = tokio::time::sleep(self.timeout) => self.default.clone(),
        }
    }
}
