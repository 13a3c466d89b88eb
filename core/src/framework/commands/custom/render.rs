//! Turning a custom command into the prompt it sends: its arguments filled in, its
//! `` !`command` `` snippets found (the session runs them), and the system-prompt section that
//! tells the model which commands it may run.
//!
//! Placeholders, as Claude Code fills them in commands: `$ARGUMENTS` (everything after the name)
//! and `$1`…`$n` (the n-th argument, counted from 1; quotes group words: `/fix "the login page"
//! high` has `$1` = `the login page`). When the prompt uses no placeholder and arguments were
//! given, they are appended as `ARGUMENTS: …` so they are never lost.

use std::ops::Range;

use super::definition::{CustomCommandCatalog, CustomCommandDefinition};
use crate::framework::skills::split_arguments;

/// `body` with `$ARGUMENTS` and `$1`…`$n` filled from `args` (see the module docs).
pub fn substitute_command_arguments(body: &str, args: &str) -> String {
    let args = args.trim();
    let words = split_arguments(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        if let Some(after) = tail.strip_prefix("ARGUMENTS") {
            used = true;
            out.push_str(args);
            rest = after;
            continue;
        }
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        let after = &tail[digits..];
        let word_follows = after
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        match tail[..digits].parse::<usize>() {
            Ok(index) if index >= 1 && !word_follows => {
                used = true;
                out.push_str(words.get(index - 1).map(String::as_str).unwrap_or(""));
                rest = after;
            }
            _ => {
                out.push('$');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    out
}

/// One `` !`command` `` snippet of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSnippet {
    /// Where the whole snippet (`` !`…` ``) is in the prompt.
    pub span: Range<usize>,
    /// The command between the backticks.
    pub command: String,
}

/// The `` !`command` `` snippets of `text`, in order. The `!` must start the text or follow
/// whitespace or an opening bracket (so `` a!`b` `` in prose is left alone), and the command is
/// one line.
pub fn shell_snippets(text: &str) -> Vec<ShellSnippet> {
    let mut snippets = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("!`") {
        let start = from + found;
        let open = start + 2;
        let boundary = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '[' | '{' | ':' | '>'));
        let Some(length) = text[open..].find(['`', '\n']) else {
            break;
        };
        let close = open + length;
        if !boundary || text[close..].starts_with('\n') {
            from = open;
            continue;
        }
        let command = text[open..close].trim();
        if !command.is_empty() {
            snippets.push(ShellSnippet {
                span: start..close + 1,
                command: command.to_string(),
            });
        }
        from = close + 1;
    }
    snippets
}

/// `text` with each snippet replaced by its output (`outputs[i]` for `snippets[i]`).
pub fn replace_snippets(text: &str, snippets: &[ShellSnippet], outputs: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (snippet, output) in snippets.iter().zip(outputs) {
        out.push_str(&text[at..snippet.span.start]);
        out.push_str(output);
        at = snippet.span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The system-prompt lines for the commands the model may run (through the `Skill` tool), or
/// `None` when there are none; at most `budget` characters, then the rest is named as left out.
pub fn commands_prompt_section(catalog: &CustomCommandCatalog, budget: usize) -> Option<String> {
    let visible: Vec<&CustomCommandDefinition> =
        catalog.commands().filter(|c| c.model_invocable()).collect();
    if visible.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Custom commands\n\nThe user keeps these prompts as slash commands. When one matches \
         the task, run it with the `Skill` tool (`skill`: its name, `args`: its arguments) and \
         follow the prompt it returns:",
    );
    let mut used = 0;
    let mut left_out = Vec::new();
    for command in visible {
        let mut line = format!("\n- {}", command.name);
        if let Some(hint) = &command.argument_hint {
            line.push_str(&format!(" {hint}"));
        }
        let description: String = command
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        line.push_str(&format!(
            ": {}",
            description.chars().take(300).collect::<String>()
        ));
        if used + line.len() > budget {
            left_out.push(command.name.as_str());
            continue;
        }
        used += line.len();
        text.push_str(&line);
    }
    if !left_out.is_empty() {
        text.push_str(&format!(
            "\n({} more command(s) left out of this list for space: {}.)",
            left_out.len(),
            left_out.join(", ")
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_from_one() {
        assert_eq!(
            substitute_command_arguments(
                "all=$ARGUMENTS first=$1 second=$2 none=$7 keep=$0 $1abc cost=$ $",
                "\"a b\" c"
            ),
            "all=\"a b\" c first=a b second=c none= keep=$0 $1abc cost=$ $"
        );
        assert_eq!(
            substitute_command_arguments("Do it.", "now"),
            "Do it.\n\nARGUMENTS: now"
        );
        assert_eq!(substitute_command_arguments("Do it.", " "), "Do it.");
    }

    #[test]
    fn snippets_are_found_at_word_starts_on_one_line() {
        let text = "Status: !`git status`\n- log !`git log -1`\nprose a!`no` and !`open\nend`";
        let found = shell_snippets(text);
        let commands: Vec<&str> = found.iter().map(|s| s.command.as_str()).collect();
        assert_eq!(commands, ["git status", "git log -1"]);
        assert_eq!(&text[found[0].span.clone()], "!`git status`");
        let replaced = replace_snippets(text, &found, &["M a".into(), "abc".into()]);
        assert!(
            replaced.starts_with("Status: M a\n- log abc\n"),
            "{replaced}"
        );
    }
}
