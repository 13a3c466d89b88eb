//! The sensitive-content policy of project memory (spec 000 "Sensitive data policy"): text that
//! looks like a secret, token, password, private key, payment card or national ID is refused
//! with a reason and never saved — not even as a pending candidate. Memory files are committed
//! and shown to the model in every session, so a false refusal (the user rephrases) is far
//! cheaper than a leaked credential.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Why a text was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("refused to store this in project memory: it looks like {what} ({category}). Memory is saved in the project and shown to the model in every session; keep secrets in a secret manager or environment variable and store only where to find them")]
pub struct SensitiveContent {
    /// A stable category: `private_key`, `api_token`, `password`, `credential_url`, `jwt`,
    /// `payment_card`, `national_id`.
    pub category: String,
    /// What it looks like, in words.
    pub what: String,
}

struct Rule {
    category: &'static str,
    what: &'static str,
    pattern: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        category: "private_key",
        what: "a private key",
        pattern: r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----|PuTTY-User-Key-File-",
    },
    Rule {
        category: "api_token",
        what: "an AWS access key",
        pattern: r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",
    },
    Rule {
        category: "api_token",
        what: "a GitHub token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    },
    Rule {
        category: "api_token",
        what: "a GitLab token",
        pattern: r"\bglpat-[A-Za-z0-9_\-]{20,}",
    },
    Rule {
        category: "api_token",
        what: "a Slack token",
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    },
    Rule {
        category: "api_token",
        what: "an API secret key",
        pattern: r"\b(?:sk|rk|pk)[-_](?:live|test|proj|ant|ant-api\d\d)?[-_]?[A-Za-z0-9_\-]{20,}",
    },
    Rule {
        category: "api_token",
        what: "a Google API key",
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}\b",
    },
    Rule {
        category: "api_token",
        what: "an npm or PyPI token",
        pattern: r"\b(?:npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_\-]{50,})",
    },
    Rule {
        category: "api_token",
        what: "a bearer token",
        pattern: r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{16,}",
    },
    Rule {
        category: "jwt",
        what: "a JSON Web Token",
        pattern: r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    },
    Rule {
        category: "credential_url",
        what: "a URL with a password in it",
        pattern: r"[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:[^\s@/]+@",
    },
    Rule {
        category: "password",
        what: "a password",
        pattern: r#"(?i)(?:^|[^a-z])(?:password|passwd|passphrase|pwd)\s+(?:is|was)\s*[:=]?\s*["'`]?(?P<v>[^\s"'`]{4,})"#,
    },
    Rule {
        category: "password",
        what: "a password or secret value",
        pattern: r#"(?i)(?:^|[^a-z])(?:password|passwd|pwd|passphrase|secret|client[_\-]?secret|secret[_\-]?key|api[_\-]?key|access[_\-]?key|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|token)["'`]?\s*[:=]\s*["'`]?(?P<v>[^\s"'`,;]{4,})"#,
    },
    Rule {
        category: "national_id",
        what: "a US Social Security number",
        pattern: r"\b\d{3}-\d{2}-\d{4}\b",
    },
    Rule {
        category: "national_id",
        what: "a Korean resident registration number",
        pattern: r"\b\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])-[1-8]\d{6}\b",
    },
    Rule {
        category: "national_id",
        what: "a UK National Insurance number",
        pattern: r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b",
    },
];

fn compiled() -> &'static Vec<(Regex, &'static Rule)> {
    static COMPILED: OnceLock<Vec<(Regex, &'static Rule)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        RULES
            .iter()
            .filter_map(|rule| Regex::new(rule.pattern).ok().map(|r| (r, rule)))
            .collect()
    })
}

/// Refuses `text` when it looks sensitive (see the module docs); `Ok` otherwise.
pub fn check_sensitive(text: &str) -> Result<(), SensitiveContent> {
    for (regex, rule) in compiled() {
        let hit = regex.captures_iter(text).any(|caps| match caps.name("v") {
            Some(value) => is_secret_value(value.as_str()),
            None => true,
        });
        if hit {
            return Err(SensitiveContent {
                category: rule.category.into(),
                what: rule.what.into(),
            });
        }
    }
    if has_card_number(text) {
        return Err(SensitiveContent {
            category: "payment_card".into(),
            what: "a payment card number".into(),
        });
    }
    Ok(())
}

/// True when the value after `password:` / `token=` is a value, not a reference to one
/// (`$API_KEY`, `<your key>`, `%TOKEN%`, `{{secret}}`, `***`) or a small number (`token: 4096`).
fn is_secret_value(value: &str) -> bool {
    let value = value.trim_end_matches(['.', ')', ']']);
    if value.starts_with(['$', '<', '%', '{', '*']) {
        return false;
    }
    !(value.len() < 8 && value.chars().all(|c| c.is_ascii_digit()))
}

/// True when `text` holds 13–19 digits (spaces or dashes between them allowed) that pass the
/// Luhn check, as card numbers do.
fn has_card_number(text: &str) -> bool {
    static CANDIDATE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(candidate) = CANDIDATE.get_or_init(|| Regex::new(r"\b\d(?:[ \-]?\d){12,18}\b").ok())
    else {
        return false;
    };
    candidate.find_iter(text).any(|m| {
        let digits: Vec<u32> = m.as_str().chars().filter_map(|c| c.to_digit(10)).collect();
        luhn(&digits)
    })
}

fn luhn(digits: &[u32]) -> bool {
    if !(13..=19).contains(&digits.len()) || digits.iter().all(|&d| d == digits[0]) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if !i.is_multiple_of(2) {
                let doubled = d * 2;
                if doubled > 9 {
                    doubled - 9
                } else {
                    doubled
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}
