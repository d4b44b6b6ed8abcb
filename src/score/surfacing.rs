//! Surfacing: where the expected addresses stood among what the strategy put in front
//! of the model — retrieved, selected by the selection step, shown up front, fetched
//! through a meta-tool, found by a search, read from a resource — as recall (surfaced
//! at all), recall@k and reciprocal rank, the retrieval measures of RAG-MCP and
//! tool-search studies.
//!
//! Recall is measured for every strategy. Recall@k and MRR are measured only on the
//! expected addresses the mode ranks (the selection step's direct tools, retrieval,
//! tool search), and are absent when there are none: a strategy that shows a whole
//! list at once (every tool up front, every tool of a server on `discover`) ranks
//! nothing, and its recall@5 would be 0% by construction for any list longer than
//! ten, which a reader takes for "never finds the tool".
//!
//! Addresses are ranked in the order they were surfaced. An event that ranks what it
//! surfaces (retrieval, the selection step's list, a search's results) gives each
//! address the next rank; an event that shows several at once unranked (the tools up
//! front, a `discover` answer, a resource read) gives all of them the mean of the
//! ranks they take together (ties share `r + (n − 1) / 2`), and the next event starts
//! after them. An address surfaced again keeps its first rank.

use serde::{Deserialize, Serialize};

use crate::catalog::Address;

/// The cut-off of recall@k.
pub const K: usize = 5;

/// One surfacing event.
pub struct Event {
    pub addresses: Vec<Address>,
    /// Whether the event orders what it surfaces (else they tie).
    pub ranked: bool,
}

/// The surfacing measures of one outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Surfacing {
    /// Distinct addresses surfaced.
    pub surfaced: usize,
    pub k: usize,
    /// Share of the expected addresses ranked within `k`; `None` where the mode ranks
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_at_k: Option<f64>,
    /// Share of the expected addresses surfaced at all.
    pub recall: f64,
    /// Mean over the expected addresses of 1 / rank (0 when never surfaced); `None`
    /// where the mode ranks nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrr: Option<f64>,
    /// Each expected address's rank, `None` when never surfaced.
    pub ranks: Vec<Option<f64>>,
}

/// The measures for `expected` (distinct, skills left out); `None` when nothing is
/// expected. `ranked`: whether the mode ranks an address when it shows it (recall@k and
/// MRR are measured over those expected addresses alone).
pub fn surfacing(
    expected: &[Address],
    events: &[Event],
    ranked: &dyn Fn(&Address) -> bool,
) -> Option<Surfacing> {
    let mut expected: Vec<&Address> = expected
        .iter()
        .filter(|a| !matches!(a, Address::Skill(_)))
        .collect();
    expected.dedup();
    let mut seen: std::collections::HashSet<&Address> = Default::default();
    expected.retain(|a| seen.insert(*a));
    if expected.is_empty() {
        return None;
    }
    let mut rank: std::collections::HashMap<&Address, f64> = Default::default();
    let mut next = 1.0;
    for e in events {
        let mut fresh: Vec<&Address> = Vec::new();
        for a in &e.addresses {
            if !matches!(a, Address::Skill(_)) && !rank.contains_key(a) && !fresh.contains(&a) {
                fresh.push(a);
            }
        }
        let n = fresh.len() as f64;
        for (i, a) in fresh.into_iter().enumerate() {
            let r = if e.ranked {
                next + i as f64
            } else {
                next + (n - 1.0) / 2.0
            };
            rank.insert(a, r);
        }
        next += n;
    }
    let ranks: Vec<Option<f64>> = expected.iter().map(|a| rank.get(a).copied()).collect();
    let m = ranks.len() as f64;
    // Recall@k and MRR over the expected addresses the mode ranks.
    let of_ranked: Vec<Option<f64>> = expected
        .iter()
        .zip(&ranks)
        .filter(|(a, _)| ranked(a))
        .map(|(_, r)| *r)
        .collect();
    let r = of_ranked.len() as f64;
    let measured = !of_ranked.is_empty();
    Some(Surfacing {
        surfaced: rank.len(),
        k: K,
        recall_at_k: measured.then(|| {
            of_ranked
                .iter()
                .flatten()
                .filter(|x| **x <= K as f64)
                .count() as f64
                / r
        }),
        recall: ranks.iter().flatten().count() as f64 / m,
        mrr: measured.then(|| of_ranked.iter().flatten().map(|x| 1.0 / x).sum::<f64>() / r),
        ranks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(t: &str) -> Address {
        Address::Mcp("s".into(), t.into())
    }

    #[test]
    fn ranked_events_rank_in_order_and_ties_share_the_mean_rank() {
        let events = [
            Event {
                addresses: vec![mcp("a"), mcp("b")],
                ranked: true,
            },
            Event {
                addresses: (0..10)
                    .map(|i| mcp(&format!("t{i}")))
                    .chain([mcp("a")])
                    .collect(),
                ranked: false,
            },
        ];
        // b is 2nd; t3 ties with nine others over ranks 3..=12: mean 7.5.
        let s = surfacing(&[mcp("b"), mcp("t3"), mcp("zz")], &events, &|_| true).unwrap();
        assert_eq!(s.ranks, vec![Some(2.0), Some(7.5), None]);
        assert_eq!(s.surfaced, 12);
        assert!((s.recall_at_k.unwrap() - 1.0 / 3.0).abs() < 1e-9);
        assert!((s.recall - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.mrr.unwrap() - (0.5 + 1.0 / 7.5) / 3.0).abs() < 1e-9);
        // A mode that ranks none of them gets recall, and no recall@k or MRR.
        let s = surfacing(&[mcp("b"), mcp("t3"), mcp("zz")], &events[1..], &|_| false).unwrap();
        assert_eq!((s.recall_at_k, s.mrr), (None, None));
        assert!((s.recall - 1.0 / 3.0).abs() < 1e-9);
        // Ranked for some: measured over those alone (b, 2nd; zz never surfaced).
        let s = surfacing(&[mcp("b"), mcp("t3"), mcp("zz")], &events, &|a| {
            a != &mcp("t3")
        })
        .unwrap();
        assert_eq!(s.recall_at_k, Some(0.5));
        assert!((s.mrr.unwrap() - 0.25).abs() < 1e-9);
        assert!((s.recall - 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn nothing_expected_has_no_measures_and_skills_do_not_count() {
        assert_eq!(
            surfacing(&[Address::Skill("x".into())], &[], &|_| true),
            None
        );
        assert_eq!(surfacing(&[], &[], &|_| true), None);
    }
}
