//! The SQL judge: a model's query is right when it returns the reference's rows on the
//! scenario's SQLite, compared on whole results (not the page the model saw).

use serde_json::Value;

use crate::environment::{same_rows, Databases, QueryResult};
use crate::scenario::expect::ExpectedCall;

/// Whether the model's query (`args.sql`) returns the rows of the reference `sql` on
/// `db`, compared on whole results: as a multiset unless the expectation says
/// `ordered`, on the reference's columns only when it allows `extra_columns`.
pub fn sql_matches(db: &str, sql: &str, e: &ExpectedCall, args: &Value, dbs: &Databases) -> bool {
    let Some(got) = args.get("sql").and_then(Value::as_str) else {
        return false;
    };
    let judge = |q: &str| dbs.judge(db, q);
    let (Ok(want), Ok(got)) = (judge(sql), judge(got)) else {
        return false;
    };
    let got = if e.extra_columns {
        match project_onto(&want, &got) {
            Some(g) => g,
            None => return false,
        }
    } else {
        got
    };
    same_rows(&want, &got, e.ordered)
}

/// `got` cut down to columns that stand for `want`'s, when the model selected more
/// columns than the reference: each reference column is matched to a distinct column
/// of `got` holding the same values (as a multiset; by name first when names agree).
/// `None` when no such choice of columns exists.
pub fn project_onto(want: &QueryResult, got: &QueryResult) -> Option<QueryResult> {
    let wn = want.columns.len();
    let gn = got.columns.len();
    if gn < wn || got.rows.len() != want.rows.len() {
        return None;
    }
    let column = |r: &QueryResult, c: usize| -> Vec<String> {
        let mut v: Vec<String> = r.rows.iter().map(|row| cell_key(&row[c])).collect();
        v.sort();
        v
    };
    let wcols: Vec<Vec<String>> = (0..wn).map(|c| column(want, c)).collect();
    let gcols: Vec<Vec<String>> = (0..gn).map(|c| column(got, c)).collect();
    // Candidates per reference column: same values; a same-named column first.
    let cand: Vec<Vec<usize>> = (0..wn)
        .map(|w| {
            let mut c: Vec<usize> = (0..gn).filter(|&g| gcols[g] == wcols[w]).collect();
            c.sort_by_key(|&g| !got.columns[g].eq_ignore_ascii_case(&want.columns[w]));
            c
        })
        .collect();
    fn pick(
        w: usize,
        cand: &[Vec<usize>],
        used: &mut Vec<bool>,
        out: &mut Vec<usize>,
        want: &QueryResult,
        got: &QueryResult,
    ) -> bool {
        if w == cand.len() {
            let projected = project(got, out);
            return same_rows(want, &projected, false);
        }
        for &g in &cand[w] {
            if used[g] {
                continue;
            }
            used[g] = true;
            out.push(g);
            if pick(w + 1, cand, used, out, want, got) {
                return true;
            }
            out.pop();
            used[g] = false;
        }
        false
    }
    fn project(got: &QueryResult, cols: &[usize]) -> QueryResult {
        QueryResult {
            columns: cols.iter().map(|&c| got.columns[c].clone()).collect(),
            rows: got
                .rows
                .iter()
                .map(|r| cols.iter().map(|&c| r[c].clone()).collect())
                .collect(),
            truncated: got.truncated,
        }
    }
    let mut out = Vec::new();
    let mut used = vec![false; gn];
    if pick(0, &cand, &mut used, &mut out, want, got) {
        Some(project(got, &out))
    } else {
        None
    }
}

fn cell_key(v: &Value) -> String {
    crate::environment::normalize_cell(v)
}
