//! Reports: everything a run shows its reader, computed from `outcomes.jsonl` alone
//! (DESIGN §9). One [`Exporter`] per format, one file each; [`write_all`] flattens
//! the outcomes to Parquet, aggregates them, and runs every exporter. Each file is
//! written to a temporary name and renamed, so a failure never leaves half a file.

pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod plots;
pub mod table;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::analysis::aggregate::{self, Summary};
use crate::analysis::compare::Comparison;

/// What every exporter reads.
pub struct ReportCx<'a> {
    pub summary: &'a Summary,
    /// The run's `outcomes.jsonl`, for exporters that list single outcomes.
    pub outcomes: &'a Path,
    /// The verdict against a baseline, when one was given.
    pub comparison: Option<&'a Comparison>,
}

/// One output format.
pub trait Exporter {
    /// The file (or folder) it writes, relative to the run directory.
    fn name(&self) -> &'static str;
    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()>;
}

/// Every exporter, in the order they run (the HTML page embeds the plots).
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(json::SummaryJson),
        Box::new(CsvExport),
        Box::new(markdown::SummaryMd),
        Box::new(junit::Junit),
        Box::new(plots::Plots),
        Box::new(html::Html),
    ]
}

/// `summary.csv`, written by the aggregation module (it owns the DataFrames).
struct CsvExport;

impl Exporter for CsvExport {
    fn name(&self) -> &'static str {
        "summary.csv"
    }
    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let tmp = dir.join("summary.csv.partial");
        aggregate::write_summary_csv(cx.summary, &tmp)?;
        std::fs::rename(&tmp, dir.join("summary.csv")).context("cannot write summary.csv")
    }
}

/// Writes every report file into the run directory.
pub fn write_all(
    dir: &Path,
    summary: &Summary,
    comparison: Option<&Comparison>,
) -> anyhow::Result<Vec<PathBuf>> {
    let cx = ReportCx {
        summary,
        outcomes: &dir.join("outcomes.jsonl"),
        comparison,
    };
    let mut written = Vec::new();
    for e in exporters() {
        e.write(&cx, dir)
            .with_context(|| format!("writing {}", e.name()))?;
        written.push(dir.join(e.name()));
    }
    Ok(written)
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    // A target that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a
    // FIFO) is written in place: renaming over it would replace the device with a
    // regular file, and a root user's `--out /dev/null` would break the machine.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return std::fs::write(path, bytes)
            .with_context(|| format!("cannot write {}", path.display()));
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// `12.3%`.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn writing_to_a_device_keeps_the_device() {
        write_atomic(Path::new("/dev/null"), b"verdict").unwrap();
        let m = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(
            m.file_type().is_char_device(),
            "/dev/null must stay a device"
        );
        assert!(!Path::new("/dev/null.partial").exists());

        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("compare.md");
        write_atomic(&f, b"a").unwrap();
        write_atomic(&f, b"b").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"b");
    }
}
