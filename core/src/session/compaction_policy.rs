//! When a session compacts on its own: [`CompactionPolicy`], resolved by the framework from the
//! settings' `autoCompactThreshold` and handed to the session as a plain value.

use serde::Serialize;

/// The default automatic-compaction threshold: a fraction of the model's context window.
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.835;

/// Automatic compaction policy (`autoCompactThreshold`: a fraction in (0, 1], or `false`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CompactionPolicy {
    /// Whether the session compacts automatically.
    pub enabled: bool,
    /// Fraction of the context window at which it does.
    pub threshold: f64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            enabled: true,
            threshold: DEFAULT_COMPACTION_THRESHOLD,
        }
    }
}
