//! Context window tracking: how much of the model's context window the conversation fills.
//!
//! Two measures, as in the TypeScript `ContextWindowTracker` (spec 002 "Usage And Context
//! Refresh"):
//!
//! - **Exact**, after a model call: the tokens the provider reported for the last call — input
//!   plus cache reads and writes (what the request occupied) plus output (the answer is part of
//!   every later request).
//! - **Estimated**, before a request and whenever no exact figure is known (a resumed session,
//!   a compacted history): the engine's estimate (serialized characters / 4, with the last
//!   reported usage as a floor), so the same rule decides here and in the engine's guards.
//!
//! Automatic compaction compares the percentage rounded to two decimals with the threshold, as
//! the TypeScript SDK does (83.4995% counts as 83.5%).

use serde::{Deserialize, Serialize};

use crate::engine::budget::{estimate, serialized_chars};
use crate::message::{HistorySize, Usage};
use crate::provider::ToolDefinition;

/// How full the context window is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextState {
    /// Tokens the conversation occupies.
    pub used_tokens: u64,
    /// The model's context window (0 when unknown).
    pub max_tokens: u64,
    /// `used_tokens / max_tokens` (0 when the window is unknown), not capped at 1.
    pub ratio: f64,
    /// True when `used_tokens` is an estimate rather than the provider's count.
    pub estimated: bool,
}

impl ContextState {
    /// A state from a token count.
    pub fn new(used_tokens: u64, max_tokens: u64, estimated: bool) -> Self {
        let ratio = if max_tokens > 0 {
            used_tokens as f64 / max_tokens as f64
        } else {
            0.0
        };
        ContextState {
            used_tokens,
            max_tokens,
            ratio,
            estimated,
        }
    }

    /// The used percentage rounded to two decimals and capped at 100, as the TypeScript tracker
    /// reports it.
    pub fn used_percentage(&self) -> f64 {
        ((self.ratio * 100.0).min(100.0) * 100.0).round() / 100.0
    }

    /// True when automatic compaction should run at `threshold` (a fraction of the window).
    pub fn should_compact(&self, threshold: f64) -> bool {
        self.max_tokens > 0 && self.used_percentage() >= threshold * 100.0
    }
}

/// The exact context size after a call that reported `usage` (`None` when it reported nothing).
pub(crate) fn exact_tokens(usage: &Usage) -> Option<u64> {
    let tokens = usage.input_tokens
        + usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens
        + usage.output_tokens;
    (tokens > 0).then_some(tokens)
}

/// The estimated context of a request with this system prompt, these tools and messages.
pub(crate) fn estimated_tokens(
    system_prompt: Option<&str>,
    tools: &[ToolDefinition],
    messages: HistorySize,
) -> u64 {
    let fixed = system_prompt.map_or(0, |s| s.chars().count() as u64) + serialized_chars(tools);
    estimate(fixed, messages).estimated_tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_compares_the_rounded_percentage() {
        // 83.4995% rounds to 83.5% and triggers at 0.835, as in the TypeScript SDK.
        let state = ContextState::new(834_995, 1_000_000, false);
        assert!(state.should_compact(0.835));
        assert!(!ContextState::new(834_000, 1_000_000, false).should_compact(0.835));
        assert!(!ContextState::new(10, 0, true).should_compact(0.5));
    }

    #[test]
    fn exact_tokens_count_input_cache_and_output() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 20,
        };
        assert_eq!(exact_tokens(&usage), Some(135));
        assert_eq!(exact_tokens(&Usage::default()), None);
    }
}
