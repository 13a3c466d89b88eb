//! The append-only conversation history: chat entries (messages) and event entries (tool
//! summaries, notices), in the shape of the TypeScript SDK's `IHistoryEntry`.

use std::sync::Arc;

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

/// Metadata key of where an assistant message's [`SERVER_BLOCKS_METADATA`] blocks go among its
/// text blocks: for each server block, how many of the message's text blocks came before it (the
/// model's order: text, a search, its results, the cited text, …). Without it every server block
/// goes before the text.
pub const SERVER_BLOCK_POSITIONS_METADATA: &str = "server_block_positions";

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
        /// The message (shared with the requests that send it).
        data: Arc<Message>,
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
    /// A chat entry holding `message` (its id, timestamp and role become the entry's).
    pub fn chat(message: Message) -> Self {
        HistoryEntry::Chat {
            id: message.id.clone(),
            timestamp: message.timestamp.clone(),
            role: message.role,
            data: Arc::new(message),
        }
    }

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

    /// The shared message, for chat entries.
    pub fn shared_message(&self) -> Option<&Arc<Message>> {
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
///
/// **Cheap to copy, cheap to measure.** Entries and messages are shared (`Arc`), so cloning a
/// conversation (the session hands a copy to each run) copies pointers, not text, and
/// [`messages_for_model`](Self::messages_for_model) shares the stored messages with the request.
/// Each message's serialized size and its model view are worked out once, when it is added, so
/// the context estimate before every model call adds up numbers instead of serializing the whole
/// history: the per-turn cost stays flat however long the session runs.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    entries: Vec<Arc<HistoryEntry>>,
    /// One per entry: what the model is sent for it and how big it is.
    measured: Vec<MeasuredEntry>,
    /// Number of chat entries.
    message_count: usize,
    /// The size of the chat messages as stored, kept up to date as entries are added.
    stored_size: HistorySize,
    /// The size of [`messages_for_model`](Self::messages_for_model), kept up to date.
    model_size: HistorySize,
}

/// What one history entry costs in a request, worked out when the entry is added.
#[derive(Debug, Clone, Default)]
struct MeasuredEntry {
    /// Serialized characters of the stored message (0 for an event entry).
    chars: u64,
    /// The message as the model sees it.
    for_model: ModelView,
    /// Serialized characters of the model's view.
    model_chars: u64,
}

/// What the model is sent for one history entry.
#[derive(Debug, Clone, Default)]
enum ModelView {
    /// Nothing: an event entry or a system message (the system prompt is sent separately).
    #[default]
    Nothing,
    /// The stored message as it is.
    Stored,
    /// A copy with an annotation or the message's model-only context.
    Changed(Arc<Message>),
}

/// The size of a run of messages, as the context estimate needs it: their serialized
/// characters, the provider's count from the last assistant message that reported usage and
/// the characters of the messages after that one. Kept by [`Conversation`] as messages are
/// added, so an estimate costs the same however long the history is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistorySize {
    /// Serialized characters of every message.
    pub chars: u64,
    /// Total tokens the provider reported for the last message that carried usage (0: none did).
    pub reported_tokens: u64,
    /// Serialized characters of the messages after that message (all of them when none did).
    pub chars_after_reported: u64,
}

impl HistorySize {
    /// The size of these messages.
    pub fn of_messages<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Self {
        messages
            .into_iter()
            .fold(HistorySize::default(), |size, message| {
                size.plus(MessageSize::of(message))
            })
    }

    /// This size with one more message after the others.
    pub fn plus(mut self, message: MessageSize) -> Self {
        self.chars += message.chars;
        if message.reported_tokens > 0 {
            self.reported_tokens = message.reported_tokens;
            self.chars_after_reported = 0;
        } else {
            self.chars_after_reported += message.chars;
        }
        self
    }
}

/// The size of one message in a request: what the context estimate needs to know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSize {
    /// Characters of the message serialized as JSON.
    pub chars: u64,
    /// The total tokens the provider reported for the call that produced it (assistant messages
    /// with usage; 0 otherwise).
    pub reported_tokens: u64,
}

impl MessageSize {
    /// The size of `message` (serializes it once).
    pub fn of(message: &Message) -> Self {
        MessageSize {
            chars: serialized_chars(message),
            reported_tokens: reported_tokens(message),
        }
    }
}

fn reported_tokens(message: &Message) -> u64 {
    match (&message.usage, message.role) {
        (Some(usage), Role::Assistant) => usage.total_tokens(),
        _ => 0,
    }
}

/// Characters (not bytes) of `value` serialized as JSON, without building the string.
pub fn serialized_chars<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut counter = CharCounter(0);
    // Serializing plain data into a counter cannot fail; a failure would only under-count.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Counts UTF-8 characters written to it (every byte that is not a continuation byte).
struct CharCounter(u64);

impl std::io::Write for CharCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl MeasuredEntry {
    fn of(entry: &HistoryEntry) -> Self {
        let HistoryEntry::Chat { data, .. } = entry else {
            return MeasuredEntry::default();
        };
        let chars = serialized_chars(data.as_ref());
        if data.role == Role::System {
            return MeasuredEntry {
                chars,
                for_model: ModelView::Nothing,
                model_chars: 0,
            };
        }
        match model_view(data) {
            Some(view) => MeasuredEntry {
                chars,
                model_chars: serialized_chars(&view),
                for_model: ModelView::Changed(Arc::new(view)),
            },
            None => MeasuredEntry {
                chars,
                for_model: ModelView::Stored,
                model_chars: chars,
            },
        }
    }
}

/// The message the model is sent instead of `message`, when it differs: an interrupted
/// assistant message carries [`INTERRUPTED_ANNOTATION`] (or [`PROVIDER_ERROR_ANNOTATION`]) after
/// its text, and a user message's [`MODEL_CONTEXT_METADATA`] comes before its text as a separate
/// text block.
fn model_view(message: &Message) -> Option<Message> {
    if message.role == Role::Assistant && message.state == MessageState::Interrupted {
        return Some(annotate_interrupted(message));
    }
    let context = model_context(message)?;
    let mut enriched = message.clone();
    // The blank line keeps context and prompt apart when a provider joins the text blocks of a
    // message into one string (OpenAI chat format).
    enriched
        .content
        .insert(0, ContentBlock::text(format!("{context}\n\n")));
    Some(enriched)
}

impl PartialEq for Conversation {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Serialize for Conversation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Stored<'a> {
            entries: &'a [Arc<HistoryEntry>],
        }
        Stored {
            entries: &self.entries,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(default)]
            entries: Vec<HistoryEntry>,
        }
        Stored::deserialize(deserializer).map(|stored| Conversation::from_entries(stored.entries))
    }
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds a conversation from stored entries (e.g. a session file).
    pub fn from_entries(entries: Vec<HistoryEntry>) -> Self {
        let mut conversation = Conversation {
            entries: Vec::with_capacity(entries.len()),
            measured: Vec::with_capacity(entries.len()),
            ..Conversation::default()
        };
        for entry in entries {
            conversation.push_entry(entry);
        }
        conversation
    }

    fn push_entry(&mut self, entry: HistoryEntry) -> &Arc<HistoryEntry> {
        let measured = MeasuredEntry::of(&entry);
        if let Some(message) = entry.message() {
            self.message_count += 1;
            let reported_tokens = reported_tokens(message);
            self.stored_size = self.stored_size.plus(MessageSize {
                chars: measured.chars,
                reported_tokens,
            });
            if !matches!(measured.for_model, ModelView::Nothing) {
                self.model_size = self.model_size.plus(MessageSize {
                    chars: measured.model_chars,
                    reported_tokens,
                });
            }
        }
        self.measured.push(measured);
        self.entries.push(Arc::new(entry));
        &self.entries[self.entries.len() - 1]
    }

    /// Appends a message as a chat entry and returns it.
    pub fn push(&mut self, message: Message) -> &Message {
        match self.push_entry(HistoryEntry::chat(message)).as_ref() {
            HistoryEntry::Chat { data, .. } => data,
            // The entry pushed on the line above is a chat entry.
            HistoryEntry::Event { .. } => {
                unreachable!("the last entry is the chat entry just pushed")
            }
        }
    }

    /// Appends an event entry.
    pub fn push_event(&mut self, event_type: impl Into<String>, data: serde_json::Value) {
        self.push_entry(HistoryEntry::Event {
            id: new_id(),
            timestamp: now_rfc3339(),
            event_type: event_type.into(),
            data,
        });
    }

    /// Every entry, chat and event, in order.
    pub fn entries(&self) -> &[Arc<HistoryEntry>] {
        &self.entries
    }

    /// Copies of every entry, in order (the messages themselves stay shared).
    pub fn to_entries(&self) -> Vec<HistoryEntry> {
        self.entries.iter().map(|entry| (**entry).clone()).collect()
    }

    /// The chat messages in order.
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = &Message> + '_ {
        self.entries.iter().filter_map(|entry| entry.message())
    }

    /// Number of chat messages.
    pub fn message_count(&self) -> usize {
        self.message_count
    }

    /// The last chat message.
    pub fn last_message(&self) -> Option<&Message> {
        self.messages().next_back()
    }

    /// The size of the chat messages as stored (system messages included).
    pub fn size(&self) -> HistorySize {
        self.stored_size
    }

    /// The size of the messages [`messages_for_model`](Self::messages_for_model) returns.
    pub fn model_size(&self) -> HistorySize {
        self.model_size
    }

    /// The messages as the model should see them: system messages are left out (the system prompt
    /// is sent separately), an interrupted assistant message carries
    /// [`INTERRUPTED_ANNOTATION`] (or [`PROVIDER_ERROR_ANNOTATION`] when a failure, not the user,
    /// cut it off) after its text, and a user message's [`MODEL_CONTEXT_METADATA`] comes before
    /// its text as a separate text block. The messages are shared with the history, not copied.
    pub fn messages_for_model(&self) -> Vec<Arc<Message>> {
        self.entries
            .iter()
            .zip(&self.measured)
            .filter_map(|(entry, measured)| match &measured.for_model {
                ModelView::Nothing => None,
                ModelView::Stored => entry.shared_message().cloned(),
                ModelView::Changed(message) => Some(Arc::clone(message)),
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
            ContentBlock::Text { text, .. } => Some(text),
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
    fn kept_sizes_match_measuring_the_messages_again() {
        let mut conversation = Conversation::new();
        conversation.push(Message::system("frame"));
        let mut prompt = Message::user("fix the bug");
        prompt
            .metadata
            .insert(MODEL_CONTEXT_METADATA.into(), "branch: main".into());
        conversation.push(prompt);
        let mut answer =
            Message::assistant(vec![ContentBlock::text("done")], MessageState::Complete);
        answer.usage = Some(crate::message::Usage {
            input_tokens: 120,
            output_tokens: 8,
            ..crate::message::Usage::default()
        });
        conversation.push(answer);
        conversation.push_event("tool-summary", serde_json::json!({"summary": "x"}));
        conversation.push(Message::user("héllo again"));
        conversation.push(Message::assistant(
            vec![ContentBlock::text("partial")],
            MessageState::Interrupted,
        ));

        assert_eq!(
            conversation.size(),
            HistorySize::of_messages(conversation.messages())
        );
        let for_model = conversation.messages_for_model();
        assert_eq!(
            conversation.model_size(),
            HistorySize::of_messages(for_model.iter().map(|m| m.as_ref()))
        );
        assert_eq!(conversation.model_size().reported_tokens, 128);
        assert_eq!(conversation.message_count(), 5);
        // A rebuilt conversation (a resumed session) measures the same.
        let rebuilt = Conversation::from_entries(conversation.to_entries());
        assert_eq!(rebuilt.size(), conversation.size());
        assert_eq!(rebuilt.model_size(), conversation.model_size());
        // Unchanged messages are shared with the request, not copied.
        let stored = conversation.entries()[2].shared_message().cloned();
        assert!(stored.is_some_and(|stored| Arc::ptr_eq(&stored, &for_model[1])));
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
        assert_eq!(back, conversation.to_entries());
    }
}
