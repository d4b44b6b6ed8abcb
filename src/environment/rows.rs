//! The rows a query returns ([`QueryResult`]), compared as a judge compares them: as
//! multisets (or sequences when ordered), cells normalized so that 3 and 3.0 are the
//! same answer.

use serde::Serialize;
use serde_json::Value;

/// The rows a query returned, with column names.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    pub truncated: bool,
}

/// Compares two results as row multisets, or as sequences when `ordered`.
pub fn same_rows(a: &QueryResult, b: &QueryResult, ordered: bool) -> bool {
    if a.rows.len() != b.rows.len() || a.truncated != b.truncated {
        return false;
    }
    let key = |r: &Vec<Value>| {
        r.iter()
            .map(normalize_cell)
            .collect::<Vec<_>>()
            .join("\u{1f}")
    };
    let mut x: Vec<String> = a.rows.iter().map(key).collect();
    let mut y: Vec<String> = b.rows.iter().map(key).collect();
    if !ordered {
        x.sort();
        y.sort();
    }
    x == y
}

pub fn normalize_cell(v: &Value) -> String {
    match v {
        // 3 and 3.0 are the same answer.
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            Some(f) => format!("{f:.6}"),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}
