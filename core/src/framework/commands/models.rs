//! The models the `model` command lists for each provider robota ships, with their context
//! windows (asked of the provider, which knows its models' limits). A model missing here is still
//! accepted: providers add models faster than any table.

use serde::{Deserialize, Serialize};

/// One model the `model` command offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownModel {
    /// The model id the provider's API takes.
    pub id: String,
    /// Its context window in tokens.
    pub context_window: u64,
}

/// Model ids by provider name, newest first.
const MODELS: &[(&str, &[&str])] = &[
    (
        "anthropic",
        &[
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-opus-4-1",
            "claude-sonnet-4-20250514",
        ],
    ),
    (
        "openai",
        &[
            "gpt-5",
            "gpt-5-mini",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-4o",
            "gpt-4o-mini",
            "o3",
            "o4-mini",
        ],
    ),
];

/// The known models of `provider` with the context window `window_of` gives each (models it
/// gives none for are left out).
pub fn known_models(provider: &str, window_of: impl Fn(&str) -> Option<u64>) -> Vec<KnownModel> {
    MODELS
        .iter()
        .filter(|(name, _)| *name == provider)
        .flat_map(|(_, ids)| ids.iter())
        .filter_map(|id| {
            window_of(id).map(|context_window| KnownModel {
                id: (*id).to_string(),
                context_window,
            })
        })
        .collect()
}

/// The model aliases agent definitions and skills use (`model: sonnet`), as Claude Code has them.
pub const MODEL_ALIASES: &[&str] = &["opus", "sonnet", "haiku"];

/// The model id alias `alias` (`opus`, `sonnet`, `haiku`) stands for on `provider`: the newest
/// of the provider's known models of that family; `None` when `alias` is no alias or the provider
/// has no such family (an OpenAI session has no `haiku`).
pub fn resolve_model_alias(provider: &str, alias: &str) -> Option<&'static str> {
    let alias = alias.trim().to_ascii_lowercase();
    if !MODEL_ALIASES.contains(&alias.as_str()) {
        return None;
    }
    let family = format!("-{alias}-");
    MODELS
        .iter()
        .filter(|(name, _)| *name == provider)
        .flat_map(|(_, ids)| ids.iter())
        .find(|id| id.contains(&family))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_map_to_the_newest_model_of_the_family() {
        assert_eq!(
            resolve_model_alias("anthropic", "haiku"),
            Some("claude-haiku-4-5")
        );
        assert_eq!(
            resolve_model_alias("anthropic", "Sonnet"),
            Some("claude-sonnet-4-6")
        );
        assert_eq!(
            resolve_model_alias("anthropic", "opus"),
            Some("claude-opus-4-6")
        );
        assert_eq!(resolve_model_alias("openai", "haiku"), None);
        assert_eq!(resolve_model_alias("anthropic", "claude-haiku-4-5"), None);
    }
}
