//! Small text helpers shared by the context loaders: reading files as text and cutting text to a
//! byte budget without splitting a UTF-8 character.

use std::path::Path;

use crate::files::{read_regular, FileError, INSTRUCTION_FILE};

/// The largest index `<= max` that is a char boundary of `text`.
pub(crate) fn floor_char_boundary(text: &str, max: usize) -> usize {
    if max >= text.len() {
        return text.len();
    }
    let mut index = max;
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn truncate_to_bytes(text: &str, max: usize) -> &str {
    &text[..floor_char_boundary(text, max)]
}

/// Reads an instruction file as text: a regular file within [`INSTRUCTION_FILE`]'s cap (a FIFO
/// or a link to `/dev/zero` is refused, never read). Invalid UTF-8 is replaced (instruction files
/// are for a model to read; refusing a Latin-1 CLAUDE.md would help nobody) and a byte-order mark
/// is dropped.
pub(crate) fn read_text(path: &Path) -> Result<String, FileError> {
    let bytes = read_regular(path, &INSTRUCTION_FILE)?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    };
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// The lines of `text` (without their terminators, `\r\n` or `\n`).
pub(crate) fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
}
