//! Optional per-model rate limits: requests per minute and tokens per minute, over a
//! sliding 60-second window shared by every session of the model. A request waits
//! until the window has room; its tokens are the provider's reported usage (input +
//! output), or, when a provider reports none, the request's size in bytes / 4.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::backend::{Answer, Backend, GroundTruth, ModelError, Request, Session};
use crate::record::OutcomeKey;

const WINDOW: Duration = Duration::from_secs(60);

/// The limits of one model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

impl Limits {
    pub fn is_none(&self) -> bool {
        self.requests_per_minute.is_none() && self.tokens_per_minute.is_none()
    }
}

/// The sliding window: when each request started and the tokens it used.
#[derive(Default)]
struct Window {
    events: VecDeque<(Instant, u64)>,
}

impl Window {
    fn prune(&mut self, now: Instant) {
        while self
            .events
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) >= WINDOW)
        {
            self.events.pop_front();
        }
    }

    /// How long to wait before one more request fits; zero when it fits now.
    fn wait(&mut self, now: Instant, l: &Limits) -> Duration {
        self.prune(now);
        let oldest = |me: &Self| {
            me.events
                .front()
                .map(|(t, _)| WINDOW.saturating_sub(now.duration_since(*t)))
                .unwrap_or(Duration::ZERO)
        };
        if l.requests_per_minute
            .is_some_and(|r| self.events.len() as u64 >= u64::from(r))
        {
            return oldest(self).max(Duration::from_millis(1));
        }
        let used: u64 = self.events.iter().map(|(_, n)| n).sum();
        if l.tokens_per_minute.is_some_and(|t| used >= t) {
            return oldest(self).max(Duration::from_millis(1));
        }
        Duration::ZERO
    }
}

/// A backend whose requests keep to [`Limits`].
pub struct Limited {
    pub inner: Arc<dyn Backend>,
    pub limits: Limits,
    window: Arc<tokio::sync::Mutex<Window>>,
}

impl Limited {
    pub fn new(inner: Arc<dyn Backend>, limits: Limits) -> Limited {
        Limited {
            inner,
            limits,
            window: Default::default(),
        }
    }
}

impl Backend for Limited {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn wants_ground_truth(&self) -> bool {
        self.inner.wants_ground_truth()
    }

    fn prices(&self) -> Option<super::prices::Prices> {
        self.inner.prices()
    }

    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }

    fn json_mode(&self) -> bool {
        self.inner.json_mode()
    }

    fn writes_cache(&self) -> bool {
        self.inner.writes_cache()
    }

    fn open(&self, key: &OutcomeKey, truth: Option<GroundTruth>) -> Box<dyn Session> {
        Box::new(LimitedSession {
            inner: self.inner.open(key, truth),
            limits: self.limits,
            window: self.window.clone(),
        })
    }
}

struct LimitedSession {
    inner: Box<dyn Session>,
    limits: Limits,
    window: Arc<tokio::sync::Mutex<Window>>,
}

#[async_trait::async_trait]
impl Session for LimitedSession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        // Take a place in the window (the lock is held only to look and to book).
        let started = loop {
            let wait = {
                let mut w = self.window.lock().await;
                let now = Instant::now();
                let d = w.wait(now, &self.limits);
                if d.is_zero() {
                    w.events.push_back((now, 0));
                    break now;
                }
                d
            };
            tokio::time::sleep(wait).await;
        };
        let result = self.inner.respond(request).await;
        let tokens = match &result {
            Ok(a) => a.usage.map(|u| u.input + u.output),
            Err(_) => None,
        }
        .unwrap_or_else(|| {
            let bytes = request.context.system.len()
                + request
                    .context
                    .tools
                    .iter()
                    .map(|t| t.wire_json().len())
                    .sum::<usize>()
                + request
                    .context
                    .messages
                    .iter()
                    .map(|m| serde_json::to_string(m).map_or(0, |s| s.len()))
                    .sum::<usize>();
            (bytes / 4) as u64
        });
        let mut w = self.window.lock().await;
        if let Some(e) = w.events.iter_mut().find(|(t, _)| *t == started) {
            e.1 = tokens;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_waits_for_room() {
        let t0 = Instant::now();
        let l = Limits {
            requests_per_minute: Some(2),
            tokens_per_minute: Some(1000),
        };
        let mut w = Window::default();
        assert_eq!(w.wait(t0, &l), Duration::ZERO);
        w.events.push_back((t0, 100));
        assert_eq!(w.wait(t0, &l), Duration::ZERO);
        w.events.push_back((t0 + Duration::from_secs(10), 100));
        // Two requests in the window: the next waits for the first to leave it.
        let d = w.wait(t0 + Duration::from_secs(20), &l);
        assert_eq!(d, Duration::from_secs(40));
        assert_eq!(w.wait(t0 + Duration::from_secs(61), &l), Duration::ZERO);
        // Tokens: 1000 used in the window.
        let mut w = Window::default();
        w.events.push_back((t0, 1000));
        let d = w.wait(
            t0 + Duration::from_secs(30),
            &Limits {
                requests_per_minute: None,
                tokens_per_minute: Some(1000),
            },
        );
        assert_eq!(d, Duration::from_secs(30));
    }
}
