//! The catalog file's text: JSON indented by one space, keys in the order the server
//! sent them, every character outside ASCII escaped as `\uXXXX` (surrogate pairs
//! beyond the Basic Multilingual Plane), no final line break — the layout of the
//! committed `fixtures/catalogs/*.tools.json`, so that importing an unchanged server
//! again rewrites its file byte for byte ([`to_text`]).

use std::io;

use serde_json::ser::{CharEscape, Formatter, PrettyFormatter};
use serde_json::Value;

/// The text of a catalog document.
pub fn to_text(v: &Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, AsciiPretty::new());
    serde::Serialize::serialize(v, &mut ser).expect("a JSON value serializes");
    String::from_utf8(out).expect("ASCII")
}

/// serde_json's pretty printer with a one-space indent and non-ASCII escaped.
struct AsciiPretty<'a> {
    inner: PrettyFormatter<'a>,
}

impl AsciiPretty<'_> {
    fn new() -> Self {
        AsciiPretty {
            inner: PrettyFormatter::with_indent(b" "),
        }
    }
}

impl Formatter for AsciiPretty<'_> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if c.is_ascii() {
                continue;
            }
            w.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{u:04x}")?;
            }
            start = i + c.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        self.inner.write_char_escape(w, escape)
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_capture_is_rewritten_byte_for_byte() {
        // Every committed capture (fixtures/catalogs/reimport.sh makes them all).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/catalogs");
        let mut captures: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".tools.json"))
            .collect();
        captures.sort();
        assert!(captures.len() >= 54, "{} captures", captures.len());
        for p in captures {
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            assert!(
                to_text(&v) == text,
                "{} is not rewritten as it is",
                p.display()
            );
        }
    }

    #[test]
    fn escapes_outside_ascii_as_python_does() {
        let v = serde_json::json!({"a": ["é\u{1F600}\n\"", [], {}], "b": 1.5});
        assert_eq!(
            to_text(&v),
            "{\n \"a\": [\n  \"\\u00e9\\ud83d\\ude00\\n\\\"\",\n  [],\n  {}\n ],\n \"b\": 1.5\n}"
        );
    }
}
