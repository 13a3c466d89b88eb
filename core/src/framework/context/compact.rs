//! Extraction of the "Compact Instructions" section from instruction files. Claude Code users put
//! guidance for summarisation there; the session passes it to the compaction summary prompt.
//!
//! Rule: an ATX heading (`#` to `######`) whose text is `Compact Instructions` (any case, any
//! whitespace between the words, optional trailing text such as a colon) starts the section; it
//! runs until the next heading of the same or a higher level (fewer or equal `#`). Headings inside
//! fenced code blocks do not count. Every such section of every file is kept, in order.

use super::text::lines;

/// The body of every "Compact Instructions" section in `text`, joined by blank lines.
pub fn extract_compact_instructions(text: &str) -> Option<String> {
    let mut sections: Vec<String> = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    let mut fence: Option<&str> = None;

    for line in lines(text) {
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            if let Some((_, body)) = current.as_mut() {
                body.push(line);
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            if let Some((_, body)) = current.as_mut() {
                body.push(line);
            }
            continue;
        }
        if let Some((level, title)) = heading(line) {
            if let Some((open_level, body)) = current.take() {
                if level > open_level {
                    current = Some((open_level, body));
                } else {
                    push_section(&mut sections, &body);
                }
            }
            if current.is_none() && is_compact_title(title) {
                current = Some((level, Vec::new()));
                continue;
            }
        }
        if let Some((_, body)) = current.as_mut() {
            body.push(line);
        }
    }
    if let Some((_, body)) = current {
        push_section(&mut sections, &body);
    }
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}

fn push_section(sections: &mut Vec<String>, body: &[&str]) {
    let text = body.join("\n").trim().to_owned();
    if !text.is_empty() {
        sections.push(text);
    }
}

/// `(level, title)` for an ATX heading line.
fn heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.strip_prefix("   ").or_else(|| line.strip_prefix("  "));
    let trimmed = trimmed.or_else(|| line.strip_prefix(' ')).unwrap_or(line);
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &trimmed[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim()))
}

fn is_compact_title(title: &str) -> bool {
    let mut words = title.split_whitespace();
    let first = words.next().map(str::to_ascii_lowercase);
    let second = words.next().map(|word| {
        word.trim_end_matches(|c: char| !c.is_alphanumeric())
            .to_ascii_lowercase()
    });
    first.as_deref() == Some("compact") && second.as_deref() == Some("instructions")
}
