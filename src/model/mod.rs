//! Models: what answers a context with text and/or tool calls (DESIGN §6).
//!
//! A [`Backend`] is built once per `--model` and shared by every task of a run
//! (`Send + Sync`); it opens a [`Session`] per episode, which answers [`Request`]s
//! asynchronously with an [`Answer`] (the response, plus the provider's usage and the
//! latency when it has them) or a typed [`ModelError`]. One file per backend:
//! [`oracle`] knows the expectation — it alone is handed the [`GroundTruth`] when its
//! session opens — and walks each strategy's protocol by the shortest route;
//! [`lexical`] sees only the context and ranks what it shows with BM25. Both are
//! deterministic and never fail.

pub mod anthropic;
pub mod backend;
pub mod caching;
pub mod gemini;
pub mod http;
pub mod lexical;
pub mod limit;
pub mod mock;
pub mod models_file;
pub mod openai;
pub mod oracle;
pub mod prices;
pub mod replay;
pub mod responses;

use std::sync::Arc;
use std::time::Duration;

use anthropic::Anthropic;
pub use backend::{
    Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session, StateView, MODELS,
};
use http::{Endpoint, Sampling, Secret};
use limit::{Limited, Limits};
use models_file::{Entry, Provider};
use openai::OpenAi;
pub use prices::Prices;

/// A `--model` value that names no backend, or one that cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownModel {
    #[error("unknown model `{0}`; available: oracle, lexical, openai:<model>, openai-responses:<model>, anthropic:<model>, gemini:<model>, or a name from --models")]
    Name(String),
    #[error("model `{name}`: {message}")]
    Setup { name: String, message: String },
}

/// Where the HTTP backends get what `--model` does not say.
pub struct ModelOptions<'a> {
    pub models_file: Option<&'a models_file::ModelsFile>,
    /// `--openai-base-url`, else `OPENAI_BASE_URL`, else OpenAI's.
    pub openai_base_url: Option<String>,
    /// `--anthropic-base-url`, else `ANTHROPIC_BASE_URL`, else Anthropic's.
    pub anthropic_base_url: Option<String>,
    /// `--gemini-base-url`, else `GEMINI_BASE_URL`, else Google's.
    pub gemini_base_url: Option<String>,
    pub timeout: Duration,
    pub sampling: Sampling,
    /// Rate limits for every HTTP model (a models-file entry's own win).
    pub limits: Limits,
    /// Reads an environment variable (keys are read from the environment only).
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// `--prompt-cache`, `--cache-ttl`.
    pub prompt_cache: caching::PromptCache,
}

fn no_env(_: &str) -> Option<String> {
    None
}

impl Default for ModelOptions<'_> {
    fn default() -> Self {
        ModelOptions {
            models_file: None,
            openai_base_url: None,
            anthropic_base_url: None,
            gemini_base_url: None,
            timeout: http::DEFAULT_TIMEOUT,
            sampling: Sampling::default(),
            limits: Limits::default(),
            env: &no_env,
            prompt_cache: caching::PromptCache::default(),
        }
    }
}

/// Builds a mock backend from its CLI name (`oracle`, `lexical`).
pub fn build(spec: &str) -> Result<Arc<dyn Backend>, UnknownModel> {
    build_with(spec, &ModelOptions::default())
}

/// Builds a backend from a `--model` value: a mock, `openai:<model>`,
/// `anthropic:<model>`, `gemini:<model>`, or the name of a `--models` file entry.
pub fn build_with(spec: &str, o: &ModelOptions) -> Result<Arc<dyn Backend>, UnknownModel> {
    let setup = |message: String| UnknownModel::Setup {
        name: spec.to_string(),
        message,
    };
    if let Some(entry) = o.models_file.and_then(|f| f.get(spec)) {
        return entry_backend(entry, o).map_err(setup);
    }
    match spec.split_once(':') {
        None if spec == "oracle" => Ok(Arc::new(oracle::Oracle)),
        None if spec == "lexical" => Ok(Arc::new(lexical::Lexical)),
        Some((p @ ("openai" | "anthropic" | "openai-responses" | "gemini"), model))
            if !model.is_empty() =>
        {
            let entry = direct_entry(spec, p, model, o);
            entry_backend(&entry, o).map_err(setup)
        }
        _ => Err(UnknownModel::Name(spec.to_string())),
    }
}

/// The entry `openai:<model>` / `anthropic:<model>` stands for.
fn direct_entry(name: &str, provider: &str, model: &str, o: &ModelOptions) -> Entry {
    let provider = match provider {
        "anthropic" => Provider::Anthropic,
        "gemini" => Provider::Gemini,
        "openai-responses" => Provider::OpenaiResponses,
        _ => Provider::Openai,
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
        strict_tools: o.sampling.strict_tools,
        timeout_secs: None,
        prices: None,
        requests_per_minute: None,
        tokens_per_minute: None,
    }
}

/// The endpoint: base URL from the entry, else the flag, else the provider's
/// variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `GEMINI_BASE_URL`), else the
/// provider's own; the key from `api_key_env`, else `OPENAI_API_KEY` /
/// `ANTHROPIC_API_KEY` / `GOOGLE_API_KEY`, then `GEMINI_API_KEY` (the order
/// google-genai reads them in).
pub fn endpoint(entry: &Entry, o: &ModelOptions) -> Endpoint {
    let (flag, url_var, key_var, default) = match entry.provider {
        Provider::Openai | Provider::OpenaiResponses => (
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
        Provider::Gemini => (
            &o.gemini_base_url,
            "GEMINI_BASE_URL",
            "GEMINI_API_KEY",
            gemini::DEFAULT_BASE_URL,
        ),
    };
    let base_url = entry
        .base_url
        .clone()
        .or_else(|| flag.clone())
        .or_else(|| (o.env)(url_var).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| default.to_string());
    let key = |var: &str| (o.env)(var).filter(|k| !k.is_empty()).map(Secret::new);
    let key = match (&entry.api_key_env, entry.provider) {
        (Some(var), _) => key(var),
        // google-genai's order: GOOGLE_API_KEY wins when both are set.
        (None, Provider::Gemini) => key("GOOGLE_API_KEY").or_else(|| key(key_var)),
        (None, _) => key(key_var),
    };
    Endpoint {
        name: entry.name.clone(),
        model: entry.model.clone(),
        base_url: base_url.trim_end_matches('/').to_string(),
        key,
        sampling: Sampling {
            temperature: entry.temperature.or(o.sampling.temperature),
            max_tokens: entry.max_tokens.or(o.sampling.max_tokens),
            seed: entry.seed.or(o.sampling.seed),
            strict_tools: entry.strict_tools.or(o.sampling.strict_tools),
        },
        timeout: entry
            .timeout_secs
            .map(Duration::from_secs_f64)
            .unwrap_or(o.timeout),
        prices: None,
        cache: o.prompt_cache,
    }
}

pub fn entry_backend(entry: &Entry, o: &ModelOptions) -> Result<Arc<dyn Backend>, String> {
    let mut e = endpoint(entry, o);
    // Gemini's ids may be written `models/…`, as its API names them.
    let id = entry.model.strip_prefix("models/").unwrap_or(&entry.model);
    e.prices = entry.prices.or_else(|| prices::known_prices(id));
    // Anthropic bills cache reads and writes at their own rates: priced from the
    // published multipliers where the entry gives no price of its own.
    if entry.provider == Provider::Anthropic && e.cache.enabled {
        e.prices = e.prices.map(|p| caching::complete(&e.cache, p));
    }
    let backend: Arc<dyn Backend> = match entry.provider {
        Provider::Openai => Arc::new(OpenAi::new(openai::ChatCompletions, e)?),
        Provider::Anthropic => Arc::new(Anthropic::new(anthropic::Messages, e)?),
        Provider::Gemini => Arc::new(gemini::Gemini::new(gemini::GenerateContent, e)?),
        Provider::OpenaiResponses => {
            Arc::new(responses::OpenAiResponses::new(responses::Responses, e)?)
        }
    };
    let limits = Limits {
        requests_per_minute: entry.requests_per_minute.or(o.limits.requests_per_minute),
        tokens_per_minute: entry.tokens_per_minute.or(o.limits.tokens_per_minute),
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
