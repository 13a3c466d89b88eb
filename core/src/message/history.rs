//! The append-only conversation history: chat entries (messages) and event entries (tool
//! summaries, notices), in the shape of the TypeScript SDK's `IHistoryEntry`.

use serde::{Deserialize, Serialize};

use super::{new_id, now_rfc3339, ContentBlock, Message, MessageState, Role};

/// Suffix added to an interrupted assistant message's text when it is sent back to the model, so the
/// model knows its previous answer was cut short.
pub const INTERRUPTED_ANNOTATION: &str = "\n\n[This response was interrupted by the user]";

/// Suffix added instead of [`INTERRUPTED_ANNOTATION`] when the answer was cut off by a failed
/// model call (connection reset, stall, provider error) rather than by the user: telling the model
/// the user stopped it would be false.
pub const PROVIDER_ERROR_ANNOTATION: &str =
    "\n\n[This response was cut off by a connection or provider error before it finished]";

/// Metadata key the engine sets on an assistant message whose call failed after text streamed.
pub const PROVIDER_ERROR_METADATA: &str = "provider_error";

/// Metadata key of an assistant message the model ended with a refusal: the provider layer's
/// `Refusal` (refusal text, the provider's category and explanation).
pub const REFUSAL_METADATA: &str = "refusal";

/// Metadata key of an assistant message's server-tool blocks (Anthropic web search, code
/// execution, …): the wire blocks, verbatim and in order, which the Anthropic provider sends back
/// with the message.
pub const SERVER_BLOCKS_METADATA: &str = "server_blocks";

/// Metadata key of a user message's model-only context (hook `additionalContext`, attached
/// files): a string the model sees before the message's text, while the history — and every user
/// interface reading it — keeps the text as the user typed it. Set by the session layer.
pub const MODEL_CONTEXT_METADATA: &str = "model_context";

/// The two kinds of history entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryCategory {
    /// A conversation message.
    Chat,
    /// A structured non-message event.
    Event,
}

/// One entry of the full history. Serialized as `{id, timestamp, category, type, data}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "category", rename_all = "snake_case")]
pub enum HistoryEntry {
    /// A conversation message; `type` is the message role.
    Chat {
        /// Entry id (the message id).
        id: String,
        /// Creation time, RFC 3339 UTC.
        timestamp: String,
        /// The message role.
        #[serde(rename = "type")]
        role: Role,
        /// The message.
        data: Message,
    },
    /// A structured event (e.g. `tool-summary`, `usage-summary`, `skill-activation`).
    Event {
        /// Entry id.
        id: String,
        /// Creation time, RFC 3339 UTC.
        timestamp: String,
        /// Event type name.
        #[serde(rename = "type")]
        event_type: String,
        /// Event payload.
        data: serde_json::Value,
    },
}

impl HistoryEntry {
    /// The entry's category.
    pub fn category(&self) -> HistoryCategory {
        match self {
            HistoryEntry::Chat { .. } => HistoryCategory::Chat,
            HistoryEntry::Event { .. } => HistoryCategory::Event,
        }
    }

    /// The entry's id.
    pub fn id(&self) -> &str {
        match self {
            HistoryEntry::Chat { id, .. } | HistoryEntry::Event { id, .. } => id,
        }
    }

    /// The message, for chat entries.
    pub fn message(&self) -> Option<&Message> {
        match self {
            HistoryEntry::Chat { data, .. } => Some(data),
            HistoryEntry::Event { .. } => None,
        }
    }
}

/// Append-only conversation history.
///
/// Messages are only ever added; nothing is edited or removed (compaction, owned by the session
/// layer, is the one documented exception and replaces the whole history explicitly).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    entries: Vec<HistoryEntry>,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds a conversation from stored entries (e.g. a session file).
    pub fn from_entries(entries: Vec<HistoryEntry>) -> Self {
        Conversation { entries }
    }

    /// Appends a message as a chat entry and returns it.
    pub fn push(&mut self, message: Message) -> &Message {
        let entry = HistoryEntry::Chat {
            id: message.id.clone(),
            timestamp: message.timestamp.clone(),
            role: message.role,
            data: message,
        };
        self.entries.push(entry);
        match self.entries.last() {
            Some(HistoryEntry::Chat { data, .. }) => data,
            // The entry pushed on the line above is a chat entry.
            _ => unreachable!("the last entry is the chat entry just pushed"),
        }
    }

    /// Appends an event entry.
    pub fn push_event(&mut self, event_type: impl Into<String>, data: serde_json::Value) {
        self.entries.push(HistoryEntry::Event {
            id: new_id(),
            timestamp: now_rfc3339(),
            event_type: event_type.into(),
            data,
        });
    }

    /// Every entry, chat and event, in order.
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// The chat messages in order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> + '_ {
        self.entries.iter().filter_map(HistoryEntry::message)
    }

    /// Number of chat messages.
    pub fn message_count(&self) -> usize {
        self.messages().count()
    }

    /// The last chat message.
    pub fn last_message(&self) -> Option<&Message> {
        self.entries.iter().rev().find_map(HistoryEntry::message)
    }

    /// The messages as the model should see them: system messages are left out (the system prompt
    /// is sent separately), an interrupted assistant message carries
    /// [`INTERRUPTED_ANNOTATION`] (or [`PROVIDER_ERROR_ANNOTATION`] when a failure, not the user,
    /// cut it off) after its text, and a user message's [`MODEL_CONTEXT_METADATA`] comes before
    /// its text as a separate text block.
    pub fn messages_for_model(&self) -> Vec<Message> {
        self.messages()
            .filter(|message| message.role != Role::System)
            .map(|message| {
                if message.role == Role::Assistant && message.state == MessageState::Interrupted {
                    annotate_interrupted(message)
                } else if let Some(context) = model_context(message) {
                    let mut enriched = message.clone();
                    // The blank line keeps context and prompt apart when a provider joins the
                    // text blocks of a message into one string (OpenAI chat format).
                    enriched
                        .content
                        .insert(0, ContentBlock::text(format!("{context}\n\n")));
                    enriched
                } else {
                    message.clone()
                }
            })
            .collect()
    }
}

/// The model-only context of a user message, when it has a non-empty one.
fn model_context(message: &Message) -> Option<&str> {
    if message.role != Role::User {
        return None;
    }
    message
        .metadata
        .get(MODEL_CONTEXT_METADATA)
        .and_then(serde_json::Value::as_str)
        .filter(|context| !context.trim().is_empty())
}

fn annotate_interrupted(message: &Message) -> Message {
    let annotation = if message.metadata.contains_key(PROVIDER_ERROR_METADATA) {
        PROVIDER_ERROR_ANNOTATION
    } else {
        INTERRUPTED_ANNOTATION
    };
    let mut annotated = message.clone();
    let last_text = annotated
        .content
        .iter_mut()
        .rev()
        .find_map(|block| match block {
            ContentBlock::Text { text } => Some(text),
            _ => None,
        });
    match last_text {
        Some(text) => text.push_str(annotation),
        None => annotated
            .content
            .insert(0, ContentBlock::text(annotation.trim_start().to_string())),
    }
    annotated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_assistant_text_is_annotated_for_the_model_only() {
        let mut conversation = Conversation::new();
        conversation.push(Message::user("hi"));
        conversation.push(Message::assistant(
            vec![ContentBlock::text("partial")],
            MessageState::Interrupted,
        ));
        let for_model = conversation.messages_for_model();
        assert_eq!(
            for_model[1].text(),
            format!("partial{INTERRUPTED_ANNOTATION}")
        );
        // The stored history keeps what the model really said.
        assert_eq!(
            conversation.last_message().map(Message::text).as_deref(),
            Some("partial")
        );
    }

    #[test]
    fn a_message_cut_off_by_a_failure_is_not_blamed_on_the_user() {
        let mut conversation = Conversation::new();
        let mut partial = Message::assistant(
            vec![ContentBlock::text("partial")],
            MessageState::Interrupted,
        );
        partial
            .metadata
            .insert(PROVIDER_ERROR_METADATA.into(), true.into());
        conversation.push(partial);
        assert_eq!(
            conversation.messages_for_model()[0].text(),
            format!("partial{PROVIDER_ERROR_ANNOTATION}")
        );
    }

    #[test]
    fn model_context_reaches_the_model_but_not_the_history() {
        let mut conversation = Conversation::new();
        let mut prompt = Message::user("fix the bug");
        prompt
            .metadata
            .insert(MODEL_CONTEXT_METADATA.into(), "branch: main".into());
        conversation.push(prompt);
        let for_model = conversation.messages_for_model();
        assert_eq!(for_model[0].text(), "branch: main\n\nfix the bug");
        assert_eq!(
            conversation.last_message().map(Message::text).as_deref(),
            Some("fix the bug")
        );
    }

    #[test]
    fn empty_interrupted_message_still_tells_the_model() {
        let mut conversation = Conversation::new();
        conversation.push(Message::assistant(Vec::new(), MessageState::Interrupted));
        let for_model = conversation.messages_for_model();
        assert_eq!(
            for_model[0].text(),
            "[This response was interrupted by the user]"
        );
    }

    #[test]
    fn history_entries_serialize_in_the_ts_shape() {
        let mut conversation = Conversation::new();
        conversation.push(Message::user("hello"));
        conversation.push_event("tool-summary", serde_json::json!({"summary": "x"}));
        let json = serde_json::to_value(conversation.entries()).unwrap_or_default();
        assert_eq!(json[0]["category"], "chat");
        assert_eq!(json[0]["type"], "user");
        assert_eq!(json[0]["data"]["content"][0]["text"], "hello");
        assert_eq!(json[1]["category"], "event");
        assert_eq!(json[1]["type"], "tool-summary");
        let back: Vec<HistoryEntry> = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back.as_slice(), conversation.entries());
    }
}
