//! Token usage and what it cost: a [`PriceTable`] of USD prices per model (built in from the
//! model catalog, [`crate::provider::catalog`]; extendable by hosts), per-call and per-turn costs, cumulative
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
use crate::provider::catalog::{self, is_snapshot_suffix};
pub use crate::provider::catalog::{
    normalize_model_id, LongPromptPrice, Price, PriceError, PriceMatch,
};

/// Prices per model. Starts from the model catalog's prices ([`PriceTable::builtin`]) or empty;
/// hosts add or override models with [`PriceTable::with_price`].
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
    /// The built-in prices: every priced model of the model catalog
    /// ([`crate::provider::catalog`], with its sources).
    pub fn builtin() -> Self {
        PriceTable {
            prices: catalog::entries()
                .iter()
                .filter_map(|entry| entry.price.map(|price| (entry.id.clone(), price)))
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
