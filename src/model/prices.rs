//! Model prices in US dollars per million tokens: from a models file, else a small
//! table of published list prices; the cost of an outcome is its provider usage at
//! these prices.

use serde::Deserialize;

use crate::record::Usage;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    /// A cache read (input served from the provider's prompt cache).
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// A cache write (input the provider stored in its prompt cache).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Prices {
    /// The cost of `u` in US dollars: cache reads and writes at their own prices when
    /// given (else the input price), the rest of the input and the output at theirs.
    /// `u.input` is the whole input, cached and written tokens included.
    pub fn cost(&self, u: &Usage) -> f64 {
        let cached = u.cached_input.unwrap_or(0).min(u.input);
        let written = u.cache_write.unwrap_or(0).min(u.input - cached);
        self.cost_of(u.input - cached - written, cached, written, u.output)
    }

    /// The cost of `fresh` uncached input, `cached` cache reads, `written` cache writes
    /// and `output` tokens, in US dollars.
    pub fn cost_of(&self, fresh: u64, cached: u64, written: u64, output: u64) -> f64 {
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + written as f64 * self.cache_write.unwrap_or(self.input)
            + output as f64 * self.output)
            / 1e6
    }
}

/// List prices (USD per million tokens) of a few well-known models, as their
/// providers published them in 2025; a models-file entry's `prices` wins. Check them
/// before you publish a cost.
pub const KNOWN_PRICES: [(&str, Prices); 6] = [
    (
        "gpt-4o",
        Prices {
            input: 2.5,
            output: 10.0,
            cached_input: Some(1.25),
            cache_write: None,
        },
    ),
    (
        "gpt-4o-mini",
        Prices {
            input: 0.15,
            output: 0.6,
            cached_input: Some(0.075),
            cache_write: None,
        },
    ),
    (
        "gpt-4.1",
        Prices {
            input: 2.0,
            output: 8.0,
            cached_input: Some(0.5),
            cache_write: None,
        },
    ),
    (
        "gpt-4.1-mini",
        Prices {
            input: 0.4,
            output: 1.6,
            cached_input: Some(0.1),
            cache_write: None,
        },
    ),
    (
        "claude-3-5-sonnet",
        Prices {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: None,
        },
    ),
    (
        "claude-3-5-haiku",
        Prices {
            input: 0.8,
            output: 4.0,
            cached_input: Some(0.08),
            cache_write: None,
        },
    ),
];

/// The known list price of a model id: the longest known name the id starts with.
pub fn known_prices(model: &str) -> Option<Prices> {
    KNOWN_PRICES
        .iter()
        .filter(|(n, _)| model.starts_with(n))
        .max_by_key(|(n, _)| n.len())
        .map(|(_, p)| *p)
}
