//! The statistics of a summary, free of any data frame: Wilson score intervals for
//! rates, pass@k and pass^k over repeats, the exact McNemar test for paired modes, and
//! the rounding that makes float aggregates independent of line order.

use serde::{Deserialize, Serialize};

/// A rate with its Wilson 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub k: u64,
    pub n: u64,
    pub rate: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Rate {
    pub fn new(k: u64, n: u64) -> Rate {
        let (lo, hi) = wilson(k, n);
        Rate {
            k,
            n,
            rate: if n == 0 { 0.0 } else { k as f64 / n as f64 },
            lo,
            hi,
        }
    }
}

/// The Wilson score interval at 95% (z = 1.96).
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n_f = n as f64;
    let p = k as f64 / n_f;
    let denom = 1.0 + z * z / n_f;
    let centre = (p + z * z / (2.0 * n_f)) / denom;
    let half = z * ((p * (1.0 - p) / n_f) + z * z / (4.0 * n_f * n_f)).sqrt() / denom;
    // At the boundaries the interval ends exactly at 0 or 1 (floating error aside).
    let lo = if k == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lo, hi)
}

/// pass@k and pass^k over repeats, averaged over queries (k = the smallest repeat count).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassK {
    pub k: u64,
    pub pass_at_k: f64,
    pub pass_hat_k: f64,
}

/// pass@k = 1 − C(n−c, k)/C(n, k) and pass^k = C(c, k)/C(n, k) per query, averaged,
/// from each query's (scored repeats n, exact c).
pub fn pass_k(qs: &[(u64, u64)]) -> PassK {
    let k = qs.iter().map(|q| q.0).min().unwrap_or(0);
    if k == 0 {
        return PassK {
            k: 0,
            pass_at_k: 0.0,
            pass_hat_k: 0.0,
        };
    }
    let (mut at, mut hat) = (0.0, 0.0);
    for &(n, exact) in qs {
        at += 1.0 - choose_ratio(n - exact, n, k);
        hat += choose_ratio(exact, n, k);
    }
    let m = qs.len() as f64;
    PassK {
        k,
        pass_at_k: at / m,
        pass_hat_k: hat / m,
    }
}

/// C(a, k) / C(n, k), computed as a running product.
fn choose_ratio(a: u64, n: u64, k: u64) -> f64 {
    if a < k {
        return 0.0;
    }
    (0..k).map(|i| (a - i) as f64 / (n - i) as f64).product()
}

/// Exact two-sided McNemar test: binomial(b + c, 1/2) tail of min(b, c), doubled.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // log C(n, i) − n·ln 2, summed for i ≤ k.
    let ln2 = std::f64::consts::LN_2;
    let mut log_c = 0.0; // ln C(n, 0)
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            log_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (log_c - n as f64 * ln2).exp();
    }
    (2.0 * tail).min(1.0)
}

/// A mean or sum of floats rounded to 12 decimal places. Such sums depend on the
/// order of the rows in their last bits, and outcomes are written in the order
/// episodes finish: rounding makes the summary the same for any order (`--jobs`,
/// resume, merge, replay), far below any difference a report shows.
pub fn stable(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1e12).round() / 1e12
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_known_values() {
        // 8/10: the Wilson 95% interval is [0.4902, 0.9433].
        let (lo, hi) = wilson(8, 10);
        assert!(
            (lo - 0.4902).abs() < 1e-4 && (hi - 0.9433).abs() < 1e-4,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        let (lo, hi) = wilson(10, 10);
        assert!(hi == 1.0 && (lo - 0.7225).abs() < 1e-4, "{lo}");
    }

    #[test]
    fn mcnemar_exact_p_values() {
        // b=1, c=9: 2·P(X≤1) for Bin(10, ½) = 2·11/1024.
        assert!((mcnemar_exact(1, 9) - 22.0 / 1024.0).abs() < 1e-12);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(5, 5), 1.0);
    }

    #[test]
    fn pass_at_k_estimator() {
        // n=4 repeats, c=2 right, k=4: pass@4 = 1, pass^4 = 0; c=4: both 1.
        let p = pass_k(&[(4, 2), (4, 4)]);
        assert_eq!(p.k, 4);
        assert!((p.pass_at_k - 1.0).abs() < 1e-12);
        assert!((p.pass_hat_k - 0.5).abs() < 1e-12);
    }
}
