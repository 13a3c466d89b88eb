//! Matcher groups' `matcher` strings, with Claude Code's syntax: which values a group applies to.
//!
//! - `""`, `"*"` or no matcher: everything.
//! - Only letters, digits, `_`, `-`, spaces, `,` and `|`: an exact name or a list of exact names
//!   separated by `|` or `,` (`Edit|Write`, `Edit, Write`). `mcp__memory` is exact, so it matches
//!   no MCP tool (their names are `mcp__memory__<tool>`).
//! - Anything else: a regular expression, **unanchored** as in JavaScript's `RegExp.test`, so
//!   `Edit.*` also matches `NotebookEdit`; write `^Edit$` to anchor. Rust's regex syntax is
//!   JavaScript's for everything hook matchers use in practice; look-around and backreferences are
//!   not supported and are reported as invalid.
//! - StopFailure matchers are exact names only (Claude Code's narrower set): no regex.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parsed matcher.
#[derive(Clone)]
pub struct Matcher {
    source: String,
    kind: MatcherKind,
}

#[derive(Clone)]
enum MatcherKind {
    All,
    Names(Vec<String>),
    Regex(regex::Regex),
}

/// The matcher is not a valid regular expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid matcher regex `{matcher}`: {message}")]
pub struct MatcherError {
    /// The matcher as written.
    pub matcher: String,
    /// What the regex parser said.
    pub message: String,
}

fn is_plain(matcher: &str) -> bool {
    matcher
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'))
}

fn names(matcher: &str) -> Vec<String> {
    matcher
        .split(['|', ','])
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

impl Matcher {
    /// Matches everything.
    pub fn all() -> Self {
        Matcher {
            source: String::new(),
            kind: MatcherKind::All,
        }
    }

    /// Parses a matcher string with Claude Code's rules.
    pub fn parse(matcher: &str) -> Result<Self, MatcherError> {
        let trimmed = matcher.trim();
        let kind = if trimmed.is_empty() || trimmed == "*" {
            MatcherKind::All
        } else if is_plain(trimmed) {
            MatcherKind::Names(names(trimmed))
        } else {
            let regex = regex::Regex::new(trimmed).map_err(|e| MatcherError {
                matcher: matcher.to_string(),
                message: regex_message(&e),
            })?;
            MatcherKind::Regex(regex)
        };
        Ok(Matcher {
            source: matcher.to_string(),
            kind,
        })
    }

    /// Parses a matcher that only lists exact names (StopFailure's narrower syntax).
    pub fn exact_names(matcher: &str) -> Self {
        let trimmed = matcher.trim();
        let kind = if trimmed.is_empty() || trimmed == "*" {
            MatcherKind::All
        } else {
            MatcherKind::Names(names(trimmed))
        };
        Matcher {
            source: matcher.to_string(),
            kind,
        }
    }

    /// The matcher as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when it matches everything.
    pub fn is_all(&self) -> bool {
        matches!(self.kind, MatcherKind::All)
    }

    /// True when it is a regular expression.
    pub fn is_regex(&self) -> bool {
        matches!(self.kind, MatcherKind::Regex(_))
    }

    /// Whether `target` matches. A matcher other than "everything" never matches a missing
    /// target.
    pub fn matches(&self, target: Option<&str>) -> bool {
        match (&self.kind, target) {
            (MatcherKind::All, _) => true,
            (_, None) => false,
            (MatcherKind::Names(names), Some(t)) => names.iter().any(|n| n == t),
            (MatcherKind::Regex(re), Some(t)) => re.is_match(t),
        }
    }
}

/// The regex crate's message without its multi-line caret diagram's noise for simple cases.
fn regex_message(error: &regex::Error) -> String {
    match error {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .map(|l| l.trim_start_matches("error:").trim().to_string())
            .unwrap_or_else(|| text.clone()),
        other => other.to_string(),
    }
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher::all()
    }
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for Matcher {}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            MatcherKind::All => "all",
            MatcherKind::Names(_) => "names",
            MatcherKind::Regex(_) => "regex",
        };
        write!(f, "Matcher({kind}: {:?})", self.source)
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Serialize for Matcher {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for Matcher {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let source = String::deserialize(d)?;
        Matcher::parse(&source).map_err(serde::de::Error::custom)
    }
}
