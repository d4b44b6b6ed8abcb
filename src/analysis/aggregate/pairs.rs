//! Paired McNemar tests of exact match between the modes of a scenario and model, on
//! the same query and repeat, counted in passes over disjoint repeats so that memory
//! stays bounded.

use std::collections::BTreeMap;

use polars::prelude::*;

use crate::analysis::stats::mcnemar_exact;
use crate::analysis::summary::Pair;

use super::frame::{collect, strs, u64s};

/// Scenario, model, and the indices of two modes.
pub(super) type PairKey = (String, String, usize, usize);

/// Outcomes whose pairing keys one pass of [`mcnemar_pairs`] holds at most.
pub(super) const PAIRING_PASS: usize = 1 << 20;

/// McNemar pairs: for every two modes of a scenario and model, the outcomes of the
/// same query and repeat under both, and how many only one of the two got right.
///
/// Each (scenario, model, query, repeat) becomes two bit sets over the run's modes
/// (which modes ran it, which got it exact), and only the count of each distinct
/// (scenario, model, bit sets) is kept: the pairs of every two modes are counted from
/// those. The per-key step holds one row per query and repeat, so it runs in `passes`
/// passes over disjoint sets of repeats (`repeat % passes`), one per [`PAIRING_PASS`]
/// outcomes; memory stays bounded however many outcomes there are.
pub(super) fn mcnemar_pairs(ok: &LazyFrame, passes: u32) -> anyhow::Result<Vec<Pair>> {
    let modes = collect(
        ok.clone()
            .select([col("mode").unique().sort(Default::default())]),
    )?;
    let modes = strs(&modes, "mode")?;
    if modes.len() < 2 {
        return Ok(Vec::new());
    }
    let words = modes.len().div_ceil(64);
    // Bit `i % 64` of word `i / 64` stands for mode `i` (in sorted order).
    let word = |w: usize, exact: bool| {
        let mut e = lit(0u64);
        for (i, m) in modes.iter().enumerate().filter(|(i, _)| i / 64 == w) {
            let bit = when(col("mode").eq(lit(m.as_str())))
                .then(lit(1u64 << (i % 64)))
                .otherwise(lit(0u64));
            e = e + if exact {
                bit * col("exact").cast(DataType::UInt64)
            } else {
                bit
            };
        }
        e
    };
    let names = |w: usize| (format!("ran{w}"), format!("exact{w}"));
    // Per scenario, model and pair of modes: (both ran, only the first exact, only the
    // second exact).
    let mut counts: BTreeMap<PairKey, (u64, u64, u64)> = BTreeMap::new();
    for pass in 0..passes {
        let mut bits = Vec::new();
        let mut by = vec![col("scenario"), col("model")];
        for w in 0..words {
            let (ran, exact) = names(w);
            bits.push(word(w, false).sum().alias(ran.as_str()));
            bits.push(word(w, true).sum().alias(exact.as_str()));
            by.push(col(ran.as_str()));
            by.push(col(exact.as_str()));
        }
        let df = collect(
            ok.clone()
                .filter((col("repeat") % lit(passes)).eq(lit(pass)))
                .group_by([
                    col("scenario"),
                    col("model"),
                    col("query_id"),
                    col("repeat"),
                ])
                .agg(bits)
                .group_by(by)
                .agg([len().alias("c")]),
        )?;
        let (s, m, c) = (strs(&df, "scenario")?, strs(&df, "model")?, u64s(&df, "c")?);
        let sets: Vec<(Vec<u64>, Vec<u64>)> = (0..words)
            .map(|w| {
                let (ran, exact) = names(w);
                Ok((u64s(&df, &ran)?, u64s(&df, &exact)?))
            })
            .collect::<PolarsResult<_>>()?;
        let bit =
            |set: &[u64], row: usize, i: usize| set[row * words + i / 64] >> (i % 64) & 1 == 1;
        // Per row, its bit sets word after word.
        let (ran, exact): (Vec<u64>, Vec<u64>) = (0..s.len())
            .flat_map(|row| sets.iter().map(move |(r, e)| (r[row], e[row])))
            .unzip();
        for row in 0..s.len() {
            for a in 0..modes.len() {
                if !bit(&ran, row, a) {
                    continue;
                }
                for b in a + 1..modes.len() {
                    if !bit(&ran, row, b) {
                        continue;
                    }
                    let e = counts
                        .entry((s[row].clone(), m[row].clone(), a, b))
                        .or_default();
                    e.0 += c[row];
                    match (bit(&exact, row, a), bit(&exact, row, b)) {
                        (true, false) => e.1 += c[row],
                        (false, true) => e.2 += c[row],
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(counts
        .into_iter()
        .map(|((scenario, model, a, b), (n, x, y))| Pair {
            scenario,
            model,
            mode_a: modes[a].clone(),
            mode_b: modes[b].clone(),
            n,
            a_only: x,
            b_only: y,
            p_value: mcnemar_exact(x, y),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_counted_in_passes_are_the_pairs_of_a_self_join() {
        // 3 queries × 5 repeats under 3 modes, one outcome missing, exactness varied.
        let modes = ["b-mode", "a-mode", "c-mode"];
        let (mut s, mut m, mut q, mut r, mut mo, mut e) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for query in 0..3u32 {
            for repeat in 0..5u32 {
                for (i, mode) in modes.iter().enumerate() {
                    if (query, repeat, i) == (1, 2, 0) {
                        continue;
                    }
                    s.push("hub");
                    m.push("oracle");
                    q.push(format!("q{query}"));
                    r.push(repeat);
                    mo.push(*mode);
                    e.push(!(query + repeat * 2 + i as u32 * 3).is_multiple_of(4));
                }
            }
        }
        let df = df!(
            "scenario" => s.clone(), "model" => m, "query_id" => q.clone(),
            "repeat" => r.clone(), "mode" => mo.clone(), "exact" => e.clone()
        )
        .unwrap();
        // The self-join, by hand.
        let mut want: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
        for i in 0..s.len() {
            for j in 0..s.len() {
                if q[i] == q[j] && r[i] == r[j] && mo[i] < mo[j] {
                    let c = want
                        .entry((mo[i].to_string(), mo[j].to_string()))
                        .or_default();
                    c.0 += 1;
                    c.1 += (e[i] && !e[j]) as u64;
                    c.2 += (!e[i] && e[j]) as u64;
                }
            }
        }
        assert_eq!(want.len(), 3);
        for passes in [1, 2, 3, 7] {
            let got: BTreeMap<(String, String), (u64, u64, u64)> =
                mcnemar_pairs(&df.clone().lazy(), passes)
                    .unwrap()
                    .into_iter()
                    .map(|p| ((p.mode_a, p.mode_b), (p.n, p.a_only, p.b_only)))
                    .collect();
            assert_eq!(got, want, "{passes} passes");
        }
    }
}
