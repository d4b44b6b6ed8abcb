//! The spend of each group: provider usage, cost and the provider's prompt cache beside
//! the prediction, from the per-group sums (infra errors included: a request that
//! failed later was still billed).

use std::collections::BTreeMap;

use polars::prelude::*;

use crate::analysis::stats::stable;
use crate::analysis::summary::{CacheStat, Cost, ProviderUsage};

use super::frame::{nums, strs};

type Spend =
    BTreeMap<(String, String, String), (Option<ProviderUsage>, Option<Cost>, Option<CacheStat>)>;

/// Per group: its provider usage and cost, from the per-group sums.
pub(super) fn spend_map(df: &DataFrame) -> anyhow::Result<Spend> {
    let (s, m, mo) = (strs(df, "scenario")?, strs(df, "mode")?, strs(df, "model")?);
    let n = |c: &str| nums(df, c);
    let (un, pi, po, pc, cw, cn, cu) = (
        n("usage_n")?,
        n("provider_input")?,
        n("provider_output")?,
        n("provider_cached")?,
        n("counted_with_usage")?,
        n("cost_n")?,
        n("cost_usd")?,
    );
    let (kn, kq, kp, kr, kw, kc, kcp, kcr) = (
        n("cache_n")?,
        n("cache_requests")?,
        n("cache_predicted")?,
        n("cache_read")?,
        n("cache_written")?,
        n("cache_cost_n")?,
        n("cache_cost_predicted")?,
        n("cache_cost_reported")?,
    );
    Ok((0..s.len())
        .map(|i| {
            let usage = (un[i] > 0.0).then(|| ProviderUsage {
                outcomes: un[i] as u64,
                input: pi[i] as u64,
                output: po[i] as u64,
                cached_input: pc[i] as u64,
                counted_input: cw[i] as u64,
                ratio: if cw[i] > 0.0 { pi[i] / cw[i] } else { 0.0 },
            });
            let cost = (cn[i] > 0.0).then(|| Cost {
                outcomes: cn[i] as u64,
                total: stable(cu[i]),
                mean: stable(cu[i] / cn[i]),
            });
            let cache = (kn[i] > 0.0).then(|| CacheStat {
                outcomes: kn[i] as u64,
                requests: kq[i] as u64,
                predicted: kp[i] as u64,
                read: kr[i] as u64,
                written: kw[i] as u64,
                ratio: if kp[i] > 0.0 {
                    stable(kr[i] / kp[i])
                } else {
                    0.0
                },
                cost_reported: (kc[i] > 0.0).then(|| stable(kcr[i])),
                cost_predicted: (kc[i] > 0.0).then(|| stable(kcp[i])),
            });
            (
                (s[i].clone(), m[i].clone(), mo[i].clone()),
                (usage, cost, cache),
            )
        })
        .collect())
}
