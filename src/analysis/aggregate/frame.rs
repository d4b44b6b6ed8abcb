//! DataFrame helpers: scanning the Parquet file lazily, collecting with the streaming
//! engine, reading columns, and quantiles computed from per-group histograms (polars'
//! linear method, bit for bit) so that memory follows distinct values, not outcomes.

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;

/// The environment variable by which polars bounds how many Parquet row groups its
/// streaming reader fetches ahead of the query.
const PREFETCH: &str = "POLARS_ROW_GROUP_PREFETCH_SIZE";

/// The environment variable that sizes the table of groups each thread of polars'
/// streaming group-by aggregates in place.
const HOT_TABLE: &str = "POLARS_HOT_TABLE_SIZE";

/// Groups each thread aggregates in place. Polars' default, 4,096 (4 in a build with
/// debug assertions, which this project's dev profile no longer makes), is less than a summary's histograms and
/// pairings hold, and the rows of the groups that do not fit are kept to the end of
/// the query: its memory grew with the number of outcomes. Tables of this size cost a
/// few MiB per thread.
const HOT_TABLE_SIZE: usize = 1 << 16;

/// Bounds the memory of polars' streaming queries, unless the environment already
/// says otherwise: the reader fetches one row group per thread ahead, not up to 512
/// (every one of ours, about 40,000 outcomes each, to 20 million outcomes), and the
/// group-by aggregates [`HOT_TABLE_SIZE`] groups in place. With polars' defaults a
/// summary of 10,000,000 outcome lines peaked at 1,026–1,200 MiB, and at 278–293 MiB
/// with these (docs: benchmarks.md, "Aggregation memory"); it was no slower.
///
/// It sets environment variables, which polars reads when a query starts: call it
/// before the program starts any thread (`main` does, and the aggregation bench).
pub fn bound_streaming_memory() {
    if std::env::var_os(PREFETCH).is_none() {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        std::env::set_var(PREFETCH, threads.to_string());
    }
    if std::env::var_os(HOT_TABLE).is_none() {
        std::env::set_var(HOT_TABLE, HOT_TABLE_SIZE.to_string());
    }
}

pub(super) fn scan(parquet: &Path) -> PolarsResult<LazyFrame> {
    let p = parquet.to_string_lossy().into_owned();
    LazyFrame::scan_parquet(PlRefPath::new(p.as_str()), ScanArgsParquet::default())
}

pub(super) fn collect(lf: LazyFrame) -> PolarsResult<DataFrame> {
    Ok(lf.collect_with_engine(Engine::Streaming)?.unwrap_single())
}

pub(super) fn strs(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect())
}

pub(super) fn nums(df: &DataFrame, name: &str) -> PolarsResult<Vec<f64>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// Per group (its key columns' values): one quantile per asked-for level.
pub(super) type Quantiles = BTreeMap<Vec<String>, Vec<f64>>;

/// The quantiles `qs` of `value` (nulls left out) in each group of `keys`, exactly as
/// polars' `quantile(q, Linear)` gives them (its `median()` is the 0.5 one), but
/// computed from the histogram of each group's values: polars collects only (group,
/// value, count) rows, so memory is bounded by the distinct values per group, not by
/// the number of outcomes. A group with no value has none, and the reader gives NaN,
/// as polars' null median did.
pub(super) fn quantiles_by(
    lf: &LazyFrame,
    keys: &[&str],
    value: &str,
    qs: &[f64],
) -> anyhow::Result<Quantiles> {
    let by: Vec<Expr> = keys.iter().map(|k| col(*k)).collect();
    let df = collect(
        lf.clone()
            .select(
                by.iter()
                    .cloned()
                    .chain([col(value).cast(DataType::Float64).alias("v")])
                    .collect::<Vec<_>>(),
            )
            .filter(col("v").is_not_null())
            .group_by(by.into_iter().chain([col("v")]).collect::<Vec<_>>())
            .agg([len().alias("c")]),
    )?;
    let columns: Vec<Vec<String>> = keys
        .iter()
        .map(|k| strs(&df, k))
        .collect::<PolarsResult<_>>()?;
    let (v, c) = (nums(&df, "v")?, nums(&df, "c")?);
    let mut hist: BTreeMap<Vec<String>, Vec<(f64, u64)>> = BTreeMap::new();
    for i in 0..v.len() {
        let key = columns.iter().map(|col| col[i].clone()).collect();
        hist.entry(key).or_default().push((v[i], c[i] as u64));
    }
    Ok(hist
        .into_iter()
        .map(|(key, mut h)| {
            h.sort_by(|a, b| a.0.total_cmp(&b.0));
            let at = qs.iter().map(|&q| quantile_linear(&h, q)).collect();
            (key, at)
        })
        .collect())
}

/// The `q` quantile of the values a sorted histogram `(value, count)` holds, by
/// polars' linear method: index `(n - 1) q` into the sorted values, interpolating
/// between its floor and the next value (the same arithmetic, so the same bits).
pub(super) fn quantile_linear(hist: &[(f64, u64)], q: f64) -> f64 {
    let n: u64 = hist.iter().map(|h| h.1).sum();
    if n == 0 {
        return f64::NAN;
    }
    // The value at 0-based position `i` of the sorted values.
    let nth = |i: u64| {
        let mut seen = 0;
        for &(v, c) in hist {
            seen += c;
            if i < seen {
                return v;
            }
        }
        hist[hist.len() - 1].0
    };
    let float_idx = (n - 1) as f64 * q;
    let idx = (float_idx as u64).min(n - 1);
    let lower = nth(idx);
    if float_idx.ceil() as u64 == idx {
        return lower;
    }
    let upper = nth(idx + 1);
    if lower == upper {
        lower
    } else {
        (float_idx - idx as f64) * (upper - lower) + lower
    }
}

pub(super) fn u64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<u64>> {
    let c = df.column(name)?.cast(&DataType::UInt64)?;
    Ok(c.u64()?.iter().map(|v| v.unwrap_or(0)).collect())
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Integer-valued samples with ties, of every length up to 40.
    fn samples() -> Vec<Vec<f64>> {
        (1..=40u64)
            .map(|n| {
                (0..n)
                    .map(|i| ((i * 7919 + n * 31) % 23) as f64 * 97.0)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn histogram_quantiles_are_polars_quantiles_bit_for_bit() {
        for values in samples() {
            let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
            for v in &values {
                *hist.entry(v.to_bits()).or_default() += 1;
            }
            let mut hist: Vec<(f64, u64)> = hist
                .into_iter()
                .map(|(b, c)| (f64::from_bits(b), c))
                .collect();
            hist.sort_by(|a, b| a.0.total_cmp(&b.0));
            let series = Series::new("v".into(), &values);
            let ca = series.f64().unwrap();
            for q in [0.5, 0.95, 0.0, 1.0, 0.33] {
                let polars = ca.quantile(q, QuantileMethod::Linear).unwrap().unwrap();
                assert_eq!(
                    quantile_linear(&hist, q).to_bits(),
                    polars.to_bits(),
                    "q {q} of {values:?}"
                );
            }
            assert_eq!(
                quantile_linear(&hist, 0.5).to_bits(),
                ca.median().unwrap().to_bits()
            );
        }
        assert!(quantile_linear(&[], 0.5).is_nan());
    }
}
