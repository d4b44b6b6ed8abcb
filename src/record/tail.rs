//! Repairing the tail of a record file before appending to it: a torn last line (a
//! process killed mid-write) is set aside and cut, a whole last line without a line
//! break gets one. Both the outcome file and the shared-text file are repaired so.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use anyhow::Context as _;

use super::reader::ReadStats;

/// Makes a record file safe to append to: a torn last line is moved to `side` (when
/// given; appended there, so nothing is ever deleted) and cut from the file; a whole
/// last line without a line break gets one.
pub fn repair_tail(path: &Path, stats: &ReadStats, side: Option<&Path>) -> anyhow::Result<()> {
    if let Some(t) = &stats.torn {
        if let Some(side) = side {
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(side)
                .with_context(|| format!("cannot open {}", side.display()))?;
            f.write_all(&t.bytes)?;
            f.write_all(b"\n")?;
            f.sync_all()?;
        }
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.set_len(t.offset)
            .with_context(|| format!("cannot truncate {}", path.display()))?;
    } else if !stats.ends_with_newline {
        let mut f = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(b"\n")?;
    }
    Ok(())
}
