//! Context-window budgeting: the token estimate, the hard guard checked before every model call
//! (95% of the window) and the tool-result budget checked after every tool message (80%).
//!
//! The estimate follows the TypeScript SDK: serialized JSON characters / 4, with the provider's
//! own count as a floor. Exact provider usage (the last assistant message's input + output
//! tokens) is the best measure of what is already in the context; messages added after it are
//! only known by their size, so they are added to it by the same chars/4 rule.

use crate::message::{HistorySize, Message};

/// Share of the context window above which no model call is made.
pub const HARD_LIMIT_RATIO: f64 = 0.95;

/// Share of the context window above which further tool results in a batch are replaced by
/// [`CONTEXT_OVERFLOW_TOOL_RESULT`].
pub const TOOL_RESULT_BUDGET_RATIO: f64 = 0.80;

/// Serialized characters counted as one token by the estimate.
pub const CHARS_PER_TOKEN: u64 = 4;

/// What the model sees instead of a tool result that would overflow the context window.
pub const CONTEXT_OVERFLOW_TOOL_RESULT: &str = "Error: Context window near capacity. Tool execution result skipped. Respond with available results and re-request skipped tools if needed.";

/// Tokens for a number of serialized characters (rounded up).
pub(crate) fn tokens_for_chars(chars: u64) -> u64 {
    chars.div_ceil(CHARS_PER_TOKEN)
}

pub(crate) use crate::message::serialized_chars;

/// The context estimate for one request, with the parts it was made from (the hard guard's
/// diagnostic message reports them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextEstimate {
    /// The effective estimate: the larger of the two measures below.
    pub estimated_tokens: u64,
    /// Serialized request size / 4.
    pub serialized_tokens: u64,
    /// Last provider-reported context size plus the size of the messages added after it.
    pub provider_usage_floor: u64,
    /// Serialized characters of the request (system prompt, tools and messages).
    pub serialized_chars: u64,
}

/// Estimates the context a request with messages of this size occupies (the conversation keeps
/// its size as messages are added: [`Conversation::model_size`]). `fixed_chars` covers the parts
/// sent with every call (system prompt and tool definitions).
///
/// [`Conversation::model_size`]: crate::message::Conversation::model_size
pub(crate) fn estimate(fixed_chars: u64, history: HistorySize) -> ContextEstimate {
    let total_chars = fixed_chars + history.chars;
    let usage_tokens = history.reported_tokens;
    let chars_after_usage = history.chars_after_reported;
    let provider_usage_floor = if usage_tokens > 0 {
        usage_tokens + tokens_for_chars(chars_after_usage)
    } else {
        0
    };
    let serialized_tokens = tokens_for_chars(total_chars);
    ContextEstimate {
        estimated_tokens: serialized_tokens.max(provider_usage_floor),
        serialized_tokens,
        provider_usage_floor,
        serialized_chars: total_chars,
    }
}

/// True when `tokens` is more than `ratio` of `window`. A window of 0 means "unknown": never over.
pub(crate) fn exceeds(tokens: u64, window: u64, ratio: f64) -> bool {
    window > 0 && tokens as f64 > window as f64 * ratio
}

/// The assistant message text that explains why a round was blocked by the hard guard.
pub(crate) fn hard_limit_notice(estimate: &ContextEstimate, window: u64) -> String {
    let percent = if window > 0 {
        estimate.estimated_tokens as f64 * 100.0 / window as f64
    } else {
        0.0
    };
    format!(
        "Context window is near capacity. Cannot process further in this round. Estimated {} / {} tokens ({percent:.1}%) exceeds the hard-block threshold {:.0}%. Compact the conversation or start a new one, then try again.",
        estimate.estimated_tokens,
        window,
        HARD_LIMIT_RATIO * 100.0
    )
}

/// Running tool-result budget for one batch: starts from the request plus the assistant message
/// and grows with each committed tool message.
pub(crate) struct ToolResultBudget {
    window: u64,
    chars: u64,
    usage_tokens: u64,
    added_chars: u64,
}

impl ToolResultBudget {
    /// `base_chars` is the serialized size of everything already in the context (request and the
    /// assistant message); `usage_tokens` is the provider's count for the round (0 if unknown).
    pub(crate) fn new(window: u64, base_chars: u64, usage_tokens: u64) -> Self {
        ToolResultBudget {
            window,
            chars: base_chars,
            usage_tokens,
            added_chars: 0,
        }
    }

    /// Adds a committed tool message; true when the budget is now exhausted.
    pub(crate) fn add(&mut self, message: &Message) -> bool {
        let chars = serialized_chars(message);
        self.chars += chars;
        self.added_chars += chars;
        let floor = if self.usage_tokens > 0 {
            self.usage_tokens + tokens_for_chars(self.added_chars)
        } else {
            0
        };
        let estimate = tokens_for_chars(self.chars).max(floor);
        exceeds(estimate, self.window, TOOL_RESULT_BUDGET_RATIO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ContentBlock, MessageState, Usage};

    #[test]
    fn counts_characters_not_bytes() {
        assert_eq!(serialized_chars("héllo"), 7); // quotes + 5 characters
        assert_eq!(serialized_chars(&vec![1, 2]), 5);
    }

    #[test]
    fn provider_usage_is_a_floor_that_grows_with_later_messages() {
        let mut assistant =
            Message::assistant(vec![ContentBlock::text("ok")], MessageState::Complete);
        assistant.usage = Some(Usage {
            input_tokens: 1000,
            output_tokens: 10,
            ..Usage::default()
        });
        let user = Message::user("x".repeat(400));
        let user_chars = serialized_chars(&user);
        let messages = [Message::user("hi"), assistant, user];
        let estimate = estimate(0, HistorySize::of_messages(&messages));
        assert_eq!(
            estimate.provider_usage_floor,
            1010 + tokens_for_chars(user_chars)
        );
        assert_eq!(estimate.estimated_tokens, estimate.provider_usage_floor);
        assert!(estimate.serialized_tokens < estimate.provider_usage_floor);
    }

    #[test]
    fn without_usage_the_serialized_size_counts() {
        let messages = [Message::user("x".repeat(4000))];
        let estimate = estimate(100, HistorySize::of_messages(&messages));
        assert_eq!(estimate.provider_usage_floor, 0);
        assert!(estimate.estimated_tokens > 1000);
        assert_eq!(estimate.estimated_tokens, estimate.serialized_tokens);
    }

    #[test]
    fn thresholds() {
        assert!(!exceeds(95, 100, HARD_LIMIT_RATIO));
        assert!(exceeds(96, 100, HARD_LIMIT_RATIO));
        assert!(!exceeds(u64::MAX, 0, HARD_LIMIT_RATIO));
        let mut budget = ToolResultBudget::new(100, 0, 0);
        assert!(!budget.add(&Message::tool_result("a", "short", false)));
        assert!(budget.add(&Message::tool_result("b", "x".repeat(200), false)));
    }
}
