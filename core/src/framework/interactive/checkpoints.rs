//! Edit checkpoints inside an interactive session: a turn checkpoint around every prompt, the
//! recorder the session's file tools report to, and restore (refused while a prompt runs, and
//! recorded in the history).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::json;

use super::{Inner, InteractiveError};
use crate::framework::checkpoints::{
    prune_message, CheckpointError, EditCheckpointStore, RestoreReport,
};
use crate::tools::FileMutationRecorder;

/// The session's checkpoint store, bound once the session id is known (the tools that report
/// to it are built before the session exists).
#[derive(Debug, Default)]
pub(crate) struct CheckpointRecorder {
    store: OnceLock<Arc<EditCheckpointStore>>,
}

impl CheckpointRecorder {
    /// Points the recorder at the checkpoints of `session_id` in `project_dir`.
    pub(crate) fn bind(&self, project_dir: &Path, session_id: &str) {
        let _ = self
            .store
            .set(Arc::new(EditCheckpointStore::new(project_dir, session_id)));
    }

    pub(crate) fn store(&self) -> Option<&Arc<EditCheckpointStore>> {
        self.store.get()
    }
}

impl FileMutationRecorder for CheckpointRecorder {
    fn before_mutation(&self, tool: &str, path: &Path) -> Result<(), String> {
        match self.store.get() {
            Some(store) => store.before_mutation(tool, path),
            None => Ok(()),
        }
    }
}

impl Inner {
    /// The store, or why there is none.
    pub(crate) fn checkpoint_store(&self) -> Result<&Arc<EditCheckpointStore>, InteractiveError> {
        self.checkpoints
            .as_ref()
            .and_then(|c| c.store())
            .ok_or(InteractiveError::Checkpoint(CheckpointError::Disabled))
    }

    /// Opens the turn checkpoint of a prompt. A failure is recorded in the history: the
    /// prompt still runs, but its edits cannot be rewound.
    pub(super) fn begin_checkpoint(&self, prompt: &str) {
        let Ok(store) = self.checkpoint_store() else {
            return;
        };
        if let Err(error) = store.begin_turn(prompt) {
            self.record_history(
                "edit-checkpoint-error",
                json!({ "message": format!("{error}; the edits of this prompt cannot be rewound") }),
            );
        }
    }

    /// Closes the turn checkpoint of the prompt that ended; pruning past the size cap is
    /// recorded in the history.
    pub(super) fn finish_checkpoint(&self) {
        let Ok(store) = self.checkpoint_store() else {
            return;
        };
        match store.finish_turn() {
            Ok(report) if !report.pruned.is_empty() => self.record_history(
                "edit-checkpoints-pruned",
                json!({
                    "message": prune_message(&report),
                    "pruned": report.pruned,
                    "freed_bytes": report.freed_bytes,
                    "max_bytes": report.max_bytes,
                }),
            ),
            Ok(_) => {}
            Err(error) => self.record_history(
                "edit-checkpoint-error",
                json!({ "message": error.to_string() }),
            ),
        }
    }

    /// Restores (or, `including`, rolls back through) a checkpoint and records it.
    pub(crate) fn restore_checkpoint(
        &self,
        id: &str,
        including: bool,
    ) -> Result<RestoreReport, InteractiveError> {
        // Busy while a prompt runs or waits; not in the moments after a prompt ended (its result
        // already reached the host) while the session tidies up.
        {
            let state = self.lock();
            if state.running_prompt.is_some() || state.pending.is_some() {
                return Err(CheckpointError::Busy.into());
            }
        }
        let store = self.checkpoint_store()?;
        let report = if including {
            store.rollback(id)?
        } else {
            store.restore(id)?
        };
        let mut data = serde_json::to_value(&report).unwrap_or_default();
        if let Some(map) = data.as_object_mut() {
            map.insert(
                "mode".into(),
                json!(if including { "rollback" } else { "restore" }),
            );
        }
        self.record_history("edit-checkpoint-restore", data);
        Ok(report)
    }
}
