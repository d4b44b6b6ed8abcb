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
    /// Prices for a request whose prompt is longer than a length (Gemini's Pro models
    /// bill a prompt over 200,000 tokens at higher rates, its output too).
    #[serde(default)]
    pub above: Option<Tier>,
}

/// The prices of requests whose prompt (the whole input) is longer than `prompt_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    pub prompt_tokens: u64,
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
}

impl Prices {
    /// No prices of any kind: the base the table below fills in.
    pub const NONE: Prices = Prices {
        input: 0.0,
        output: 0.0,
        cached_input: None,
        cache_write: None,
        above: None,
    };

    /// The prices one request of `prompt_tokens` input tokens is billed at: its tier's
    /// where it is longer than the tier's length.
    pub fn at(&self, prompt_tokens: u64) -> Prices {
        match self.above {
            Some(t) if prompt_tokens > t.prompt_tokens => Prices {
                input: t.input,
                output: t.output,
                cached_input: t.cached_input.or(self.cached_input),
                cache_write: self.cache_write,
                above: None,
            },
            _ => *self,
        }
    }

    /// The cost of one request's usage `u` in US dollars: cache reads and writes at
    /// their own prices when given (else the input price), the rest of the input and
    /// the output at theirs, all at the prompt length's tier. `u.input` is the whole
    /// input, cached and written tokens included.
    pub fn cost(&self, u: &Usage) -> f64 {
        let p = self.at(u.input);
        let cached = u.cached_input.unwrap_or(0).min(u.input);
        let written = u.cache_write.unwrap_or(0).min(u.input - cached);
        p.cost_of(u.input - cached - written, cached, written, u.output)
    }

    /// The cost of several requests: each at its own tier where the prices have
    /// tiers, else of their summed usage (the same figure, summed once).
    pub fn cost_all(&self, requests: impl Iterator<Item = Usage>) -> Option<f64> {
        if self.above.is_some() {
            requests.map(|u| self.cost(&u)).reduce(|a, b| a + b)
        } else {
            requests.reduce(Usage::plus).map(|u| self.cost(&u))
        }
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

/// Gemini 3.x Pro's prices, with the tier above 200,000 prompt tokens.
const GEMINI_3_PRO: Prices = Prices {
    input: 2.0,
    output: 12.0,
    cached_input: Some(0.2),
    above: Some(Tier {
        prompt_tokens: 200_000,
        input: 4.0,
        output: 18.0,
        cached_input: Some(0.4),
    }),
    ..Prices::NONE
};

/// List prices (USD per million tokens) of a few well-known models: OpenAI's and
/// Anthropic's as published in 2025, Gemini's as read on 2026-11-28 (standard paid
/// tier; cached input is the context-caching read price; thinking is billed as
/// output; the Pro models' prices above 200,000 prompt tokens as their tier). A
/// models-file entry's `prices` wins. Check them before you publish a cost.
pub const KNOWN_PRICES: [(&str, Prices); 12] = [
    (
        "gpt-4o",
        Prices {
            input: 2.5,
            output: 10.0,
            cached_input: Some(1.25),
            cache_write: None,
            above: None,
        },
    ),
    (
        "gpt-4o-mini",
        Prices {
            input: 0.15,
            output: 0.6,
            cached_input: Some(0.075),
            cache_write: None,
            above: None,
        },
    ),
    (
        "gpt-4.1",
        Prices {
            input: 2.0,
            output: 8.0,
            cached_input: Some(0.5),
            cache_write: None,
            above: None,
        },
    ),
    (
        "gpt-4.1-mini",
        Prices {
            input: 0.4,
            output: 1.6,
            cached_input: Some(0.1),
            cache_write: None,
            above: None,
        },
    ),
    (
        "claude-3-5-sonnet",
        Prices {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: None,
            above: None,
        },
    ),
    (
        "claude-3-5-haiku",
        Prices {
            input: 0.8,
            output: 4.0,
            cached_input: Some(0.08),
            cache_write: None,
            above: None,
        },
    ),
    (
        "gemini-2.5-pro",
        Prices {
            input: 1.25,
            output: 10.0,
            cached_input: Some(0.125),
            above: Some(Tier {
                prompt_tokens: 200_000,
                input: 2.5,
                output: 15.0,
                cached_input: Some(0.25),
            }),
            ..Prices::NONE
        },
    ),
    (
        "gemini-2.5-flash",
        Prices {
            input: 0.3,
            output: 2.5,
            cached_input: Some(0.03),
            ..Prices::NONE
        },
    ),
    // No cached-input price could be confirmed: cache reads are priced as input.
    (
        "gemini-2.5-flash-lite",
        Prices {
            input: 0.1,
            output: 0.4,
            ..Prices::NONE
        },
    ),
    ("gemini-3.1-pro-preview", GEMINI_3_PRO),
    // The id now names 3.1 Pro (3 Pro Preview was retired on 2026-03-09).
    ("gemini-3-pro-preview", GEMINI_3_PRO),
    // No cached-input price could be confirmed: cache reads are priced as input.
    (
        "gemini-3-flash-preview",
        Prices {
            input: 0.5,
            output: 3.0,
            ..Prices::NONE
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

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            input,
            output,
            cached_input: Some(cached),
            ..Usage::default()
        }
    }

    #[test]
    fn a_long_prompt_is_billed_at_its_tier_request_by_request() {
        let pro = known_prices("gemini-2.5-pro-preview-06-05").unwrap();
        // 100,000 in (10,000 read from the cache), 1,000 out: the base prices.
        let short = usage(100_000, 10_000, 1_000);
        let base = (90_000.0 * 1.25 + 10_000.0 * 0.125 + 1_000.0 * 10.0) / 1e6;
        assert!((pro.cost(&short) - base).abs() < 1e-12);
        // 250,000 in: every token of the request at the higher tier.
        let long = usage(250_000, 50_000, 2_000);
        let tier = (200_000.0 * 2.5 + 50_000.0 * 0.25 + 2_000.0 * 15.0) / 1e6;
        assert!((pro.cost(&long) - tier).abs() < 1e-12);
        // 200,000 exactly is not above it.
        assert_eq!(pro.at(200_000).input, 1.25);
        // Two requests are billed each at its own tier, not as one of 350,000.
        let both = pro.cost_all([short, long].into_iter()).unwrap();
        assert!((both - (base + tier)).abs() < 1e-12);
        assert!((both - pro.cost(&short.plus(long))).abs() > 1e-3);
        // Prices without tiers: the summed usage, as before.
        let flat = known_prices("gpt-4o").unwrap();
        assert_eq!(
            flat.cost_all([short, long].into_iter()),
            Some(flat.cost(&short.plus(long)))
        );
        // Flash-Lite is not Flash: the longest known name wins.
        assert_eq!(known_prices("gemini-2.5-flash-lite").unwrap().input, 0.1);
        assert_eq!(known_prices("gemini-2.5-flash").unwrap().input, 0.3);
    }

    #[test]
    fn a_models_file_may_give_a_tier() {
        let p: Prices = serde_yaml_ng::from_str(
            "{input: 1, output: 2, above: {prompt_tokens: 10, input: 3, output: 4}}",
        )
        .unwrap();
        assert_eq!(p.at(11).output, 4.0);
        assert_eq!(p.at(10).output, 2.0);
        assert!(
            serde_yaml_ng::from_str::<Prices>("{input: 1, output: 2, above: {input: 3}}").is_err()
        );
    }
}
