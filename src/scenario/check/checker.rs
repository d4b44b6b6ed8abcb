//! Validation: everything a loaded scenario is checked for — duplicate and empty
//! names, JSON Schemas, reserved tool names, fixture responses, expectations (steps,
//! alternatives, arguments, `before`, `allow`, `forbid`) against the catalog, and
//! reference SQL run on the seeded databases. Every problem becomes an [`InputError`]
//! naming the file, the line where it can be found, and the field path.
//!
//! [`Checker`] gathers the problems and places them; its checks are split by what they
//! read: the catalog (`catalog.rs`), the queries and their expectations
//! (`queries.rs`), and reference SQL run on the seeded databases (`sql.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{InputError, InputErrors};

/// The problems found so far, with what is needed to place them: the source texts
/// (for line numbers) and where each catalog item was defined.
#[derive(Default)]
pub(crate) struct Checker {
    pub errors: Vec<InputError>,
    /// Source texts, to find the line of a value after parsing.
    pub texts: HashMap<PathBuf, String>,
    /// Where each catalog item came from, for error messages.
    pub origins: HashMap<(Kind2, String), (PathBuf, String)>,
}

/// Item kinds for origin tracking and duplicate checks.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind2 {
    Skill,
    Connector,
    Database,
    Mcp,
    Builtin,
}

impl Checker {
    pub(crate) fn err(&mut self, file: &Path, path: &str, msg: impl Into<String>) {
        self.errors.push(InputError::new(file, path, msg));
    }

    /// An error whose line is found by searching for `needle` in the file: given only
    /// when the needle occurs exactly `nth` times or more and the `nth` one is meant.
    pub(crate) fn err_at(
        &mut self,
        file: &Path,
        path: &str,
        needle: &str,
        nth: usize,
        msg: impl Into<String>,
    ) {
        let line = self.texts.get(file).and_then(|t| find_line(t, needle, nth));
        self.errors
            .push(InputError::new(file, path, msg).at_line(line));
    }

    pub(crate) fn finish<T>(self, ok: T) -> Result<T, InputErrors> {
        if self.errors.is_empty() {
            Ok(ok)
        } else {
            Err(InputErrors(self.errors))
        }
    }
}

/// 1-based line of the `nth` occurrence of `needle`, if it occurs exactly `nth` times.
pub(crate) fn find_line(text: &str, needle: &str, nth: usize) -> Option<usize> {
    let hits: Vec<usize> = text.match_indices(needle).map(|(i, _)| i).collect();
    if hits.len() != nth {
        return None;
    }
    let at = hits[nth - 1];
    Some(text[..at].matches('\n').count() + 1)
}
