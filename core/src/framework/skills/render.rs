//! Turning skills into text: the system-prompt section listing them (names and descriptions
//! only, under a size budget) and an activated skill's instructions with its arguments filled in.
//!
//! Placeholders, as Claude Code fills them: `$ARGUMENTS` (everything after the name),
//! `$ARGUMENTS[N]` and its shorthand `$N` (the N-th argument, counted from 0; quotes group words:
//! `/fix "the login page" high` has `$0` = `the login page`), `${CLAUDE_SKILL_DIR}` (the skill's
//! folder) and `${CLAUDE_SESSION_ID}`. When the instructions use no argument placeholder and
//! arguments were given, they are appended as `ARGUMENTS: …` so they are never lost.

use std::path::Path;

use super::definition::{SkillCatalog, SkillDefinition};

/// Most characters of the system prompt's skill list. Past it, the remaining skills are named
/// as left out (and remain reachable through the `skills` command's `list`).
pub const SKILLS_PROMPT_BUDGET: usize = 8000;

/// Most characters of one skill's description in the list.
const MAX_LISTED_DESCRIPTION: usize = 300;

/// The system-prompt section for the skills the model may activate, or `None` when there are
/// none. Lists `- name: description` lines until `budget` characters are used, then says how
/// many were left out and how to see them.
pub fn skills_prompt_section(catalog: &SkillCatalog, budget: usize) -> Option<String> {
    let visible: Vec<&SkillDefinition> = catalog.skills().filter(|s| s.model_invocable()).collect();
    if visible.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Skills\n\nSkills hold instructions for particular tasks. When one matches the task, \
         load it with the `Skill` tool (`skill`: its name, `args`: its arguments) before doing \
         the task yourself. Available skills:",
    );
    let mut used = 0usize;
    let mut left_out = Vec::new();
    for skill in visible {
        let mut line = format!("\n- {}", skill.name);
        if let Some(hint) = &skill.argument_hint {
            line.push_str(&format!(" {hint}"));
        }
        line.push_str(&format!(": {}", shorten(&skill.description)));
        if used + line.len() > budget {
            left_out.push(skill.name.as_str());
            continue;
        }
        used += line.len();
        text.push_str(&line);
    }
    if !left_out.is_empty() {
        text.push_str(&format!(
            "\n({} more skill(s) left out of this list for space: {}. Run \
             `robota_command_skills` with `args: \"show <name>\"` to read one's description.)",
            left_out.len(),
            left_out.join(", ")
        ));
    }
    Some(text)
}

/// `text` on one line, cut to [`MAX_LISTED_DESCRIPTION`] characters.
fn shorten(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_LISTED_DESCRIPTION {
        return line;
    }
    let cut: String = line.chars().take(MAX_LISTED_DESCRIPTION - 1).collect();
    format!("{cut}…")
}

/// The arguments as words: split on whitespace, with `"…"` and `'…'` grouping words.
pub fn split_arguments(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

/// `body` with its placeholders filled (see the module docs).
pub fn substitute_arguments(
    body: &str,
    args: &str,
    skill_dir: Option<&Path>,
    session_id: &str,
) -> String {
    let args = args.trim();
    let words = split_arguments(args);
    let dir = skill_dir
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used_arguments = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("${CLAUDE_SKILL_DIR}") {
            out.push_str(&dir);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${CLAUDE_SESSION_ID}") {
            out.push_str(session_id);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("$ARGUMENTS") {
            used_arguments = true;
            match indexed(after) {
                Some((index, after_index)) => {
                    out.push_str(words.get(index).map(String::as_str).unwrap_or(""));
                    rest = after_index;
                }
                None => {
                    out.push_str(args);
                    rest = after;
                }
            }
        } else if let Some((index, after)) = positional(&tail[1..]) {
            used_arguments = true;
            out.push_str(words.get(index).map(String::as_str).unwrap_or(""));
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    if !used_arguments && !args.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    out
}

/// `[N]` at the start of `text`: the index and what follows.
fn indexed(text: &str) -> Option<(usize, &str)> {
    let inner = text.strip_prefix('[')?;
    let end = inner.find(']')?;
    let index = inner[..end].trim().parse().ok()?;
    Some((index, &inner[end + 1..]))
}

/// Digits at the start of `text` not followed by a word character: the index and what follows
/// (`$1` counts, `$1abc` and `$1_x` do not).
fn positional(text: &str) -> Option<(usize, &str)> {
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let after = &text[digits..];
    if after
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((text[..digits].parse().ok()?, after))
}

/// The text an activated inline skill adds to the conversation: where its files are, then its
/// instructions with the arguments filled in.
pub fn skill_instructions(
    skill: &SkillDefinition,
    body: &str,
    args: &str,
    session_id: &str,
) -> String {
    let rendered = substitute_arguments(body, args, skill.dir.as_deref(), session_id);
    match &skill.dir {
        Some(dir) => format!(
            "<skill name=\"{}\">\nBase directory for this skill: {}\n\n{}\n</skill>",
            skill.name,
            dir.display(),
            rendered.trim()
        ),
        None => format!(
            "<skill name=\"{}\">\n{}\n</skill>",
            skill.name,
            rendered.trim()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled() {
        let out = substitute_arguments(
            "all=$ARGUMENTS first=$0 second=$ARGUMENTS[1] none=$5 keep=$1abc cost=$ dir=${CLAUDE_SKILL_DIR} id=${CLAUDE_SESSION_ID}",
            "\"a b\" c",
            Some(Path::new("/s")),
            "sid",
        );
        assert_eq!(
            out,
            "all=\"a b\" c first=a b second=c none= keep=$1abc cost=$ dir=/s id=sid"
        );
    }

    #[test]
    fn arguments_without_placeholder_are_appended() {
        assert_eq!(
            substitute_arguments("Do it.", "now", None, "s"),
            "Do it.\n\nARGUMENTS: now"
        );
        assert_eq!(substitute_arguments("Do it.", "  ", None, "s"), "Do it.");
    }
}
