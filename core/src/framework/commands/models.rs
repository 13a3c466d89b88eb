//! The models the `model` command lists for each provider: the model catalog's
//! ([`crate::provider::catalog`]) models of that provider, with their context windows (asked of
//! the provider, which knows its models' limits) and prices. A model missing here is still
//! accepted: providers add models faster than any table. Also the model aliases (`opus`,
//! `sonnet`, `haiku`) agent definitions and skills use.

use serde::{Deserialize, Serialize};

use crate::provider::catalog;
use crate::session::usage::Price;

/// One model the `model` command offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnownModel {
    /// The model id the provider's API takes.
    pub id: String,
    /// Its context window in tokens.
    pub context_window: u64,
    /// Most output tokens per call, when the catalog knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u32>,
    /// USD per million tokens, when the catalog knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

/// The models the aliases resolve to, by provider name, newest first: the generally available
/// models an agent definition's `model: opus` should mean (the catalog also lists models in
/// limited availability, which an alias must not pick).
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

/// The catalog's models of `provider`, in the catalog's order, with the context window
/// `window_of` gives each (models it gives none for are left out).
pub fn known_models(provider: &str, window_of: impl Fn(&str) -> Option<u64>) -> Vec<KnownModel> {
    catalog::entries()
        .iter()
        .filter(|entry| entry.provider == provider)
        .filter_map(|entry| {
            window_of(&entry.id).map(|context_window| KnownModel {
                id: entry.id.clone(),
                context_window,
                max_output: entry.max_output,
                price: entry.price,
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
    fn known_models_come_from_the_catalog() {
        let models = known_models("anthropic", |id| Some(catalog::context_window(id)));
        let sonnet = models
            .iter()
            .find(|m| m.id == "claude-sonnet-4-5")
            .expect("listed");
        assert_eq!(sonnet.context_window, 200_000);
        assert_eq!(sonnet.max_output, Some(64_000));
        assert_eq!(sonnet.price.map(|p| p.input_per_mtok), Some(3.0));
        assert!(models.iter().all(|m| m.id.starts_with("claude-")));
        assert!(known_models("gemini", |_| Some(1))
            .iter()
            .any(|m| m.id == "gemini-2.5-pro"));
        assert!(known_models("scripted", |_| Some(1)).is_empty());
    }

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
