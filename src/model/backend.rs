//! What every model backend is: a [`Backend`] built once per `--model` and shared by
//! every task of a run, opening one [`Session`] per episode, which answers
//! [`Request`]s with an [`Answer`] or a typed [`ModelError`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::record::{OutcomeKey, Usage};
use crate::scenario::Expect;
use crate::strategy::{Composite, State};
use crate::wire::{Context, Response};

use super::prices::Prices;

/// Why the model is being asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The selection step: answer with a JSON array of at most `max` tool names.
    Select { max: usize },
    /// A request of the agent loop.
    Act,
}

/// One request to a model: nothing but what a real model would be sent.
pub struct Request<'a> {
    pub purpose: Purpose,
    pub context: &'a Context,
}

/// A model's answer to one request.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub response: Response,
    /// What the provider reported it billed, when it reports it.
    pub usage: Option<Usage>,
    /// How long the answer took, when the backend measures it.
    pub latency: Option<Duration>,
    /// The answer was cut by the output token limit.
    pub truncated: bool,
    /// The provider marked the answer as a refusal (with its text, if any).
    pub refusal: Option<String>,
}

impl From<Response> for Answer {
    fn from(response: Response) -> Answer {
        Answer {
            response,
            usage: None,
            latency: None,
            truncated: false,
            refusal: None,
        }
    }
}

/// Why a request got no answer. None of these is the model's fault: after the
/// retries the runner allows, the outcome is recorded as an infra error and is never
/// counted as a wrong answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("rate limited{}", retry_after.map(|d| format!(" (retry after {} ms)", d.as_millis())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration> },
    #[error("timed out")]
    Timeout,
    #[error("server error (HTTP {status})")]
    Server { status: u16 },
    #[error("request rejected (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("authentication failed: {0}")]
    Authentication(String),
    #[error("the answer could not be decoded: {0}")]
    Undecodable(String),
    /// The connection failed or was reset, or the answer was cut off mid-way.
    #[error("connection failed: {0}")]
    Connection(String),
    /// A replayed request that the recording does not hold.
    #[error("{0}")]
    Replay(String),
    /// The provider refused the request for its size: the context window was
    /// exceeded. The strategy's failure, not the infrastructure's: the episode ends
    /// as a failed outcome counted in `context_overflow` (see [`super::http::overflow`]).
    #[error("the context window was exceeded (HTTP {status}): {message}")]
    ContextOverflow { status: u16, message: String },
}

impl ModelError {
    /// Whether trying again may help.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Timeout
                | ModelError::Server { .. }
                | ModelError::Connection(_)
        )
    }

    /// The wait the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

/// The episode state, shared with the one backend allowed to see it (the oracle).
/// The runner locks it only while it resolves calls, never across a model call.
pub type StateView = Arc<Mutex<State>>;

/// What the oracle is told when its session opens: the expectation and the
/// strategy's protocol, with a view of the episode state. Requests never carry it.
#[derive(Clone)]
pub struct GroundTruth {
    /// The first turn's expectation and protocol (a single query's only ones).
    pub expect: Expect,
    pub protocol: Arc<Composite>,
    pub state: StateView,
    /// A conversation's later turns: each one's expectation and protocol (the catalog
    /// may grow between turns); the state says which turn is being answered.
    pub later: Vec<(Expect, Arc<Composite>)>,
}

impl GroundTruth {
    /// The expectation and protocol of turn `t` (0-based).
    pub fn turn(&self, t: usize) -> (&Expect, &Arc<Composite>) {
        match t.checked_sub(1).and_then(|i| self.later.get(i)) {
            Some((e, p)) => (e, p),
            None => (&self.expect, &self.protocol),
        }
    }
}

/// One model endpoint (or mock), shared across the tasks of a run.
pub trait Backend: Send + Sync {
    /// The name outcomes carry, e.g. `oracle`.
    fn name(&self) -> &str;
    /// Whether its sessions must be handed the [`GroundTruth`] (the oracle only).
    fn wants_ground_truth(&self) -> bool {
        false
    }
    /// The sampling parameters every request carries (part of a recording's key);
    /// `null` for mock models.
    fn parameters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Prices in US dollars per million tokens, when known (cost reports).
    fn prices(&self) -> Option<Prices> {
        None
    }
    /// Whether the provider writes to its prompt cache every input token it did not
    /// read from it (Anthropic with breakpoints on the newest message): the cost
    /// discbench predicts then prices the uncached part as cache writes.
    fn writes_cache(&self) -> bool {
        false
    }
    /// Whether it can be asked for a JSON object (OpenAI's JSON mode): the selection
    /// step then tries that between the forced call and plain text, as FIM One does.
    fn json_mode(&self) -> bool {
        false
    }
    /// The tool names its provider accepts, when it accepts fewer than discbench
    /// renders: its requests carry names mapped by [`crate::names::NameMap`], and the
    /// runner counts the names sent. `None` for mock models (they see FIM One's names).
    fn names(&self) -> Option<crate::names::NameRule> {
        None
    }
    /// A session for one episode, the work item `key` (recorders key on it).
    fn open(&self, key: &OutcomeKey, truth: Option<GroundTruth>) -> Box<dyn Session>;
}

/// One episode's conversation with a model.
#[async_trait::async_trait]
pub trait Session: Send {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError>;
}

/// The mock model names `--model` accepts (besides `openai:<model>`,
/// `anthropic:<model>` and the entries of a `--models` file).
pub const MODELS: [&str; 2] = ["oracle", "lexical"];
