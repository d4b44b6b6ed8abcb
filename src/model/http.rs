//! What the HTTP backends share: an endpoint's configuration, the API key held as a
//! secret that never prints, and the mapping of HTTP outcomes to [`ModelError`]s
//! (status codes, `retry-after` / `retry-after-ms`, timeouts, cut connections).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

use super::backend::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
use crate::record::OutcomeKey;
use crate::wire::Context;

/// The default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Bytes of an error body kept in a [`ModelError::Rejected`] message.
const ERROR_BODY: usize = 300;

/// An API key. Its `Debug` and `Display` print `***`, so it cannot reach a log,
/// an outcome or a report by accident; only the request builder reads it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl Sampling {
    /// As a recording keys it: `null` when nothing is set.
    pub fn to_json(&self) -> serde_json::Value {
        if *self == Sampling::default() {
            serde_json::Value::Null
        } else {
            serde_json::to_value(self).expect("sampling serializes")
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Sampling and length settings sent with every request.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<i64>,
    /// OpenAI's `strict` on every function: `false` unless set (`--strict-tools`); the
    /// Responses API makes a function without `strict` strict, Chat Completions does
    /// not, so discbench always says which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_tools: Option<bool>,
}

impl Sampling {
    /// The `strict` every OpenAI function carries.
    pub fn strict(&self) -> bool {
        self.strict_tools.unwrap_or(false)
    }
}

/// One configured endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The name outcomes carry (`openai:gpt-4o`, or a models-file entry's name).
    pub name: String,
    /// The provider's model id.
    pub model: String,
    /// Base URL without a trailing slash, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub key: Option<Secret>,
    pub sampling: Sampling,
    pub timeout: Duration,
    /// USD per million tokens, when known.
    pub prices: Option<super::prices::Prices>,
    /// Whether requests ask the provider to cache, and for how long (the Messages API
    /// caches only where asked; the others cache on their own).
    pub cache: super::caching::PromptCache,
}

/// One provider's wire format (one file per implementation): how a context becomes a
/// request, and how an answer is read back. Sending, timing and mapping HTTP
/// failures to [`ModelError`]s are shared ([`HttpBackend`]).
pub trait Api: Send + Sync + 'static {
    /// The request for `cx`, addressed, authenticated and with its body.
    /// `conversation` names the episode (its work item, repeat included): the
    /// provider's cache key where the API takes one.
    fn request(
        &self,
        client: &reqwest::Client,
        e: &Endpoint,
        purpose: Purpose,
        cx: &Context,
        conversation: &str,
    ) -> reqwest::RequestBuilder;
    /// Reads a successful answer to a request for `cx`.
    fn parse(&self, v: &Value, cx: &Context) -> Result<Answer, ModelError>;
    /// Whether the API has a JSON mode.
    fn json_mode(&self) -> bool {
        false
    }
    /// The tool names the provider accepts ([`crate::names`]).
    fn names(&self) -> Option<crate::names::NameRule> {
        None
    }
    /// Whether, as `e` asks it, the provider writes to its cache every input token it
    /// did not read ([`Backend::writes_cache`]).
    fn writes_cache(&self, _e: &Endpoint) -> bool {
        false
    }
}

/// A model behind an HTTP API.
pub struct HttpBackend<A: Api> {
    api: Arc<A>,
    endpoint: Endpoint,
    client: reqwest::Client,
}

impl<A: Api> HttpBackend<A> {
    pub fn new(api: A, endpoint: Endpoint) -> Result<HttpBackend<A>, String> {
        Ok(HttpBackend {
            api: Arc::new(api),
            client: client(endpoint.timeout)?,
            endpoint,
        })
    }
}

impl<A: Api> Backend for HttpBackend<A> {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn prices(&self) -> Option<super::prices::Prices> {
        self.endpoint.prices
    }

    fn parameters(&self) -> Value {
        self.endpoint.sampling.to_json()
    }

    fn json_mode(&self) -> bool {
        self.api.json_mode()
    }

    fn writes_cache(&self) -> bool {
        self.api.writes_cache(&self.endpoint)
    }

    fn names(&self) -> Option<crate::names::NameRule> {
        self.api.names()
    }

    fn open(&self, key: &OutcomeKey, _truth: Option<GroundTruth>) -> Box<dyn Session> {
        Box::new(HttpSession {
            api: self.api.clone(),
            endpoint: self.endpoint.clone(),
            client: self.client.clone(),
            conversation: conversation_key(key),
        })
    }
}

struct HttpSession<A: Api> {
    api: Arc<A>,
    endpoint: Endpoint,
    client: reqwest::Client,
    /// The episode's name for the provider's cache ([`conversation_key`]).
    conversation: String,
}

/// The name of one episode's conversation (one work item, one repeat): every request
/// of it, across its user turns, shares it, and no other episode does.
pub fn conversation_key(key: &OutcomeKey) -> String {
    let h = crate::hash::content_hash(key.to_string().as_bytes());
    format!("discbench-{}", &h[..h.len().min(24)])
}

#[async_trait::async_trait]
impl<A: Api> Session for HttpSession<A> {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        // Names the provider would refuse go out as names it accepts, and come back
        // as the names the strategy knows.
        let map = (self.api.names()).and_then(|r| crate::names::NameMap::of(request.context, &r));
        let mapped = map.as_ref().map(|m| m.apply(request.context));
        let cx = mapped.as_ref().unwrap_or(request.context);
        let req = self.api.request(
            &self.client,
            &self.endpoint,
            request.purpose,
            cx,
            &self.conversation,
        );
        let started = Instant::now();
        let resp = req.send().await.map_err(send_error)?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(body_error)?;
        if !(200..300).contains(&status) {
            return Err(status_error(status, &headers, &text));
        }
        let v: Value = serde_json::from_str(&text)
            .map_err(|err| ModelError::Undecodable(format!("not JSON ({err})")))?;
        let mut a = self.api.parse(&v, cx)?;
        if let Some(m) = &map {
            m.restore(&mut a.response);
        }
        a.latency = Some(started.elapsed());
        Ok(a)
    }
}

/// A client for an endpoint: no proxy lookups beyond the environment's, a request
/// timeout, rustls.
pub fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Maps a failed send (no response) to a model error.
pub fn send_error(e: reqwest::Error) -> ModelError {
    if e.is_timeout() {
        ModelError::Timeout
    } else {
        ModelError::Connection(without_url(&e))
    }
}

/// Maps a body that could not be read (cut off mid-way, reset) to a model error.
pub fn body_error(e: reqwest::Error) -> ModelError {
    if e.is_timeout() {
        ModelError::Timeout
    } else {
        ModelError::Connection(format!("the answer was cut off: {}", without_url(&e)))
    }
}

/// A reqwest error's text without the URL (which may carry a key as a query
/// parameter on some gateways).
fn without_url(e: &reqwest::Error) -> String {
    let mut e = e.to_string();
    if let Some(i) = e.find(" for url (") {
        e.truncate(i);
    }
    e
}

/// Maps a non-success status to a model error. `headers` give `retry-after-ms` and
/// `retry-after` (seconds or an HTTP date) for rate limits and overloads; without
/// them, the body's `google.rpc.RetryInfo` (Google's APIs, Gemini's among them) does.
pub fn status_error(status: u16, headers: &reqwest::header::HeaderMap, body: &str) -> ModelError {
    let retry_after = retry_after(headers, SystemTime::now()).or_else(|| retry_info(body));
    if !matches!(status, 401 | 403 | 429) && overflow(body) {
        return ModelError::ContextOverflow {
            status,
            message: clip(body),
        };
    }
    match status {
        429 => ModelError::RateLimited { retry_after },
        401 | 403 => ModelError::Authentication(format!("HTTP {status}: {}", clip(body))),
        500..=599 => ModelError::Server { status },
        _ => ModelError::Rejected {
            status,
            message: clip(body),
        },
    }
}

/// What providers say when a request is larger than the model's context window,
/// each as its documentation or its servers word it (read 2026-11-27; the sources are
/// in the docs' models page): an error body holding one of these is a context
/// overflow, whatever its status.
pub const OVERFLOW_SIGNALS: [(&str, &str); 8] = [
    // OpenAI, Chat Completions and Responses: `code` of the error object.
    ("openai", "context_length_exceeded"),
    // Anthropic Messages: "prompt is too long: N tokens > M maximum".
    ("anthropic", "prompt is too long"),
    // Anthropic, older: "input length and `max_tokens` exceed context limit".
    ("anthropic", "exceed context limit"),
    // Gemini: "The input token count (N) exceeds the maximum number of tokens allowed".
    ("gemini", "exceeds the maximum number of tokens allowed"),
    // OpenAI's older wording, vLLM (old and new) and OpenRouter: "This model's maximum
    // context length is…", "…the model's context length is only N…".
    ("vllm, openrouter", "maximum context length is"),
    ("vllm", "context length is only"),
    // llama.cpp's server: error type `exceed_context_size_error`.
    ("llama.cpp", "exceed_context_size_error"),
    // OpenAI Responses: "Your input exceeds the context window of this model".
    ("openai", "exceeds the context window"),
];

/// Whether an error body says the request was larger than the context window.
pub fn overflow(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    OVERFLOW_SIGNALS
        .iter()
        .any(|(_, signal)| lower.contains(&signal.to_ascii_lowercase()))
}

fn clip(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(ERROR_BODY) {
        Some((i, _)) => format!("{}…", &body[..i]),
        None => body.to_string(),
    }
}

/// The wait a response asks for: `retry-after-ms`, else `retry-after` as seconds or
/// as an HTTP date (relative to `now`).
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            // A wait past what a Duration holds is a very long wait: the retry policy
            // caps it anyway.
            return Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX));
        }
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let at = http_date(v)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// The wait an error body asks for in Google's form: an entry of `error.details` of
/// type `type.googleapis.com/google.rpc.RetryInfo` whose `retryDelay` is a protobuf
/// duration in JSON (`"58s"`, `"1.5s"`).
pub fn retry_info(body: &str) -> Option<Duration> {
    let v: Value = serde_json::from_str(body).ok()?;
    let details = v.pointer("/error/details")?.as_array()?;
    let delay = details
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))?;
    let secs: f64 = delay.trim().strip_suffix('s')?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0)
        .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u32
        + 1;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<u64> = time.split(':').filter_map(|x| x.parse().ok()).collect();
    let [h, m, sec] = hms.as_slice() else {
        return None;
    };
    // An IMF-fixdate's fields are a clock's: anything else is no date (and a year or
    // an hour of any size would overflow the sum below).
    if !(1..=9999).contains(&year) || *h > 23 || *m > 59 || *sec > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    u64::try_from(days)
        .ok()
        .map(|d| d * 86_400 + h * 3600 + m * 60 + sec)
}

/// Howard Hinnant's days-from-civil algorithm.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn retry_after_in_every_form() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // 1994-11-06 08:49:30
        let h = |k: &'static str, v: &'static str| {
            let mut m = HeaderMap::new();
            m.insert(k, HeaderValue::from_static(v));
            m
        };
        assert_eq!(
            retry_after(&h("retry-after", "2"), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&h("retry-after-ms", "1500"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&h("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(retry_after(&h("retry-after", "soon"), now), None);
        // Past what a Duration holds: the longest wait, which the retry policy caps.
        assert_eq!(
            retry_after(&h("retry-after", "1e300"), now),
            Some(Duration::MAX)
        );
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        // Google's RetryInfo in the body, beside other details.
        let google = r#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "58s"}]}}"#;
        assert_eq!(retry_info(google), Some(Duration::from_secs(58)));
        assert_eq!(
            retry_info(&google.replace("58s", "1.5s")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_info(&google.replace("58s", "soon")), None);
        assert_eq!(retry_info("not json"), None);
        match status_error(429, &HeaderMap::new(), google) {
            ModelError::RateLimited { retry_after } => {
                assert_eq!(retry_after, Some(Duration::from_secs(58)))
            }
            other => panic!("{other:?}"),
        }
        // A header wins over the body.
        match status_error(429, &h("retry-after", "2"), google) {
            ModelError::RateLimited { retry_after } => {
                assert_eq!(retry_after, Some(Duration::from_secs(2)))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(http_date("Thu, 01 Jan 99999999999999 00:00:00 GMT"), None);
        assert_eq!(http_date("Thu, 01 Jan 2026 99999999999999:00:00 GMT"), None);
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s} {s:?}"), "*** ***");
        assert_eq!(s.expose(), "sk-live-123");
    }

    #[test]
    fn context_overflows_are_told_from_other_refusals() {
        let h = HeaderMap::new();
        let bodies = [
            // OpenAI Chat Completions.
            r#"{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 16468 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            // OpenAI Responses.
            r#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}"#,
            // Anthropic.
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 219898 tokens > 200000 maximum"}}"#,
            // Gemini.
            r#"{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}"#,
            // vLLM.
            r#"{"error":{"message":"You passed 27905 input tokens and requested 4096 output tokens. However, the model's context length is only 32000 tokens.","type":"BadRequestError","param":"input_tokens","code":400}}"#,
            // llama.cpp's server.
            r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
        ];
        for b in bodies {
            assert!(
                matches!(
                    status_error(400, &h, b),
                    ModelError::ContextOverflow { status: 400, .. }
                ),
                "{b}"
            );
        }
        // Another refusal stays one; an authentication failure is never an overflow.
        let other = r#"{"error":{"message":"Invalid 'tools[0].function.name': string too long.","code":"invalid_value"}}"#;
        assert!(matches!(
            status_error(400, &h, other),
            ModelError::Rejected { .. }
        ));
        assert!(matches!(
            status_error(401, &h, bodies[0]),
            ModelError::Authentication(_)
        ));
        assert!(!ModelError::ContextOverflow {
            status: 400,
            message: String::new()
        }
        .is_retryable());
    }
}
