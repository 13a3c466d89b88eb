//! The project memory index `.robota/memory/MEMORY.md`, loaded at startup under the caps of spec
//! 000 "Project Memory": the first [`MEMORY_MAX_LINES`] lines, and at most [`MEMORY_MAX_BYTES`]
//! bytes of those. Topic files under `.robota/memory/topics/` are never loaded here.

use std::path::Path;

use serde::Serialize;

use super::text::{read_text, truncate_to_bytes};
use super::ContextWarning;

/// Lines of MEMORY.md loaded at startup.
pub const MEMORY_MAX_LINES: usize = 200;
/// Bytes of MEMORY.md loaded at startup (25 KiB), applied after the line cap.
pub const MEMORY_MAX_BYTES: usize = 25 * 1024;

/// The loaded memory index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryIndex {
    /// The file.
    pub path: std::path::PathBuf,
    /// What was loaded (within both caps).
    pub content: String,
    /// Size of the whole file in bytes.
    pub total_bytes: usize,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// True when a cap cut the file.
    pub truncated: bool,
}

pub(crate) fn load_memory(
    project_dir: &Path,
    warnings: &mut Vec<ContextWarning>,
) -> Option<MemoryIndex> {
    let path = project_dir.join(".robota").join("memory").join("MEMORY.md");
    let text = match read_text(&path) {
        Ok(text) => text,
        Err(err) if err.is_not_found() => return None,
        Err(err) => {
            warnings.push(ContextWarning {
                path: path.clone(),
                message: format!("{err}; it was skipped"),
            });
            return None;
        }
    };
    let total_lines = text.lines().count();
    // End of the MAX_LINES-th line (its newline included).
    let line_cut = text
        .match_indices('\n')
        .nth(MEMORY_MAX_LINES - 1)
        .map_or(text.len(), |(index, _)| index + 1);
    let content = truncate_to_bytes(&text[..line_cut], MEMORY_MAX_BYTES).to_owned();
    Some(MemoryIndex {
        path,
        truncated: content.len() < text.len(),
        content,
        total_bytes: text.len(),
        total_lines,
    })
}
