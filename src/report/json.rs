//! `summary.json`: the whole [`crate::analysis::summary::Summary`], plus the comparison
//! verdict when there is one. `compare` reads it back as a baseline.

use std::path::Path;

use super::exporter::{write_atomic, Exporter, ReportCx};

pub struct SummaryJson;

impl Exporter for SummaryJson {
    fn name(&self) -> &'static str {
        "summary.json"
    }

    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(cx.summary)?;
        text.push('\n');
        write_atomic(&dir.join("summary.json"), text.as_bytes())
    }
}
