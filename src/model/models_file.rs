//! `--models FILE`: named endpoints, so a run can say `--model claude` and a
//! reviewer can read exactly what that meant.
//!
//! ```yaml
//! models:
//!   - name: gpt4o                     # what --model picks and outcomes carry
//!     provider: openai                # openai | anthropic | openai-responses | gemini
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

use serde::Deserialize;

use super::backend::MODELS;
use super::prices::Prices;

/// The longest request timeout a models file may set: a day. Past it a timeout is a
/// typo, and past about 1.8e19 seconds it is more than a `Duration` holds.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// The API a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Openai,
    Anthropic,
    /// OpenAI's Responses API (`openai-responses` in the file).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Gemini's `generateContent`.
    Gemini,
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
    /// OpenAI's `strict` on every function (default false).
    #[serde(default)]
    pub strict_tools: Option<bool>,
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
            if MODELS.contains(&m.name.as_str()) {
                return Err(format!("{at}.name: `{}` is a built-in model", m.name));
            }
            if !seen.insert(m.name.clone()) {
                return Err(format!("{at}.name: `{}` is listed twice", m.name));
            }
            if m.timeout_secs
                .is_some_and(|t| !(t > 0.0 && t <= MAX_TIMEOUT_SECS))
            {
                return Err(format!(
                    "{at}.timeout_secs: a positive number of seconds, at most {MAX_TIMEOUT_SECS}"
                ));
            }
        }
        Ok(f)
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.models.iter().find(|m| m.name == name)
    }
}
