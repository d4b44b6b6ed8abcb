//! Which queries a run keeps (`run --query ID --tag TAG`): to try one query, or one
//! tag, on a paid model before the whole suite. A query is kept when any `--query`
//! names it (`ID`, or `SCENARIO/ID` where two scenarios share an id) or it carries
//! any `--tag`; a scenario with no query kept is left out. Recorded in `run.json`, so
//! a resume keeps the same queries, and a filtered run judged against a baseline
//! judges only the queries it kept.

use serde::{Deserialize, Serialize};

use super::types::Scenario;

/// The queries a run keeps; empty keeps every one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryFilter {
    /// `ID` or `SCENARIO/ID`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

impl QueryFilter {
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty() && self.tags.is_empty()
    }

    /// Whether the query `id` of scenario `scenario`, tagged `tags`, is kept.
    pub fn keeps(&self, scenario: &str, id: &str, tags: &[String]) -> bool {
        self.is_empty()
            || self.queries.iter().any(|q| match q.split_once('/') {
                Some((s, i)) if s == scenario && i == id => true,
                _ => q == id,
            })
            || tags.iter().any(|t| self.tags.contains(t))
    }

    /// The filter as the command line says it: `--query a --tag b`.
    pub fn describe(&self) -> String {
        let q = self.queries.iter().map(|q| format!("--query {q}"));
        let t = self.tags.iter().map(|t| format!("--tag {t}"));
        q.chain(t).collect::<Vec<_>>().join(" ")
    }

    /// The scenarios with only the queries kept; those with none left out. An error
    /// names what matched nothing: a `--query` or `--tag` no query answers to.
    pub fn apply(&self, scenarios: Vec<Scenario>) -> Result<Vec<Scenario>, String> {
        if self.is_empty() {
            return Ok(scenarios);
        }
        let mut unmatched: Vec<String> = Vec::new();
        for q in &self.queries {
            let hit = scenarios.iter().any(|s| {
                s.queries
                    .iter()
                    .any(|x| q == &x.id || q == &format!("{}/{}", s.name, x.id))
            });
            if !hit {
                unmatched.push(format!("--query {q}"));
            }
        }
        for t in &self.tags {
            if !scenarios
                .iter()
                .any(|s| s.queries.iter().any(|x| x.tags.contains(t)))
            {
                unmatched.push(format!("--tag {t}"));
            }
        }
        if !unmatched.is_empty() {
            return Err(format!(
                "{} matches no query of these scenarios (each query's `id` and `tags` are under `queries:` in its scenario file)",
                unmatched.join(", ")
            ));
        }
        Ok(scenarios
            .into_iter()
            .filter_map(|mut s| {
                let name = s.name.clone();
                s.queries.retain(|q| self.keeps(&name, &q.id, &q.tags));
                (!s.queries.is_empty()).then_some(s)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_by_id_scoped_id_or_tag() {
        let f = QueryFilter {
            queries: vec!["q1".into(), "hub/q2".into()],
            tags: vec!["sql".into()],
        };
        assert!(f.keeps("any", "q1", &[]));
        assert!(f.keeps("hub", "q2", &[]));
        assert!(!f.keeps("other", "q2", &[]));
        assert!(f.keeps("other", "q9", &["sql".into()]));
        assert!(!f.keeps("other", "q9", &["mcp".into()]));
        assert!(QueryFilter::default().keeps("s", "q", &[]));
        assert_eq!(f.describe(), "--query q1 --query hub/q2 --tag sql");
    }
}
