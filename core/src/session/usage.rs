//! Token usage and what it cost: a [`PriceTable`] of USD prices per model (built in for the
//! Anthropic and OpenAI models, extendable by hosts), per-call and per-turn costs, cumulative
//! [`UsageTotals`] that a session record stores, and a [`Budget`] that tells the session when to
//! stop.
//!
//! Prices are data, not guesses: a model the table does not know costs "unknown", never the price
//! of some other model of the same family, because a wrong number on a bill is worse than none.
//! Models are matched by exact id, then by id plus a snapshot suffix (`-20250929`, `-2024-08-06`,
//! `-latest`, Bedrock's `-v1:0`, Vertex's `@20250929`), after routing prefixes such as
//! `anthropic/` (OpenRouter) or `us.anthropic.` (Bedrock) are removed.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::message::Usage;

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

    fn validate(&self, model: &str) -> Result<(), PriceError> {
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

/// When the built-in prices were last checked against their sources.
pub const BUILTIN_PRICES_CHECKED: &str = "2026-11";

/// Where the built-in Anthropic prices come from ("Model pricing" table and each model's
/// overview page; the 5-minute cache-write rate is used for `cache_write`).
pub const ANTHROPIC_PRICING_SOURCE: &str =
    "https://platform.claude.com/docs/en/about-claude/pricing";

/// Where the built-in OpenAI prices come from (standard tier; "cached input" is `cache_read`).
pub const OPENAI_PRICING_SOURCE: &str = "https://developers.openai.com/api/docs/pricing";

/// The built-in prices: `(model id, price)`, USD per million tokens.
///
/// Anthropic rows follow [`ANTHROPIC_PRICING_SOURCE`]. Sonnet 4 and 4.5 charge more for prompts
/// over 200K tokens (the 1M-context beta). Sonnet 5.5's cache read is the $0.10 rate that applies
/// from 2026-10-07; Haiku 5.5 is priced by prompt length (over 100K tokens: the higher rates).
/// Models whose rates could not be confirmed (Mythos, limited availability) are left out: hosts
/// add them with [`PriceTable::with_price`].
///
/// OpenAI rows follow [`OPENAI_PRICING_SOURCE`] (standard tier). The GPT-5.6 and GPT-6 families
/// are not included: at the time of checking their rates were announced for a limited preview
/// and changed several times; add them with [`PriceTable::with_price`] once they are settled.
pub const BUILTIN_PRICES: &[(&str, Price)] = &[
    // --- Anthropic: Claude 5.x.
    ("claude-fable-5-1", Price::new(10.0, 50.0, 0.25, 12.5)),
    ("claude-fable-5", Price::new(10.0, 50.0, 1.0, 12.5)),
    ("claude-opus-5-5", Price::new(4.0, 20.0, 0.20, 5.0)),
    ("claude-opus-5", Price::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-sonnet-5-5", Price::new(2.0, 10.0, 0.10, 2.5)),
    ("claude-sonnet-5", Price::new(2.0, 10.0, 0.20, 2.5)),
    (
        "claude-haiku-5-5",
        Price::new(0.10, 0.50, 0.01, 0.125).with_long_prompt(100_000, 0.50, 2.50, 0.05, 0.625),
    ),
    // --- Anthropic: Claude 4.x.
    ("claude-opus-4-8", Price::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-7", Price::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-6", Price::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-5", Price::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-1", Price::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4-0", Price::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4", Price::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-sonnet-4-6", Price::new(3.0, 15.0, 0.30, 3.75)),
    (
        "claude-sonnet-4-5",
        Price::new(3.0, 15.0, 0.30, 3.75).with_long_prompt(200_000, 6.0, 22.5, 0.60, 7.5),
    ),
    (
        "claude-sonnet-4-0",
        Price::new(3.0, 15.0, 0.30, 3.75).with_long_prompt(200_000, 6.0, 22.5, 0.60, 7.5),
    ),
    (
        "claude-sonnet-4",
        Price::new(3.0, 15.0, 0.30, 3.75).with_long_prompt(200_000, 6.0, 22.5, 0.60, 7.5),
    ),
    ("claude-haiku-4-5", Price::new(1.0, 5.0, 0.10, 1.25)),
    // --- Anthropic: Claude 3.x (legacy ids, still seen in old settings).
    ("claude-3-7-sonnet", Price::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-5-sonnet", Price::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-5-haiku", Price::new(0.80, 4.0, 0.08, 1.0)),
    ("claude-3-opus", Price::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-3-haiku", Price::new(0.25, 1.25, 0.03, 0.30)),
    // --- OpenAI.
    ("gpt-5.5", Price::without_write_surcharge(5.0, 30.0, 0.50)),
    ("gpt-5.4", Price::without_write_surcharge(2.50, 15.0, 0.25)),
    (
        "gpt-5.4-mini",
        Price::without_write_surcharge(0.75, 4.50, 0.075),
    ),
    (
        "gpt-5.4-nano",
        Price::without_write_surcharge(0.20, 1.25, 0.02),
    ),
    ("gpt-5.1", Price::without_write_surcharge(1.25, 10.0, 0.125)),
    ("gpt-5", Price::without_write_surcharge(1.25, 10.0, 0.125)),
    (
        "gpt-5-mini",
        Price::without_write_surcharge(0.25, 2.0, 0.025),
    ),
    (
        "gpt-5-nano",
        Price::without_write_surcharge(0.05, 0.40, 0.005),
    ),
    ("gpt-4.1", Price::without_write_surcharge(2.0, 8.0, 0.50)),
    (
        "gpt-4.1-mini",
        Price::without_write_surcharge(0.40, 1.60, 0.10),
    ),
    (
        "gpt-4.1-nano",
        Price::without_write_surcharge(0.10, 0.40, 0.025),
    ),
    ("gpt-4o", Price::without_write_surcharge(2.50, 10.0, 1.25)),
    (
        "gpt-4o-mini",
        Price::without_write_surcharge(0.15, 0.60, 0.075),
    ),
    ("o3", Price::without_write_surcharge(2.0, 8.0, 0.50)),
    ("o4-mini", Price::without_write_surcharge(1.10, 4.40, 0.275)),
    ("o3-mini", Price::without_write_surcharge(1.10, 4.40, 0.55)),
];

/// How a model id was matched to a price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceMatch {
    /// The normalized id is in the table.
    Exact,
    /// A table id plus a snapshot suffix (date, `-latest`, `-vN:M`, `@date`).
    Snapshot,
}

/// Prices per model. Starts from [`BUILTIN_PRICES`] ([`PriceTable::builtin`]) or empty; hosts add
/// or override models with [`PriceTable::with_price`].
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    prices: HashMap<String, Price>,
}

impl Default for PriceTable {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PriceTable {
    /// The built-in prices ([`BUILTIN_PRICES`]).
    pub fn builtin() -> Self {
        PriceTable {
            prices: BUILTIN_PRICES
                .iter()
                .map(|(model, price)| ((*model).to_string(), *price))
                .collect(),
        }
    }

    /// A table with no prices (every model is unknown until added).
    pub fn empty() -> Self {
        PriceTable {
            prices: HashMap::new(),
        }
    }

    /// Adds or replaces the price of `model` (matched case-insensitively, and with snapshot
    /// suffixes, like the built-in ids).
    pub fn with_price(mut self, model: &str, price: Price) -> Result<Self, PriceError> {
        self.set_price(model, price)?;
        Ok(self)
    }

    /// Adds or replaces the price of `model` in place.
    pub fn set_price(&mut self, model: &str, price: Price) -> Result<(), PriceError> {
        price.validate(model)?;
        self.prices.insert(normalize_model_id(model), price);
        Ok(())
    }

    /// Number of models with a price.
    pub fn len(&self) -> usize {
        self.prices.len()
    }

    /// True when the table has no prices.
    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }

    /// The price of `model` and how it was matched.
    pub fn lookup(&self, model: &str) -> Option<(Price, PriceMatch)> {
        let id = normalize_model_id(model);
        if let Some(price) = self.prices.get(&id) {
            return Some((*price, PriceMatch::Exact));
        }
        // Longest table id that `id` extends with a snapshot suffix only. Longest first, so
        // `gpt-4o-mini-2024-07-18` is never priced as `gpt-4o`.
        self.prices
            .iter()
            .filter(|(key, _)| {
                id.strip_prefix(key.as_str())
                    .is_some_and(is_snapshot_suffix)
            })
            .max_by_key(|(key, _)| key.len())
            .map(|(_, price)| (*price, PriceMatch::Snapshot))
    }

    /// The price of `model`, if known.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.lookup(model).map(|(price, _)| price)
    }

    /// What `usage` (one model call, ideally) of `model` cost.
    pub fn cost(&self, model: &str, usage: &Usage) -> CallCost {
        match self.price(model) {
            Some(price) => CallCost {
                usd: Some(price.cost_usd(usage)),
                status: CostStatus::Known,
            },
            None => CallCost {
                usd: None,
                status: CostStatus::UnknownModel,
            },
        }
    }
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
fn is_snapshot_suffix(rest: &str) -> bool {
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

/// Whether a cost figure covers every token it sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostStatus {
    /// Every call was priced (also the state before any call).
    #[default]
    Known,
    /// No call was priced: the models are not in the price table.
    UnknownModel,
    /// Some calls were priced and some were not: the cost is a lower bound.
    Partial,
}

impl CostStatus {
    /// Stable snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CostStatus::Known => "known",
            CostStatus::UnknownModel => "unknown_model",
            CostStatus::Partial => "partial",
        }
    }
}

/// What one call (or any usage priced as one) cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    /// USD, when the model has a price.
    pub usd: Option<f64>,
    /// `known` or `unknown_model`.
    pub status: CostStatus,
}

/// Tokens and cost summed over calls: one turn's, or a whole session's. The default is
/// [`UsageTotals::new`]: nothing counted, $0, known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Tokens of every kind, summed.
    #[serde(default)]
    pub usage: Usage,
    /// Model calls counted.
    #[serde(default)]
    pub calls: u64,
    /// Of those, the calls that had a price.
    #[serde(default)]
    pub priced_calls: u64,
    /// Turns counted (set by [`UsageTotals::add_turn`]).
    #[serde(default)]
    pub turns: u64,
    /// USD for the priced calls; `None` when calls were made and none could be priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Whether `cost_usd` covers every call.
    #[serde(default)]
    pub cost_status: CostStatus,
    /// Tokens of the calls that could not be priced.
    #[serde(default, skip_serializing_if = "is_zero_usage")]
    pub unpriced_usage: Usage,
    /// Models that had no price, in first-seen order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced_models: Vec<String>,
}

fn is_zero_usage(usage: &Usage) -> bool {
    *usage == Usage::default()
}

impl Default for UsageTotals {
    fn default() -> Self {
        UsageTotals {
            usage: Usage::default(),
            calls: 0,
            priced_calls: 0,
            turns: 0,
            cost_usd: Some(0.0),
            cost_status: CostStatus::Known,
            unpriced_usage: Usage::default(),
            unpriced_models: Vec::new(),
        }
    }
}

impl UsageTotals {
    /// Nothing counted yet (cost $0, known).
    pub fn new() -> Self {
        Self::default()
    }

    /// Prices one model call of `model` with `table` and adds it.
    pub fn record_call(&mut self, table: &PriceTable, model: &str, usage: &Usage) -> CallCost {
        let cost = table.cost(model, usage);
        self.add_call(model, usage, &cost);
        cost
    }

    /// Adds one already priced call.
    pub fn add_call(&mut self, model: &str, usage: &Usage, cost: &CallCost) {
        self.usage.add(usage);
        self.calls += 1;
        match cost.usd {
            Some(usd) => {
                self.priced_calls += 1;
                self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + usd);
            }
            None => {
                self.unpriced_usage.add(usage);
                if !self.unpriced_models.iter().any(|m| m == model) {
                    self.unpriced_models.push(model.to_string());
                }
            }
        }
        self.refresh_status();
    }

    /// Adds one finished turn's totals (counts one more turn).
    pub fn add_turn(&mut self, turn: &UsageTotals) {
        self.merge(turn);
        self.turns += 1;
    }

    /// Adds other totals (their turn count included).
    pub fn merge(&mut self, other: &UsageTotals) {
        self.usage.add(&other.usage);
        self.calls += other.calls;
        self.priced_calls += other.priced_calls;
        self.turns += other.turns;
        self.unpriced_usage.add(&other.unpriced_usage);
        for model in &other.unpriced_models {
            if !self.unpriced_models.iter().any(|m| m == model) {
                self.unpriced_models.push(model.clone());
            }
        }
        self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + other.cost_usd.unwrap_or(0.0));
        self.refresh_status();
    }

    /// Derives the status from the call counts: all priced is known, none priced (of some) is
    /// unknown (and the cost `None`), a mix is partial (the cost a lower bound).
    fn refresh_status(&mut self) {
        let unpriced_calls = self.calls.saturating_sub(self.priced_calls);
        self.cost_status = if unpriced_calls == 0 {
            CostStatus::Known
        } else if self.priced_calls == 0 {
            CostStatus::UnknownModel
        } else {
            CostStatus::Partial
        };
        self.cost_usd = match self.cost_status {
            CostStatus::UnknownModel => None,
            _ => Some(self.cost_usd.unwrap_or(0.0)),
        };
    }
}

/// A spending limit for a session (`max_budget_usd`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// The most the session may spend, in USD.
    pub max_usd: f64,
}

impl Budget {
    /// A budget of `max_usd` dollars (finite, not negative).
    pub fn new(max_usd: f64) -> Result<Self, PriceError> {
        if !max_usd.is_finite() || max_usd < 0.0 {
            return Err(PriceError {
                what: "budget".into(),
                value: max_usd,
            });
        }
        Ok(Budget { max_usd })
    }

    /// Where `spent` stands against the budget. Check it after every model call or turn.
    pub fn check(&self, spent: &UsageTotals) -> BudgetStatus {
        match (spent.cost_usd, spent.cost_status) {
            (_, CostStatus::UnknownModel) | (None, _) => BudgetStatus::Unpriced {
                max_usd: self.max_usd,
                models: spent.unpriced_models.clone(),
            },
            (Some(spent_usd), status) => {
                if spent_usd >= self.max_usd {
                    BudgetStatus::Reached {
                        max_usd: self.max_usd,
                        spent_usd,
                        lower_bound: status == CostStatus::Partial,
                    }
                } else {
                    BudgetStatus::Within {
                        max_usd: self.max_usd,
                        spent_usd,
                        remaining_usd: self.max_usd - spent_usd,
                    }
                }
            }
        }
    }
}

/// The outcome of [`Budget::check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BudgetStatus {
    /// Spending is under the budget.
    Within {
        /// The budget.
        max_usd: f64,
        /// Spent so far (a lower bound when some calls had no price).
        spent_usd: f64,
        /// What is left.
        remaining_usd: f64,
    },
    /// The budget is used up: the session must stop.
    Reached {
        /// The budget.
        max_usd: f64,
        /// Spent so far.
        spent_usd: f64,
        /// True when some calls had no price, so the real spending is higher.
        lower_bound: bool,
    },
    /// Nothing could be priced, so the budget cannot be enforced. The session should tell the
    /// user once (and may carry on or stop, as the host decides).
    Unpriced {
        /// The budget.
        max_usd: f64,
        /// The models without a price.
        models: Vec<String>,
    },
}

impl BudgetStatus {
    /// True when the session must stop.
    pub fn is_reached(&self) -> bool {
        matches!(self, BudgetStatus::Reached { .. })
    }

    /// The reason to show the user when the budget stops the session, e.g.
    /// `budget of $5.00 reached: spent $5.03`.
    pub fn stop_reason(&self) -> Option<String> {
        match self {
            BudgetStatus::Reached {
                max_usd,
                spent_usd,
                lower_bound,
            } => Some(format!(
                "budget of {} reached: spent {}{}",
                format_usd(*max_usd),
                if *lower_bound { "at least " } else { "" },
                format_usd(*spent_usd)
            )),
            _ => None,
        }
    }

    /// A warning for a budget that cannot be enforced, naming the models without a price.
    pub fn warning(&self) -> Option<String> {
        match self {
            BudgetStatus::Unpriced { max_usd, models } => Some(format!(
                "budget of {} cannot be enforced: no price is known for {}; add one with PriceTable::with_price",
                format_usd(*max_usd),
                if models.is_empty() {
                    "the model".to_string()
                } else {
                    models.join(", ")
                }
            )),
            _ => None,
        }
    }
}

impl fmt::Display for BudgetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetStatus::Within {
                max_usd, spent_usd, ..
            } => write!(
                f,
                "spent {} of a {} budget",
                format_usd(*spent_usd),
                format_usd(*max_usd)
            ),
            BudgetStatus::Reached { .. } => f.write_str(&self.stop_reason().unwrap_or_default()),
            BudgetStatus::Unpriced { .. } => f.write_str(&self.warning().unwrap_or_default()),
        }
    }
}

/// Formats dollars for people: cents from $1 up (`$5.03`), four decimals below (`$0.0042`), so a
/// small spend does not read as `$0.00`.
pub fn format_usd(usd: f64) -> String {
    if usd.abs() >= 1.0 || usd == 0.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: write,
        }
    }

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
        for (model, price) in BUILTIN_PRICES {
            assert!(price.validate(model).is_ok(), "{model}");
            assert_eq!(normalize_model_id(model), *model);
        }
    }

    #[test]
    fn merge_keeps_status_right() {
        let table = PriceTable::builtin();
        let mut total = UsageTotals::new();
        total.record_call(&table, "claude-sonnet-4-6", &usage(1_000_000, 0, 0, 0));
        assert_eq!(total.cost_status, CostStatus::Known);
        let mut other = UsageTotals::new();
        other.record_call(&table, "mystery", &usage(10, 10, 0, 0));
        assert_eq!(other.cost_status, CostStatus::UnknownModel);
        assert_eq!(other.cost_usd, None);
        total.merge(&other);
        assert_eq!(total.cost_status, CostStatus::Partial);
        assert_eq!(total.cost_usd, Some(3.0));
    }
}
