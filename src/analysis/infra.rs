//! Infrastructure failures as the gate sees them: a run whose outcomes include infra
//! errors (requests that failed after every retry, an environment that broke) is not a
//! measurement of the model, so `run`, `merge` and `compare` exit 3 and the verdict is
//! `failed` — unless the user tolerates some on purpose (`--max-infra N` or `P%`).
//! The causes are grouped from the outcomes' `infra_error` texts, so that the message
//! says what failed ("authentication failed: HTTP 401 ×14") without opening a file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::Summary;
use crate::record::{reader, KeyView};

/// How many infra errors a run may hold and still be judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// At most this many outcomes (0, the default: none).
    Count(u64),
    /// At most this share of the run's outcomes, in percent.
    Percent(f64),
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance::Count(0)
    }
}

impl Tolerance {
    /// `N` (a count of outcomes) or `P%` (a share of the run's outcomes).
    pub fn parse(s: &str) -> Result<Tolerance, String> {
        let s = s.trim();
        if let Some(p) = s.strip_suffix('%') {
            let p: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: a count (e.g. 3) or a percentage (e.g. 5%)"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("`{s}`: a percentage from 0% to 100%"));
            }
            return Ok(Tolerance::Percent(p));
        }
        s.parse::<u64>()
            .map(Tolerance::Count)
            .map_err(|_| format!("`{s}`: a count (e.g. 3) or a percentage (e.g. 5%)"))
    }

    /// The most infra errors allowed among `outcomes`.
    pub fn allowed(&self, outcomes: u64) -> u64 {
        match *self {
            Tolerance::Count(n) => n,
            Tolerance::Percent(p) => (outcomes as f64 * p / 100.0).floor() as u64,
        }
    }

    fn describe(&self) -> String {
        match *self {
            Tolerance::Count(0) => "none tolerated".into(),
            Tolerance::Count(n) => format!("--max-infra {n}"),
            Tolerance::Percent(p) => format!("--max-infra {p}%"),
        }
    }
}

/// The infra errors of a run, judged against a tolerance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InfraVerdict {
    /// Outcomes that are infra errors.
    pub infra: u64,
    /// Outcomes in the run.
    pub outcomes: u64,
    /// The most the tolerance allows.
    pub allowed: u64,
    /// What the tolerance was, as the user wrote it.
    pub tolerance: String,
    /// Causes, most frequent first: (cause, count, one full message as an example).
    pub causes: Vec<(String, u64, String)>,
}

impl InfraVerdict {
    /// Whether the run holds more infra errors than tolerated.
    pub fn failed(&self) -> bool {
        self.infra > self.allowed
    }

    /// The lines said on stderr, and at the head of the comparison's Markdown.
    pub fn message(&self) -> String {
        let mut s = format!(
            "{} of {} outcomes are infra errors (requests that failed after every retry, or an environment that broke; {}, at most {})",
            self.infra,
            self.outcomes,
            self.tolerance,
            self.allowed
        );
        for (cause, n, example) in &self.causes {
            let _ = write!(s, "\n  {cause} ×{n}");
            if example != cause {
                let _ = write!(s, " — e.g. {}", clip(example, 240));
            }
        }
        s
    }
}

/// The infra errors of a summary judged against `tolerance`, with their causes read
/// from `dir`'s outcomes when there is a run directory to read (a bare summary.json
/// gives only the count). `None` when the run has no infra error.
pub fn judge(
    summary: &Summary,
    dir: Option<&Path>,
    tolerance: Tolerance,
) -> anyhow::Result<Option<InfraVerdict>> {
    let infra: u64 = summary.groups.iter().map(|g| g.infra_errors).sum();
    if infra == 0 {
        return Ok(None);
    }
    let causes = match dir.map(|d| d.join("outcomes.jsonl")) {
        Some(f) if f.is_file() => causes(&f)?,
        _ => Vec::new(),
    };
    Ok(Some(InfraVerdict {
        infra,
        outcomes: summary.outcomes,
        allowed: tolerance.allowed(summary.outcomes),
        tolerance: tolerance.describe(),
        causes,
    }))
}

/// The infra errors of an outcome file grouped by [`cause`], most frequent first
/// (ties in name order), each with its first full message.
pub fn causes(outcomes: &Path) -> anyhow::Result<Vec<(String, u64, String)>> {
    let mut by: BTreeMap<String, (u64, String)> = BTreeMap::new();
    reader::read::<KeyView>(outcomes, |_, k| {
        if let Some(e) = k.infra_error {
            let slot = by.entry(cause(&e)).or_insert_with(|| (0, e.clone()));
            slot.0 += 1;
        }
        Ok(())
    })?;
    let mut v: Vec<(String, u64, String)> = by.into_iter().map(|(c, (n, e))| (c, n, e)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(v)
}

/// The cause of an infra error message, without what varies from one failure to the
/// next (the provider's error body, a wait): the text up to its first `: `, keeping
/// an HTTP status that follows (`authentication failed: HTTP 401`), and without a
/// trailing wait (`rate limited (retry after 200 ms)` → `rate limited`).
pub fn cause(message: &str) -> String {
    let message = message.trim();
    let (head, rest) = match message.split_once(": ") {
        Some((h, r)) => (h, Some(r)),
        None => (message, None),
    };
    let mut out = head.to_string();
    if let Some(status) = rest.and_then(|r| r.strip_prefix("HTTP ")) {
        let digits: String = status.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            let _ = write!(out, ": HTTP {digits}");
        }
    }
    if let Some(i) = out.find(" (retry after") {
        out.truncate(i);
    }
    out
}

fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_drop_what_varies() {
        assert_eq!(
            cause("authentication failed: HTTP 401: {\"error\":\"bad key\"}"),
            "authentication failed: HTTP 401"
        );
        assert_eq!(
            cause("request rejected (HTTP 400): {\"error\":{}}"),
            "request rejected (HTTP 400)"
        );
        assert_eq!(cause("rate limited (retry after 200 ms)"), "rate limited");
        assert_eq!(cause("server error (HTTP 503)"), "server error (HTTP 503)");
        assert_eq!(
            cause("connection failed: error sending request"),
            "connection failed"
        );
        assert_eq!(cause("timed out"), "timed out");
    }

    #[test]
    fn tolerances() {
        assert_eq!(Tolerance::parse("3"), Ok(Tolerance::Count(3)));
        assert_eq!(Tolerance::parse("5%"), Ok(Tolerance::Percent(5.0)));
        assert!(Tolerance::parse("-1").is_err());
        assert!(Tolerance::parse("101%").is_err());
        assert!(Tolerance::parse("many").is_err());
        assert_eq!(Tolerance::Percent(5.0).allowed(99), 4);
        assert_eq!(Tolerance::Count(2).allowed(1_000), 2);
        assert_eq!(Tolerance::default().allowed(1_000), 0);
    }
}
