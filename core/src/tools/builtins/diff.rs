//! Structured diffs for hosts: the hunks of a file change, the way Claude Code's
//! `structuredPatch` carries them, so a host can render the edit without diffing again.

use std::time::Duration;

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

/// One hunk: a changed region with up to three lines of context on each side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Hunk {
    /// First line of the hunk in the old text (1-based; 0 for an insertion into an empty text).
    pub old_start: usize,
    /// Lines of the old text the hunk covers.
    pub old_lines: usize,
    /// First line of the hunk in the new text (1-based).
    pub new_start: usize,
    /// Lines of the new text the hunk covers.
    pub new_lines: usize,
    /// The lines, each prefixed with ' ' (context), '-' (removed) or '+' (added), without newline.
    pub lines: Vec<String>,
}

/// Line hunks turning `old` into `new`. Diffing is capped at one second; on a pathological input
/// `similar` then returns a coarser (still correct) diff.
pub(crate) fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::configure()
        .timeout(Duration::from_secs(1))
        .diff_lines(old, new);
    diff.grouped_ops(3)
        .iter()
        .filter_map(|group| {
            let first = group.first()?;
            let last = group.last()?;
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let mut lines = Vec::new();
            for op in group {
                for change in diff.iter_changes(op) {
                    let sign = match change.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Delete => '-',
                        ChangeTag::Insert => '+',
                    };
                    let value = change.value();
                    let value = value
                        .strip_suffix('\n')
                        .map(|v| v.strip_suffix('\r').unwrap_or(v))
                        .unwrap_or(value);
                    lines.push(format!("{sign}{value}"));
                }
            }
            let start = |range: &std::ops::Range<usize>| {
                if range.is_empty() {
                    range.start
                } else {
                    range.start + 1
                }
            };
            Some(Hunk {
                old_start: start(&old_range),
                old_lines: old_range.len(),
                new_start: start(&new_range),
                new_lines: new_range.len(),
                lines,
            })
        })
        .collect()
}

/// JSON form of [`hunks`] for a `tool_response`.
pub(crate) fn hunks_json(old: &str, new: &str) -> serde_json::Value {
    serde_json::to_value(hunks(old, new)).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_line_has_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\n";
        let new = "a\nb\nc\nD\ne\nf\ng\n";
        let hunks = hunks(old, new);
        assert_eq!(hunks.len(), 1);
        let h = &hunks[0];
        assert_eq!(
            (h.old_start, h.old_lines, h.new_start, h.new_lines),
            (1, 7, 1, 7)
        );
        assert_eq!(h.lines, [" a", " b", " c", "-d", "+D", " e", " f", " g"]);
    }
}
