//! The one reader of JSON-lines record files (`outcomes.jsonl`, `texts.jsonl`).
//!
//! [`read`] calls back with each line deserialized into the view the caller needs
//! (aggregation reads a few fields, the HTML drill-down whole outcomes, resume only
//! keys), so there is one place that splits lines, names a bad one by `file:line`,
//! and recognises a *torn* last line: one with no line break at the end of the file
//! that does not parse — what a process killed mid-write leaves. A torn line is not an
//! error: it is reported in [`ReadStats::torn`] and its work item counts as not done.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::FORMAT_VERSION;

/// A record file that cannot be read as one.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line that is not a record of the expected kind. Bad input, not a failure of
    /// the machine: the CLI exits with the bad-input code.
    #[error("{}:{line}: not an outcome line: {message}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An outcome file without one outcome in it (bad input: nothing to report).
    #[error("{} holds no outcomes", path.display())]
    Empty { path: PathBuf },
    /// A `run.json` that is not one (bad input, as a malformed line is).
    #[error("{} is not a discbench run.json: {message}", path.display())]
    NotManifest { path: PathBuf, message: String },
    /// A line written by a newer discbench.
    #[error("{}:{line}: written in outcome format {found}, newer than the {FORMAT_VERSION} this discbench reads; use a newer discbench", path.display())]
    TooNew {
        path: PathBuf,
        line: usize,
        found: u32,
    },
}

impl RecordError {
    /// Whether this is the file's fault (bad input) rather than the machine's.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, RecordError::Io { .. })
    }
}

/// Whether an error chain holds a [`RecordError`] that is bad input.
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<RecordError>()
            .is_some_and(RecordError::is_bad_input)
    })
}

/// The unparseable tail of a file that a killed writer left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    /// Its 1-based line number.
    pub line: usize,
    /// The byte offset where it starts (the file's length up to the last whole line).
    pub offset: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What [`read`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Records passed to the callback.
    pub records: usize,
    pub torn: Option<Torn>,
    /// Whether the file's last byte is a line break (or the file is empty): an
    /// appender must add one before writing when it is not.
    pub ends_with_newline: bool,
}

/// The format version a line declares. The writer puts `format` first, so a look at
/// the line's start is enough (a full second parse would double the cost of reading
/// a million lines); lines without it are version 1.
fn declared_format(line: &[u8]) -> Option<u32> {
    let rest = line.strip_prefix(b"{\"format\":")?;
    let digits: Vec<u8> = rest
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// Reads every non-blank line of `path` as a `T` and passes it, with its 1-based line
/// number, to `each`. Errors of `each` stop the read and are returned as they are.
pub fn read<T: DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(usize, T) -> anyhow::Result<()>,
) -> anyhow::Result<ReadStats> {
    lines(
        path,
        |text| serde_json::from_str::<T>(text).map_err(|e| e.to_string()),
        |line, _, v| each(line, v),
    )
}

/// As [`read`], but passes each record's text (checked to be one JSON value, not
/// parsed) for readers that decide from the text what to parse.
pub fn read_text(
    path: &Path,
    mut each: impl FnMut(usize, &str) -> anyhow::Result<()>,
) -> anyhow::Result<ReadStats> {
    lines(
        path,
        |text| {
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
        |line, text, ()| each(line, text),
    )
}

/// The loop behind [`read`] and [`read_text`]: splits lines, parses each with `parse`,
/// names a bad one by `file:line`, and sets a torn last line apart.
fn lines<T>(
    path: &Path,
    parse: impl Fn(&str) -> Result<T, String>,
    mut each: impl FnMut(usize, &str, T) -> anyhow::Result<()>,
) -> anyhow::Result<ReadStats> {
    let io = |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = File::open(path).map_err(io)?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let mut buf = Vec::new();
    let mut stats = ReadStats {
        ends_with_newline: true,
        ..ReadStats::default()
    };
    let mut offset = 0u64;
    let mut line = 0;
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        line += 1;
        let complete = buf.last() == Some(&b'\n');
        stats.ends_with_newline = complete;
        let start = offset;
        offset += n as u64;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Whole-line UTF-8 validation (fast) and then a parse from `str`, which need not
        // re-validate every string: a million-line file reads faster this way.
        let text = std::str::from_utf8(&buf).map_err(|_| "not UTF-8".to_string());
        let parsed: Result<T, String> = text.as_ref().map_err(Clone::clone).and_then(|t| parse(t));
        match parsed {
            Ok(v) => {
                if let Some(found) = declared_format(&buf) {
                    if found > FORMAT_VERSION {
                        return Err(RecordError::TooNew {
                            path: path.to_path_buf(),
                            line,
                            found,
                        }
                        .into());
                    }
                }
                stats.records += 1;
                each(line, text.as_deref().unwrap_or(""), v)?;
            }
            Err(_) if !complete => {
                stats.torn = Some(Torn {
                    line,
                    offset: start,
                    bytes: buf.clone(),
                });
            }
            Err(message) => {
                return Err(RecordError::Malformed {
                    path: path.to_path_buf(),
                    line,
                    message,
                }
                .into());
            }
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Row {
        a: u32,
    }

    fn read_text(text: &[u8]) -> anyhow::Result<(Vec<(usize, u32)>, ReadStats)> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("outcomes.jsonl");
        std::fs::write(&p, text).unwrap();
        let mut seen = Vec::new();
        let stats = read::<Row>(&p, |i, r| {
            seen.push((i, r.a));
            Ok(())
        })?;
        Ok((seen, stats))
    }

    #[test]
    fn a_torn_last_line_is_set_apart_not_an_error() {
        let (seen, stats) = read_text(b"{\"a\":1}\n\n{\"a\":2}\n{\"a\":").unwrap();
        assert_eq!(seen, [(1, 1), (3, 2)]);
        let torn = stats.torn.unwrap();
        assert_eq!(torn.line, 4);
        assert_eq!(torn.offset, 17);
        assert_eq!(torn.bytes, b"{\"a\":");
        assert!(!stats.ends_with_newline);
    }

    #[test]
    fn a_whole_last_line_without_newline_is_a_record() {
        let (seen, stats) = read_text(b"{\"a\":1}\n{\"a\":2}").unwrap();
        assert_eq!(seen.len(), 2);
        assert!(stats.torn.is_none());
        assert!(!stats.ends_with_newline);
    }

    #[test]
    fn a_bad_line_in_the_middle_names_file_and_line() {
        let e = read_text(b"{\"a\":1}\n{\"b\":1}\n{\"a\":3}\n").unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("outcomes.jsonl:2: not an outcome line"),
            "{text}"
        );
        assert!(is_bad_input(&e));
        let e = read_text(b"{\"a\":1}\n\xff\xfe\n").unwrap_err();
        assert!(format!("{e:#}").contains(":2: not an outcome line: not UTF-8"));
    }

    #[test]
    fn a_newer_format_is_refused() {
        let e = read_text(b"{\"format\":99,\"a\":1}\n").unwrap_err();
        assert!(format!("{e:#}").contains("format 99"), "{e:#}");
        assert!(is_bad_input(&e));
    }
}
