//! What opening a saved session found wrong with its files, what was repaired and what was
//! lost: the [`RecoveryReport`] a resumed session carries
//! ([`Session::recovery_report`](super::Session::recovery_report)) and reports once as a
//! `session_recovered` event when it starts.
//!
//! Nothing is repaired silently. The cases:
//!
//! - **The snapshot cannot be read** (garbage, truncated, empty): the session is rebuilt from
//!   its JSONL log, which holds every finished turn, and the damaged snapshot is moved aside to
//!   `{id}.json.damaged-{time}` (by the writer only: a fork leaves the files it copies alone).
//! - **Log lines cannot be read**: each is skipped and reported with its line number; whatever
//!   it recorded is lost. A copy of the log as it was found is kept at
//!   `{id}.jsonl.damaged-{time}`, and if the skipped line held a tool call or its result, the
//!   history is mended ([`repair_tool_pairs`]) so that every tool call still has a result.
//! - **The log ends in the middle of a line**: the writer stopped while writing it; the partial
//!   line is dropped.
//! - **The last prompt did not finish** (the process was killed mid-turn): the completed turns
//!   are kept, the unfinished one is left out whole, and [`UnfinishedTurn`] says which prompt it
//!   was — so the host can offer to send it again — and which tools had already run. It stays
//!   on the session (and in its snapshot) until the next prompt starts, so every resume until
//!   then says so.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::log::{IncompleteTurn, SkippedLine, TornTail};
use super::store::{Resumed, SessionStore};
use crate::message::{ContentBlock, HistoryEntry, Message, Role};

/// The content of the error result that stands in for a tool result lost with an unreadable
/// log line.
pub const LOST_TOOL_RESULT: &str =
    "[robota: the result of this tool call was lost: its line in the session log could not be read]";

/// A prompt whose turn started and never finished (the process running it stopped).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UnfinishedTurn {
    /// The prompt, as the model was to see it (send it again to redo the turn).
    pub prompt: String,
    /// When the turn started, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Chat messages the turn had produced (its prompt included), left out of the history.
    #[serde(default)]
    pub messages_dropped: usize,
    /// Tools that had already run in it, in order: their effects (files written, commands run)
    /// happened even though the turn is gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_run: Vec<String>,
}

impl UnfinishedTurn {
    /// The unfinished turn a log replay found.
    pub fn from_incomplete(turn: &IncompleteTurn) -> Self {
        let messages: Vec<&Message> = turn
            .entries
            .iter()
            .filter_map(HistoryEntry::message)
            .collect();
        let prompt = turn.prompt.clone().unwrap_or_else(|| {
            messages
                .iter()
                .find(|m| m.role == Role::User)
                .map(|m| m.text())
                .unwrap_or_default()
        });
        let answered: HashSet<&str> = messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|block| match block {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let tools_run = messages
            .iter()
            .flat_map(|m| m.tool_uses())
            .filter(|(id, _, _)| answered.contains(id))
            .map(|(_, name, _)| name.to_string())
            .collect();
        UnfinishedTurn {
            prompt,
            started_at: turn.started_at.clone(),
            messages_dropped: messages.len(),
            tools_run,
        }
    }
}

/// The snapshot could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRepair {
    /// The snapshot file.
    pub path: PathBuf,
    /// Why it could not be used.
    pub problem: String,
    /// Where the damaged file was moved (`None`: it was left in place — a fork only reads the
    /// session it copies — or moving it failed, see the report's `details`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<PathBuf>,
}

/// What opening a saved session found and did (see the module documentation). Serialized with
/// snake_case keys; the same object every binding returns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// The session that was opened.
    pub session_id: String,
    /// The session it was forked from, when this is a fork (the report is then about the
    /// session that was copied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The session log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<PathBuf>,
    /// The snapshot could not be used: the session was rebuilt from the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotRepair>,
    /// Log lines that could not be read and were skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_lines: Vec<SkippedLine>,
    /// The log ended in the middle of a line, which was dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torn_tail: Option<TornTail>,
    /// A copy of the damaged log as it was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_copy: Option<PathBuf>,
    /// The last prompt did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_turn: Option<UnfinishedTurn>,
    /// What was lost with unreadable log lines, one phrase each (empty: nothing; the torn tail
    /// and the unfinished turn say what they dropped themselves).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// Everything else met on the way (cleanup of temporary files, a stale lock taken over,
    /// the log reader's own diagnostics).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl RecoveryReport {
    /// What [`SessionStore::resume`] found for session
    /// `session_id`, before the writer's own repairs (moving the snapshot aside, copying the
    /// log), which fill in [`SnapshotRepair::moved_to`] and [`RecoveryReport::log_copy`].
    pub fn from_resumed(session_id: &str, store: &dyn SessionStore, resumed: &Resumed) -> Self {
        let mut lost = Vec::new();
        if let Some(first) = resumed.skipped_lines.first() {
            lost.push(if resumed.skipped_lines.len() == 1 {
                format!(
                    "whatever log line {} recorded{}",
                    first.line,
                    kind_phrase(first.kind.as_deref())
                )
            } else {
                format!(
                    "whatever the {} unreadable log lines recorded",
                    resumed.skipped_lines.len()
                )
            });
        }
        lost.extend(resumed.repairs.iter().cloned());
        RecoveryReport {
            session_id: session_id.to_string(),
            forked_from: None,
            log_path: Some(store.log_location(&resumed.record.id)),
            snapshot: resumed
                .snapshot_error
                .as_ref()
                .map(|problem| SnapshotRepair {
                    path: store.snapshot_location(&resumed.record.id),
                    problem: problem.clone(),
                    moved_to: None,
                }),
            skipped_lines: resumed.skipped_lines.clone(),
            torn_tail: resumed.torn_tail,
            log_copy: None,
            unfinished_turn: resumed.record.unfinished_turn.clone(),
            lost,
            details: resumed.diagnostics.clone(),
        }
    }

    /// True when there is something to tell the user: damage repaired, data lost or an
    /// unfinished prompt (details alone are not worth a notice).
    pub fn needs_notice(&self) -> bool {
        self.snapshot.is_some()
            || !self.skipped_lines.is_empty()
            || self.torn_tail.is_some()
            || self.unfinished_turn.is_some()
            || !self.lost.is_empty()
    }

    /// The notice for the user, one line per finding.
    pub fn message(&self) -> String {
        let mut lines = Vec::new();
        let subject = match &self.forked_from {
            Some(source) => format!("session {source:?} (forked as {:?})", self.session_id),
            None => format!("session {:?}", self.session_id),
        };
        if let Some(snapshot) = &self.snapshot {
            let log = self
                .log_path
                .as_ref()
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default();
            let moved = match &snapshot.moved_to {
                Some(to) => format!("; the damaged file was moved to {}", to.display()),
                None => format!("; the damaged file was left at {}", snapshot.path.display()),
            };
            lines.push(format!(
                "The snapshot of {subject} could not be read ({}); the session was rebuilt from its log{log}{moved}.",
                snapshot.problem
            ));
        }
        if !self.skipped_lines.is_empty() {
            let numbers: Vec<String> = self
                .skipped_lines
                .iter()
                .map(|s| s.line.to_string())
                .collect();
            let (noun, verb) = if numbers.len() == 1 {
                ("line", "was")
            } else {
                ("lines", "were")
            };
            let copy = self
                .log_copy
                .as_ref()
                .map(|p| format!(" A copy of the log as it was found is at {}.", p.display()))
                .unwrap_or_default();
            lines.push(format!(
                "Log {noun} {} of {subject} could not be read and {verb} skipped ({}); the rest of the log was kept.{copy}",
                numbers.join(", "),
                self.skipped_lines[0].problem
            ));
        }
        if let Some(torn) = &self.torn_tail {
            lines.push(format!(
                "The log of {subject} ended in the middle of line {} (the process stopped while writing it); those {} bytes were dropped.",
                torn.line, torn.bytes
            ));
        }
        if let Some(turn) = &self.unfinished_turn {
            let since = turn
                .started_at
                .as_ref()
                .map(|t| format!(", started {t}"))
                .unwrap_or_default();
            let tools = if turn.tools_run.is_empty() {
                String::new()
            } else {
                format!(
                    " Tools that had already run in it (their effects remain): {}.",
                    turn.tools_run.join(", ")
                )
            };
            lines.push(format!(
                "The last prompt of {subject} did not finish{since}: {:?}. Its partial work was not kept; send the prompt again to redo it.{tools}",
                shorten(&turn.prompt, 500)
            ));
        }
        if self.lost.is_empty() {
            if self.snapshot.is_some() || self.torn_tail.is_some() {
                lines.push("No finished turn was lost.".into());
            }
        } else {
            lines.push(format!("Lost: {}", self.lost.join("; ")));
        }
        lines.join("\n")
    }
}

fn kind_phrase(kind: Option<&str>) -> String {
    match kind {
        Some(kind) if !kind.is_empty() => format!(" (a {kind} line)"),
        _ => String::new(),
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut short: String = text.chars().take(max_chars).collect();
    short.push('…');
    short
}

/// Mends a history that lost lines: every tool call gets a result (an error result saying it
/// was lost stands in for a missing one) and a tool result whose call is gone is dropped, so
/// the history can be sent to a model again. Returns one sentence per change.
pub fn repair_tool_pairs(history: &mut Vec<HistoryEntry>) -> Vec<String> {
    let mut changes = Vec::new();
    let mut repaired = Vec::with_capacity(history.len());
    // Calls of the latest assistant message still waiting for their result: (id, tool name).
    let mut open: Vec<(String, String)> = Vec::new();
    for entry in history.drain(..) {
        let HistoryEntry::Chat {
            id,
            timestamp,
            role,
            mut data,
        } = entry
        else {
            // Event entries are never sent to the model and may sit between calls and results.
            repaired.push(entry);
            continue;
        };
        if data.role == Role::Tool {
            // The entries were just read, so the message is not shared and is not copied.
            Arc::make_mut(&mut data).content.retain(|block| match block {
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    match open.iter().position(|(id, _)| id == tool_use_id) {
                        Some(at) => {
                            open.remove(at);
                            true
                        }
                        None => {
                            changes.push(format!(
                                "a result for tool call {tool_use_id} whose call was lost was removed"
                            ));
                            false
                        }
                    }
                }
                _ => true,
            });
            if !data.content.is_empty() {
                repaired.push(HistoryEntry::Chat {
                    id,
                    timestamp,
                    role,
                    data,
                });
            }
            continue;
        }
        close_calls(&mut open, &mut repaired, &mut changes);
        if data.role == Role::Assistant {
            open = data
                .tool_uses()
                .map(|(id, name, _)| (id.to_string(), name.to_string()))
                .collect();
        }
        repaired.push(HistoryEntry::Chat {
            id,
            timestamp,
            role,
            data,
        });
    }
    close_calls(&mut open, &mut repaired, &mut changes);
    *history = repaired;
    changes
}

/// Answers the calls still open with an error result saying the result was lost.
fn close_calls(
    open: &mut Vec<(String, String)>,
    history: &mut Vec<HistoryEntry>,
    changes: &mut Vec<String>,
) {
    for (id, name) in open.drain(..) {
        changes.push(format!(
            "the result of the {name} call {id} was lost; an error result stands in for it"
        ));
        let message = Message::tool_result(id, LOST_TOOL_RESULT, true);
        history.push(HistoryEntry::chat(message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::MessageState;

    fn chat(message: Message) -> HistoryEntry {
        HistoryEntry::chat(message)
    }

    fn call(id: &str) -> Message {
        Message::assistant(
            vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "Bash".into(),
                input: serde_json::json!({}),
            }],
            MessageState::Complete,
        )
    }

    #[test]
    fn lost_results_are_answered_and_orphan_results_removed() {
        let mut history = vec![
            chat(Message::user("a")),
            chat(call("c1")),
            // c1's result was lost.
            chat(Message::assistant(
                vec![ContentBlock::text("done")],
                MessageState::Complete,
            )),
            chat(Message::user("b")),
            // c2's call was lost.
            chat(Message::tool_result("c2", "out", false)),
            chat(call("c3")),
        ];
        let changes = repair_tool_pairs(&mut history);
        assert_eq!(changes.len(), 3, "{changes:?}");
        let roles: Vec<Role> = history
            .iter()
            .filter_map(HistoryEntry::message)
            .map(|m| m.role)
            .collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::Tool
            ]
        );
        let mut intact = history.clone();
        assert!(repair_tool_pairs(&mut intact).is_empty());
        assert_eq!(intact, history);
    }
}
