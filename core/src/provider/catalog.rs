//! The model catalog: one table of the models robota knows, per provider — context window, maximum
//! output, prices (input, output, cache read and write) and thinking support, each row naming its
//! sources — read by cost tracking (`PriceTable::builtin`), the
//! providers' limits and context tracking, the `/model` command and [`model_info`] (the
//! `get_model_info` of every binding).
//!
//! The table is data (`catalog.json`, compiled in). A figure no source confirmed is left out and
//! robota's default is used for it, which [`ModelInfo::defaults`] says; a model the table does not
//! know gets the defaults and [`unknown_model_warning`] explains what that means. Prices are never
//! guessed from a model's family: a wrong number on a bill is worse than none.
//!
//! Models are matched by exact id, then by id plus a snapshot suffix (`-20250929`, `-2024-08-06`,
//! `-latest`, Bedrock's `-v1:0`, Vertex's `@20250929`), after routing prefixes such as
//! `anthropic/` (OpenRouter), `models/` (Gemini) or `us.anthropic.` (Bedrock) are removed.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::message::Usage;

use super::DEFAULT_CONTEXT_WINDOW;

/// A model's price in USD per million tokens.
///
/// `cache_write` is the price of writing the prompt cache (Anthropic's 5-minute cache write; for
/// providers without a write surcharge, such as OpenAI, it equals `input`). `cache_read` is the
/// price of input served from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Input tokens not served from a cache.
    pub input_per_mtok: f64,
    /// Output tokens (thinking included).
    pub output_per_mtok: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read_per_mtok: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write_per_mtok: f64,
    /// Different rates for calls whose prompt is longer than a threshold (some models charge
    /// more, for every token of such a call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_prompt: Option<LongPromptPrice>,
}

/// The rates a model charges for a call whose prompt (input + cache read + cache write tokens) is
/// longer than `above_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LongPromptPrice {
    /// Prompts longer than this many tokens use these rates.
    pub above_tokens: u64,
    /// Input tokens not served from a cache.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read_per_mtok: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write_per_mtok: f64,
}

/// A price that cannot be used (negative or not a finite number).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid price for {what}: {value} (prices are USD per million tokens: finite and not negative)")]
pub struct PriceError {
    /// Which figure is wrong (`"claude-x input"`, `"budget"`, …).
    pub what: String,
    /// The rejected value.
    pub value: f64,
}

impl Price {
    /// A price with the four rates, in USD per million tokens.
    pub const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Price {
            input_per_mtok: input,
            output_per_mtok: output,
            cache_read_per_mtok: cache_read,
            cache_write_per_mtok: cache_write,
            long_prompt: None,
        }
    }

    /// A price for a provider that charges cached input at `cache_read` and has no cache-write
    /// surcharge (writes cost `input`), as OpenAI does.
    pub const fn without_write_surcharge(input: f64, output: f64, cache_read: f64) -> Self {
        Self::new(input, output, cache_read, input)
    }

    /// Adds rates for calls whose prompt is longer than `above_tokens`.
    pub const fn with_long_prompt(
        mut self,
        above_tokens: u64,
        input: f64,
        output: f64,
        cache_read: f64,
        cache_write: f64,
    ) -> Self {
        self.long_prompt = Some(LongPromptPrice {
            above_tokens,
            input_per_mtok: input,
            output_per_mtok: output,
            cache_read_per_mtok: cache_read,
            cache_write_per_mtok: cache_write,
        });
        self
    }

    /// What `usage` costs in USD at this price.
    ///
    /// The long-prompt rates apply when `usage` is one model call whose prompt is over the
    /// threshold; pass one call at a time for models that have them (a turn's summed usage would
    /// look like one long prompt).
    pub fn cost_usd(&self, usage: &Usage) -> f64 {
        let prompt =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        let (input, output, read, write) = match self.long_prompt {
            Some(tier) if prompt > tier.above_tokens => (
                tier.input_per_mtok,
                tier.output_per_mtok,
                tier.cache_read_per_mtok,
                tier.cache_write_per_mtok,
            ),
            _ => (
                self.input_per_mtok,
                self.output_per_mtok,
                self.cache_read_per_mtok,
                self.cache_write_per_mtok,
            ),
        };
        (usage.input_tokens as f64 * input
            + usage.output_tokens as f64 * output
            + usage.cache_read_input_tokens as f64 * read
            + usage.cache_creation_input_tokens as f64 * write)
            / 1_000_000.0
    }

    pub(crate) fn validate(&self, model: &str) -> Result<(), PriceError> {
        let mut figures = vec![
            ("input", self.input_per_mtok),
            ("output", self.output_per_mtok),
            ("cache read", self.cache_read_per_mtok),
            ("cache write", self.cache_write_per_mtok),
        ];
        if let Some(tier) = &self.long_prompt {
            figures.extend([
                ("long-prompt input", tier.input_per_mtok),
                ("long-prompt output", tier.output_per_mtok),
                ("long-prompt cache read", tier.cache_read_per_mtok),
                ("long-prompt cache write", tier.cache_write_per_mtok),
            ]);
        }
        for (name, value) in figures {
            if !value.is_finite() || value < 0.0 {
                return Err(PriceError {
                    what: format!("{model} {name}"),
                    value,
                });
            }
        }
        Ok(())
    }
}

/// How a model id was matched to a price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceMatch {
    /// The normalized id is in the table.
    Exact,
    /// A table id plus a snapshot suffix (date, `-latest`, `-vN:M`, `@date`).
    Snapshot,
}

/// Lower-cases a model id and removes routing prefixes, so that `anthropic/claude-sonnet-4-5`,
/// `us.anthropic.claude-sonnet-4-5-20250929-v1:0` and `claude-sonnet-4-5[1m]` find
/// `claude-sonnet-4-5`.
pub fn normalize_model_id(model: &str) -> String {
    let mut id = model.trim().to_ascii_lowercase();
    if let Some(slash) = id.rfind('/') {
        id = id[slash + 1..].to_string();
    }
    // Bedrock ids: `anthropic.claude-…`, optionally behind a region prefix (`us.`, `eu.`, …).
    if let Some(at) = id.find("anthropic.") {
        id = id[at + "anthropic.".len()..].to_string();
    }
    // Claude Code's context-size marker.
    if let Some(stripped) = id.strip_suffix("[1m]") {
        id = stripped.to_string();
    }
    id
}

/// True when `rest` (what follows a table id) only names a snapshot of that model: `-YYYYMMDD`,
/// `-YYYY-MM-DD`, `-latest`, optionally followed by a Bedrock version `-vN` / `-vN:M`, or
/// Vertex's `@YYYYMMDD`. `-6` (a different model version) is not a snapshot.
pub(crate) fn is_snapshot_suffix(rest: &str) -> bool {
    if let Some(date) = rest.strip_prefix('@') {
        return date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit());
    }
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    let digits =
        |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_digit());
    let version = |part: &str| {
        part.strip_prefix('v').is_some_and(|v| {
            !v.is_empty()
                && v.split(':')
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let tail = match parts.as_slice() {
        [first, tail @ ..] if digits(first, 8) || *first == "latest" => tail,
        [year, month, day, tail @ ..] if digits(year, 4) && digits(month, 2) && digits(day, 2) => {
            tail
        }
        _ => return false,
    };
    tail.len() <= 1 && tail.iter().all(|part| version(part))
}

/// The catalog's data file, compiled in.
const CATALOG_JSON: &str = include_str!("catalog.json");

/// One model of the catalog, as the data file gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The provider type that serves it (`anthropic`, `openai`, `gemini`, `deepseek`, …).
    pub provider: String,
    /// The model id (without snapshot suffix).
    pub id: String,
    /// Context window in tokens, when a source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Most output tokens per call, when a source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u32>,
    /// Whether the model can think (extended thinking, reasoning).
    #[serde(default)]
    pub thinking: bool,
    /// Its price, when a source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
    /// The sources of the figures: keys of the catalog's `sources` (URLs).
    #[serde(default)]
    pub sources: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct CatalogFile {
    checked: String,
    sources: std::collections::BTreeMap<String, String>,
    models: Vec<CatalogEntry>,
}

fn catalog() -> &'static CatalogFile {
    static CATALOG: OnceLock<CatalogFile> = OnceLock::new();
    // The file is compiled in and a unit test parses it, so the empty fallback is never expected;
    // it keeps a broken build from panicking in a host (every model is then "unknown").
    CATALOG.get_or_init(|| serde_json::from_str(CATALOG_JSON).unwrap_or_default())
}

/// Every model in the catalog, in the data file's order.
pub fn entries() -> &'static [CatalogEntry] {
    &catalog().models
}

/// When the catalog's figures were last checked against their sources (`YYYY-MM`).
pub fn checked() -> &'static str {
    &catalog().checked
}

/// The URL of a source key used in [`CatalogEntry::sources`].
pub fn source_url(key: &str) -> Option<&'static str> {
    catalog().sources.get(key).map(String::as_str)
}

/// The catalog entry for `model` and how it matched (see the module docs for the rules).
pub fn lookup(model: &str) -> Option<(&'static CatalogEntry, PriceMatch)> {
    let id = normalize_model_id(model);
    let models = entries();
    if let Some(entry) = models.iter().find(|entry| entry.id == id) {
        return Some((entry, PriceMatch::Exact));
    }
    // Longest id that `id` extends with a snapshot suffix only, so `gpt-4o-mini-2024-07-18` is
    // never taken for `gpt-4o`.
    models
        .iter()
        .filter(|entry| {
            id.strip_prefix(entry.id.as_str())
                .is_some_and(is_snapshot_suffix)
        })
        .max_by_key(|entry| entry.id.len())
        .map(|entry| (entry, PriceMatch::Snapshot))
}

/// What robota knows about a model: the catalog's figures, with robota's defaults where the
/// catalog has none (named in `defaults`). Serialized as the JSON every binding returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id as asked.
    pub model: String,
    /// Whether the catalog knows the model.
    pub known: bool,
    /// The catalog id it matched (`claude-sonnet-4-5` for `claude-sonnet-4-5-20250929`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_id: Option<String>,
    /// The provider type that serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Context window in tokens (the catalog's, else [`DEFAULT_CONTEXT_WINDOW`]); context tracking
    /// and automatic compaction use it.
    pub context_window: u64,
    /// Most output tokens per call, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u32>,
    /// Whether the model can think (false when unknown).
    pub thinking: bool,
    /// USD per million tokens, when known; cost tracking reports "unknown" without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
    /// The figures robota filled in with its defaults or could not give: any of
    /// `context_window`, `max_output`, `price`.
    pub defaults: Vec<String>,
    /// The URLs the figures come from.
    pub sources: Vec<String>,
    /// When the catalog was last checked against its sources (`YYYY-MM`).
    pub checked: String,
}

/// What robota knows about `model` (never fails: an unknown model gets the defaults, `known:
/// false`).
pub fn model_info(model: &str) -> ModelInfo {
    let found = lookup(model).map(|(entry, _)| entry);
    let mut defaults = Vec::new();
    let context_window = match found.and_then(|entry| entry.context_window) {
        Some(window) => window,
        None => {
            defaults.push("context_window".to_owned());
            DEFAULT_CONTEXT_WINDOW
        }
    };
    let max_output = found.and_then(|entry| entry.max_output);
    if max_output.is_none() {
        defaults.push("max_output".to_owned());
    }
    let price = found.and_then(|entry| entry.price);
    if price.is_none() {
        defaults.push("price".to_owned());
    }
    ModelInfo {
        model: model.to_owned(),
        known: found.is_some(),
        catalog_id: found.map(|entry| entry.id.clone()),
        provider: found.map(|entry| entry.provider.clone()),
        context_window,
        max_output,
        thinking: found.is_some_and(|entry| entry.thinking),
        price,
        defaults,
        sources: found
            .map(|entry| {
                entry
                    .sources
                    .iter()
                    .map(|key| source_url(key).unwrap_or(key).to_owned())
                    .collect()
            })
            .unwrap_or_default(),
        checked: checked().to_owned(),
    }
}

/// The context window of `model`: the catalog's, else [`DEFAULT_CONTEXT_WINDOW`].
pub fn context_window(model: &str) -> u64 {
    lookup(model)
        .and_then(|(entry, _)| entry.context_window)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

/// The most output tokens `model` may write per call, when the catalog knows it.
pub fn max_output(model: &str) -> Option<u32> {
    lookup(model).and_then(|(entry, _)| entry.max_output)
}

/// Whether a provider of this name is one the catalog covers: a provider type with a network
/// API in [`DEFINITIONS`](super::definitions::DEFINITIONS). A session on one warns about a model
/// the catalog does not know; scripted, replay and host providers are not catalogued.
pub fn is_catalog_provider(name: &str) -> bool {
    super::definitions::definition(name)
        .is_some_and(|d| d.wire != super::definitions::WireFormat::Offline)
}

/// A warning for the user when the catalog does not know `model`: which defaults robota uses
/// instead and how to give the real figures. `None` for a known model.
pub fn unknown_model_warning(model: &str) -> Option<String> {
    if lookup(model).is_some() {
        return None;
    }
    Some(format!(
        "model \"{model}\" is not in robota's model catalog: assuming a {DEFAULT_CONTEXT_WINDOW}-token \
         context window, and its cost is reported as unknown (check the model id for a typo; a \
         host can give prices with PriceTable::with_price)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_suffixes() {
        for ok in [
            "-20250929",
            "-2024-08-06",
            "-latest",
            "-20250929-v1:0",
            "@20250929",
        ] {
            assert!(is_snapshot_suffix(ok), "{ok}");
        }
        for bad in ["-6", "-mini", "", "-2024", "-latest-mini", "@2025", "-v2:0"] {
            assert!(!is_snapshot_suffix(bad), "{bad}");
        }
    }

    #[test]
    fn every_builtin_price_is_valid_and_ids_are_normalized() {
        assert!(entries().len() > 40, "the catalog parsed");
        for entry in entries() {
            if let Some(price) = entry.price {
                assert!(price.validate(&entry.id).is_ok(), "{}", entry.id);
            }
            assert_eq!(normalize_model_id(&entry.id), entry.id);
            assert!(!entry.sources.is_empty(), "{} names no source", entry.id);
            for key in &entry.sources {
                assert!(
                    source_url(key).is_some(),
                    "{}: unknown source {key}",
                    entry.id
                );
            }
        }
    }

    #[test]
    fn snapshots_and_routing_prefixes_find_the_catalog_row() {
        for (model, id, window, max_output) in [
            (
                "claude-opus-4-6",
                "claude-opus-4-6",
                1_000_000,
                Some(128_000),
            ),
            (
                "claude-sonnet-4-20250514",
                "claude-sonnet-4",
                200_000,
                Some(64_000),
            ),
            (
                "claude-opus-4-1-20250805",
                "claude-opus-4-1",
                200_000,
                Some(32_000),
            ),
            (
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "claude-sonnet-4-5",
                200_000,
                Some(64_000),
            ),
            (
                "claude-sonnet-4-5@20250929",
                "claude-sonnet-4-5",
                200_000,
                Some(64_000),
            ),
            (
                "models/gemini-2.5-pro",
                "gemini-2.5-pro",
                1_048_576,
                Some(65_536),
            ),
            (
                "gpt-4o-mini-2024-07-18",
                "gpt-4o-mini",
                128_000,
                Some(16_384),
            ),
            ("deepseek-chat", "deepseek-chat", 128_000, Some(8_192)),
        ] {
            let info = model_info(model);
            assert!(info.known, "{model}");
            assert_eq!(info.catalog_id.as_deref(), Some(id), "{model}");
            assert_eq!(info.context_window, window, "{model}");
            assert_eq!(info.max_output, max_output, "{model}");
            assert!(info.defaults.is_empty(), "{model}: {:?}", info.defaults);
            assert!(
                info.sources.iter().all(|s| s.starts_with("https://")),
                "{model}"
            );
        }
    }

    #[test]
    fn unknown_models_get_defaults_and_a_warning() {
        let info = model_info("my-local-model");
        assert!(!info.known);
        assert_eq!(info.context_window, DEFAULT_CONTEXT_WINDOW);
        assert_eq!(info.price, None);
        assert_eq!(info.defaults, ["context_window", "max_output", "price"]);
        let warning = unknown_model_warning("my-local-model").unwrap_or_default();
        assert!(
            warning.contains("not in robota's model catalog"),
            "{warning}"
        );
        assert_eq!(unknown_model_warning("claude-haiku-4-5"), None);
        // A priced row without limits says which figures are defaults.
        let info = model_info("claude-opus-4-8");
        assert!(info.known && info.price.is_some());
        assert_eq!(info.defaults, ["context_window", "max_output"]);
        // A different version is not a snapshot of a known one.
        assert!(!model_info("claude-sonnet-4-7").known);
        assert!(!model_info("gpt-4o-mini-x").known);
    }
}
