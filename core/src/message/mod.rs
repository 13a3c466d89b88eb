//! Conversation data: messages and their content blocks, usage figures, history entries and the
//! append-only [`Conversation`] that the execution loop writes to.
//!
//! These types are pure data (serde, no I/O). Their JSON shape is what session files, replay logs
//! and every language binding see, so field names are part of the public contract.

mod error;
mod history;

pub use error::{ProviderError, ProviderErrorKind};
pub use history::{
    serialized_chars, Conversation, HistoryCategory, HistoryEntry, HistorySize, MessageSize,
    INTERRUPTED_ANNOTATION, MODEL_CONTEXT_METADATA, PROVIDER_ERROR_ANNOTATION,
    PROVIDER_ERROR_METADATA, REFUSAL_METADATA, SERVER_BLOCKS_METADATA,
    SERVER_BLOCK_POSITIONS_METADATA,
};

use serde::{Deserialize, Serialize};

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or host) driving the agent.
    User,
    /// The model.
    Assistant,
    /// Instructions that frame the conversation.
    System,
    /// The result of a tool call, linked to the assistant's `tool_use` block by id.
    Tool,
}

/// Whether a message finished normally.
///
/// Only assistant messages can be `Interrupted` (the user aborted while the model was answering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageState {
    /// The message is whole.
    #[default]
    Complete,
    /// The model was cut off; the text is what had streamed so far.
    Interrupted,
}

/// One block of message content, in the provider-neutral shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// The sources the text cites, as the provider sent them (Anthropic `citations`: a web
        /// search result's `web_search_result_location`, a document's `char_location`, …),
        /// verbatim so they can be shown and sent back unchanged. Empty (and left out of the
        /// JSON) for uncited text; providers without citations ignore it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        citations: Vec<serde_json::Value>,
    },
    /// The model's visible reasoning ("extended thinking").
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Provider signature that must be sent back unchanged with the block (Anthropic).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A tool call requested by the model.
    ToolUse {
        /// The provider's tool-call id. Kept exactly as the provider sent it, even when a provider
        /// reuses ids across rounds.
        id: String,
        /// The requested tool name (may name a tool that is not registered).
        name: String,
        /// The parsed arguments. When the model sent arguments that are not valid JSON, this is a
        /// JSON string holding the raw text, so the transcript keeps what the model really said.
        input: serde_json::Value,
    },
    /// The outcome of a tool call.
    ToolResult {
        /// The id of the `tool_use` block this answers.
        tool_use_id: String,
        /// The plain text the model sees.
        content: String,
        /// True when the call failed, was refused or was not executed.
        #[serde(default)]
        is_error: bool,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            citations: Vec::new(),
        }
    }
}

/// Token counts reported by a provider for one model call (or summed over several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens not served from a cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output (completion) tokens, including thinking.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// All tokens the call consumed (input of every kind plus output).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
    }

    /// Adds another call's counts to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique id (UUID v4), generated when the message is created.
    pub id: String,
    /// Author.
    pub role: Role,
    /// Content blocks in order.
    pub content: Vec<ContentBlock>,
    /// `complete`, or `interrupted` for an assistant message cut off by an abort.
    #[serde(default)]
    pub state: MessageState,
    /// Creation time, RFC 3339 UTC.
    pub timestamp: String,
    /// Tokens the provider reported for the call that produced this (assistant) message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Free-form metadata (round number, model, stop reason, error codes…).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl Message {
    fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Message {
            id: new_id(),
            role,
            content,
            state: MessageState::Complete,
            timestamp: now_rfc3339(),
            usage: None,
            metadata: serde_json::Map::new(),
        }
    }

    /// A user message holding one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentBlock::text(text)])
    }

    /// A system message holding one text block.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![ContentBlock::text(text)])
    }

    /// An assistant message with the given blocks and state.
    pub fn assistant(content: Vec<ContentBlock>, state: MessageState) -> Self {
        let mut message = Self::new(Role::Assistant, content);
        message.state = state;
        message
    }

    /// A tool message answering one tool call.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::new(
            Role::Tool,
            vec![ContentBlock::ToolResult {
                tool_use_id: tool_use_id.into(),
                content: content.into(),
                is_error,
            }],
        )
    }

    /// All text blocks joined (no separator), ignoring thinking and tool blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text, .. } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls in this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// A fresh UUID v4 string.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The current time as RFC 3339 UTC with millisecond precision.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}
