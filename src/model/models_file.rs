//! `--models FILE`: named endpoints, so a run can say `--model claude` and a
//! reviewer can read exactly what that meant.
//!
//! ```yaml
//! models:
//!   - name: gpt4o                     # what --model picks and outcomes carry
//!     provider: openai                # openai | anthropic
//!     model: gpt-4o-2024-08-06
//!     base_url: https://api.openai.com/v1   # optional: the provider's default
//!     api_key_env: OPENAI_API_KEY     # the NAME of the variable holding the key
//!     temperature: 0
//!     max_tokens: 1024
//!     seed: 7
//!     timeout_secs: 60
//!     prices: { input: 2.50, output: 10.00, cached_input: 1.25 }   # USD per million tokens
//! ```
//!
//! A key is never written in the file: there is no field for one, and an unknown field
//! is an error.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::anthropic::{self, Anthropic};
use super::http::{Endpoint, Sampling, Secret};
use super::limit::{Limited, Limits};
use super::openai::{self, OpenAi};
use super::{Backend, ModelOptions};

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
}

impl Prices {
    /// The cost of `u` in US dollars: cached input at its own price when given (else
    /// the input price), the rest of the input and the output at theirs.
    pub fn cost(&self, u: &crate::record::Usage) -> f64 {
        let cached = u.cached_input.unwrap_or(0).min(u.input);
        let fresh = u.input - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + u.output as f64 * self.output)
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
        },
    ),
    (
        "gpt-4o-mini",
        Prices {
            input: 0.15,
            output: 0.6,
            cached_input: Some(0.075),
        },
    ),
    (
        "gpt-4.1",
        Prices {
            input: 2.0,
            output: 8.0,
            cached_input: Some(0.5),
        },
    ),
    (
        "gpt-4.1-mini",
        Prices {
            input: 0.4,
            output: 1.6,
            cached_input: Some(0.1),
        },
    ),
    (
        "claude-3-5-sonnet",
        Prices {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
        },
    ),
    (
        "claude-3-5-haiku",
        Prices {
            input: 0.8,
            output: 4.0,
            cached_input: Some(0.08),
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

/// The API a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Openai,
    Anthropic,
}

/// One named endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    pub provider: Provider,
    pub model: String,
    #[serde(default)]
    pub base_url: Option<String>,
    /// The name of the environment variable that holds the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub timeout_secs: Option<f64>,
    #[serde(default)]
    pub prices: Option<Prices>,
    /// At most this many requests in any 60 seconds.
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// At most this many tokens (provider usage, input + output) in any 60 seconds.
    #[serde(default)]
    pub tokens_per_minute: Option<u64>,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsFile {
    pub models: Vec<Entry>,
}

impl ModelsFile {
    /// Reads and checks a models file: names unique and not a mock's or a
    /// `provider:model` form, timeouts positive.
    pub fn load(path: &Path) -> Result<ModelsFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let f: ModelsFile = serde_yaml_ng::from_str(&text).map_err(|e| {
            let hint = if e.to_string().contains("api_key") {
                " (keys are never written in a models file: name the variable that holds it with api_key_env)"
            } else {
                ""
            };
            format!("{}: {e}{hint}", path.display())
        })?;
        let mut seen = std::collections::HashSet::new();
        for (i, m) in f.models.iter().enumerate() {
            let at = format!("{}: models[{i}]", path.display());
            if m.name.trim().is_empty() || m.name.contains(':') {
                return Err(format!("{at}.name: a plain name without `:`"));
            }
            if super::MODELS.contains(&m.name.as_str()) {
                return Err(format!("{at}.name: `{}` is a built-in model", m.name));
            }
            if !seen.insert(m.name.clone()) {
                return Err(format!("{at}.name: `{}` is listed twice", m.name));
            }
            if m.timeout_secs.is_some_and(|t| !(t > 0.0 && t.is_finite())) {
                return Err(format!("{at}.timeout_secs: a positive number of seconds"));
            }
        }
        Ok(f)
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.models.iter().find(|m| m.name == name)
    }
}

impl Entry {
    /// The entry `openai:<model>` / `anthropic:<model>` stands for.
    pub fn direct(name: &str, provider: &str, model: &str, o: &ModelOptions) -> Entry {
        let provider = if provider == "anthropic" {
            Provider::Anthropic
        } else {
            Provider::Openai
        };
        Entry {
            name: name.to_string(),
            provider,
            model: model.to_string(),
            base_url: None,
            api_key_env: None,
            temperature: o.sampling.temperature,
            max_tokens: o.sampling.max_tokens,
            seed: o.sampling.seed,
            timeout_secs: None,
            prices: None,
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }

    /// The endpoint: base URL from the entry, else the flag, else the provider's
    /// variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), else the provider's own;
    /// the key from `api_key_env`, else `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.
    pub fn endpoint(&self, o: &ModelOptions) -> Endpoint {
        let (flag, url_var, key_var, default) = match self.provider {
            Provider::Openai => (
                &o.openai_base_url,
                "OPENAI_BASE_URL",
                "OPENAI_API_KEY",
                openai::DEFAULT_BASE_URL,
            ),
            Provider::Anthropic => (
                &o.anthropic_base_url,
                "ANTHROPIC_BASE_URL",
                "ANTHROPIC_API_KEY",
                anthropic::DEFAULT_BASE_URL,
            ),
        };
        let base_url = self
            .base_url
            .clone()
            .or_else(|| flag.clone())
            .or_else(|| (o.env)(url_var).filter(|v| !v.is_empty()))
            .unwrap_or_else(|| default.to_string());
        let key_var = self.api_key_env.as_deref().unwrap_or(key_var);
        Endpoint {
            name: self.name.clone(),
            model: self.model.clone(),
            base_url: base_url.trim_end_matches('/').to_string(),
            key: (o.env)(key_var).filter(|k| !k.is_empty()).map(Secret::new),
            sampling: Sampling {
                temperature: self.temperature.or(o.sampling.temperature),
                max_tokens: self.max_tokens.or(o.sampling.max_tokens),
                seed: self.seed.or(o.sampling.seed),
            },
            timeout: self
                .timeout_secs
                .map(Duration::from_secs_f64)
                .unwrap_or(o.timeout),
            prices: None,
        }
    }

    pub fn backend(&self, o: &ModelOptions) -> Result<Arc<dyn Backend>, String> {
        let mut e = self.endpoint(o);
        e.prices = self.prices.or_else(|| known_prices(&self.model));
        let backend: Arc<dyn Backend> = match self.provider {
            Provider::Openai => Arc::new(OpenAi::new(openai::ChatCompletions, e)?),
            Provider::Anthropic => Arc::new(Anthropic::new(anthropic::Messages, e)?),
        };
        let limits = Limits {
            requests_per_minute: self.requests_per_minute.or(o.limits.requests_per_minute),
            tokens_per_minute: self.tokens_per_minute.or(o.limits.tokens_per_minute),
        };
        if limits.requests_per_minute == Some(0) || limits.tokens_per_minute == Some(0) {
            return Err("rate limits must be at least 1".into());
        }
        Ok(if limits.is_none() {
            backend
        } else {
            Arc::new(Limited::new(backend, limits))
        })
    }
}
