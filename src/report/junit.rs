//! `junit.xml`: one test case per query × mode × model (× repeat), streamed from
//! `outcomes.jsonl` ([`super::cases`] reads them). A case fails when its calls are not
//! an exact match; the failure carries the expected and the actual calls. Infra errors
//! are `<error>`s. Attribute values go through [`esc_attr`] (line breaks and tabs as
//! character references, since parsers normalise them to spaces), text through
//! [`super::text::esc`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context as _;

use super::exporter::{Exporter, ReportCx};
use super::text::esc_attr;

pub struct Junit;

impl Exporter for Junit {
    fn name(&self) -> &'static str {
        "junit.xml"
    }

    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let s = cx.summary;
        let failures: u64 = s.groups.iter().map(|g| g.n - g.exact.k).sum();
        let errors: u64 = s.groups.iter().map(|g| g.infra_errors).sum();
        let tmp = dir.join("junit.xml.partial");
        let written = write_cases(cx, &tmp, failures, errors);
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return written;
        }
        std::fs::rename(&tmp, dir.join("junit.xml")).context("cannot write junit.xml")
    }
}

/// Writes the whole document to `tmp` (the file is closed on return).
fn write_cases(cx: &ReportCx, tmp: &Path, failures: u64, errors: u64) -> anyhow::Result<()> {
    let s = cx.summary;
    let cases = cx.started.cases.take(cx.outcomes)?;
    let mut w = BufWriter::new(
        File::create(tmp).with_context(|| format!("cannot write {}", tmp.display()))?,
    );
    writeln!(w, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        w,
        r#"<testsuites name="discbench" tests="{}" failures="{failures}" errors="{errors}">"#,
        s.outcomes
    )?;
    writeln!(
        w,
        r#"  <testsuite name="{}" tests="{}" failures="{failures}" errors="{errors}">"#,
        esc_attr(&s.run_id),
        s.outcomes
    )?;
    cases.write_to(&mut w)?;
    writeln!(w, "  </testsuite>\n</testsuites>")?;
    w.flush()?;
    Ok(())
}
