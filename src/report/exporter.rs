//! What an exporter is: one output format, one file, written from a [`ReportCx`]
//! through a temporary file and a rename ([`write_atomic`]).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::cases::Cases;
use super::early::Early;
use super::explorer::Explorer;
use crate::analysis::compare::Comparison;
use crate::analysis::summary::Summary;

/// What every exporter reads.
pub struct ReportCx<'a> {
    pub summary: &'a Summary,
    /// The run's `outcomes.jsonl`, for exporters that list single outcomes.
    pub outcomes: &'a Path,
    /// The verdict against a baseline, when one was given.
    pub comparison: Option<&'a Comparison>,
    /// The reports read from the outcomes apart from the summary, maybe started
    /// before it.
    pub started: &'a Started,
}

/// The outcome explorer and the JUnit cases: each started on a thread of its own
/// before the summary is computed ([`Started::start`]), or built when asked for.
pub struct Started {
    pub explorer: Early<Explorer>,
    pub cases: Early<Cases>,
}

impl Started {
    /// Nothing started: each is built when it is asked for.
    pub fn none() -> Started {
        Started {
            explorer: Early::none("explorer", Explorer::build),
            cases: Early::none("junit", Cases::read),
        }
    }

    /// Both started now from `outcomes` (unless the file is large: see
    /// [`Early::start`]).
    pub fn start(outcomes: &Path) -> Started {
        Started {
            explorer: Early::start("explorer", Explorer::build, outcomes),
            cases: Early::start("junit", Cases::read, outcomes),
        }
    }
}

/// One output format.
pub trait Exporter: Send + Sync {
    /// The file (or folder) it writes, relative to the run directory.
    fn name(&self) -> &'static str;
    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()>;
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
