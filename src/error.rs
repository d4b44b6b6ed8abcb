//! Input errors: what went wrong, in which file, at which line and field path.
//!
//! Every problem with a scenario or catalog file becomes one [`InputError`]; the CLI
//! prints it and exits with [`crate::exit::BAD_INPUT`]. Nothing in loading panics.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem found in an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file the problem is in.
    pub file: PathBuf,
    /// 1-based line, when the parser knows it.
    pub line: Option<usize>,
    /// Field path inside the document, e.g. `catalog.connectors[0].actions[2].name`.
    pub path: String,
    /// What is wrong and, where possible, what to do.
    pub message: String,
}

impl InputError {
    pub fn new(file: &Path, path: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            file: file.to_path_buf(),
            line: None,
            path: path.into(),
            message: message.into(),
        }
    }

    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// All the problems found in a set of files; loading reports every one, not just the first.
#[derive(Debug, Clone, Default)]
pub struct InputErrors(pub Vec<InputError>);

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputErrors {}

impl From<InputError> for InputErrors {
    fn from(e: InputError) -> Self {
        InputErrors(vec![e])
    }
}
