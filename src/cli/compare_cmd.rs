//! `discbench compare BASELINE CURRENT`: a verdict per metric and the queries that
//! changed; exit 1 on any regression.

use super::args::CompareArgs;
use super::failure::{io, Failure};
use crate::analysis::{compare, infra};
use crate::exit;
use crate::report;

pub fn compare(a: CompareArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    let base =
        compare::load_side(&a.baseline).map_err(|e| Failure::Usage(format!("baseline: {e:#}")))?;
    let cur =
        compare::load_side(&a.current).map_err(|e| Failure::Usage(format!("current: {e:#}")))?;
    let tolerance = super::config::max_infra(a.max_infra.as_deref())?;
    let mut c = compare::compare(&base, &cur, &thresholds);
    c.infra = infra::judge(
        &cur,
        a.current.is_dir().then_some(a.current.as_path()),
        tolerance,
    )
    .map_err(super::failure::report_failure)?;
    let md = compare::markdown(&c);
    let target = a
        .out
        .clone()
        .or_else(|| a.current.is_dir().then(|| a.current.join("compare.md")));
    if let Some(t) = target {
        report::write_atomic(&t, md.as_bytes()).map_err(Failure::Infra)?;
    }
    out.write_all(md.as_bytes()).map_err(io)?;
    if let Some(i) = &c.infra {
        super::report_cmd::say_infra(i, &a.current);
    }
    Ok(if c.failed() {
        exit::INFRA
    } else if c.regressed() {
        exit::REGRESSION
    } else {
        exit::OK
    })
}
