//! When to try a model request again: exponential backoff with jitter, capped, and
//! the provider's own `retry-after` when it gives one. A policy object, so retries
//! are not loops scattered through the backends.

use std::time::Duration;

use crate::model::ModelError;
use crate::record::OutcomeKey;

/// The default number of retries after the first attempt.
pub const DEFAULT_MAX_RETRIES: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 = never retry.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub base: Duration,
    /// No wait is longer than this (a provider's `retry-after` included).
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: DEFAULT_MAX_RETRIES,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based) of the request of `key` that
    /// failed with `error`: the provider's `retry-after` when given, else
    /// `base · 2^(attempt-1)` scaled by a jitter factor in [0.5, 1.0) — derived from the
    /// key and attempt, so a run's waits are reproducible while concurrent episodes
    /// still spread out — and never more than `cap`.
    pub fn delay(&self, key: &OutcomeKey, attempt: u32, error: &ModelError) -> Duration {
        if let Some(d) = error.retry_after() {
            return d.min(self.cap);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << (attempt.saturating_sub(1)).min(20));
        let h = key.stable_hash() ^ u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let jitter = 0.5 + (h % 1000) as f64 / 2000.0;
        exp.mul_f64(jitter).min(self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> OutcomeKey {
        OutcomeKey {
            scenario: "s".into(),
            query_id: "q".into(),
            mode: "progressive".into(),
            model: "m".into(),
            repeat: 0,
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(2),
        };
        let e = ModelError::Server { status: 503 };
        for attempt in 1..=4u32 {
            let d = p.delay(&key(), attempt, &e);
            let full = Duration::from_millis(100 * (1 << (attempt - 1)));
            assert!(d >= full / 2 && d < full, "attempt {attempt}: {d:?}");
        }
        assert_eq!(p.delay(&key(), 10, &e), Duration::from_secs(2));
        let limited = ModelError::RateLimited {
            retry_after: Some(Duration::from_millis(1234)),
        };
        assert_eq!(p.delay(&key(), 1, &limited), Duration::from_millis(1234));
        let long = ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(600)),
        };
        assert_eq!(p.delay(&key(), 1, &long), Duration::from_secs(2));
    }
}
