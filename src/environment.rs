//! The world the agent acts on: fixture responses for executed calls, and one embedded
//! SQLite database per catalog database, built from its seed SQL and then made
//! read-only, answering `query` calls with at most a row limit (by default
//! [`ROW_LIMIT`], FIM One's default `max_rows`).
//!
//! [`Databases`] is shared by every episode of a scenario, however many run at once:
//! each database is a small pool of identical read-only in-memory connections. A
//! query takes an idle connection (or seeds a new one), runs, and gives it back; the
//! pool's lock is held only to take and return a connection, never during a query
//! or across a model call.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Target};

/// Rows returned to the model by one query unless configured otherwise; more are cut
/// with a note.
pub const ROW_LIMIT: usize = 1_000;
/// Rows compared when SQL is judged by execution: the judge sees whole results, not
/// the page the model was shown.
pub const JUDGE_ROW_LIMIT: usize = 100_000;
/// Pragmas that only describe the schema; any other pragma given a value is refused.
const INTROSPECTION_PRAGMAS: [&str; 7] = [
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
];
/// SQLite VM steps a query may take before it is stopped (guards against runaway joins).
const STEP_BUDGET: u64 = 50_000_000;
/// Wall-clock budget of one query, whatever its step count.
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A database that cannot be set up (before anything runs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    #[error("{db}: cannot open SQLite: {message}")]
    Open { db: String, message: String },
    #[error("{db}: the seed SQL fails: {message}")]
    Seed { db: String, message: String },
    #[error("{db}: cannot make the database read-only and guarded: {message}")]
    Guard { db: String, message: String },
}

/// Why a query gave no rows; its text is what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

/// The seeded databases of one catalog.
pub struct Databases {
    pools: BTreeMap<String, Pool>,
}

/// Identical read-only connections to one seeded in-memory database.
struct Pool {
    name: String,
    seed: String,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    /// Runs `f` on an idle connection, seeding a new one when none is idle.
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> T) -> Result<T, DbError> {
        let taken = self.idle.lock().expect("pool lock").pop();
        let mut conn = match taken {
            Some(c) => c,
            None => open_seeded(&self.name, &self.seed)?,
        };
        let out = f(&mut conn);
        self.idle.lock().expect("pool lock").push(conn);
        Ok(out)
    }
}

/// A new in-memory database: the seed SQL run, then made read-only and guarded.
fn open_seeded(name: &str, seed: &str) -> Result<Connection, DbError> {
    let db = || name.to_string();
    let mut conn = Connection::open_with_flags(
        ":memory:",
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| DbError::Open {
        db: db(),
        message: e.to_string(),
    })?;
    conn.execute_batch(seed).map_err(|e| DbError::Seed {
        db: db(),
        message: e.to_string(),
    })?;
    conn.pragma_update(None, "query_only", true)
        .map_err(|e| DbError::Guard {
            db: db(),
            message: e.to_string(),
        })?;
    // SQLite calls ATTACH read-only; a model's SQL must not reach other files,
    // nor change a setting such as `query_only`.
    conn.authorizer(Some(|ctx: AuthContext<'_>| match ctx.action {
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
        AuthAction::Pragma {
            pragma_name,
            pragma_value: Some(_),
        } if !INTROSPECTION_PRAGMAS.contains(&pragma_name.to_ascii_lowercase().as_str()) => {
            Authorization::Deny
        }
        _ => Authorization::Allow,
    }))
    .map_err(|e| DbError::Guard {
        db: db(),
        message: e.to_string(),
    })?;
    Ok(conn)
}

/// The rows a query returned, with column names.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    pub truncated: bool,
}

impl Databases {
    /// Creates one in-memory SQLite per database, runs its seed SQL, and makes it
    /// read-only. A database without seed SQL gets its declared tables, empty.
    pub fn build(cat: &Catalog) -> Result<Databases, DbError> {
        let mut pools = BTreeMap::new();
        for db in &cat.databases {
            let seed = match &db.seed_sql {
                Some(sql) => sql.clone(),
                None => db
                    .tables
                    .iter()
                    .map(|t| {
                        let cols: Vec<String> = t
                            .columns
                            .iter()
                            .map(|c| format!("\"{}\" {}", c.name, c.ty))
                            .collect();
                        format!("CREATE TABLE \"{}\" ({});\n", t.name, cols.join(", "))
                    })
                    .collect(),
            };
            // The first connection is made now: a seed that fails is found before
            // anything runs.
            let first = open_seeded(&db.name, &seed)?;
            pools.insert(
                db.name.clone(),
                Pool {
                    name: db.name.clone(),
                    seed,
                    idle: Mutex::new(vec![first]),
                },
            );
        }
        Ok(Databases { pools })
    }

    /// For each database, the differences between the declared tables/columns and
    /// what the seed SQL created.
    pub fn schema_mismatches(&self, cat: &Catalog) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for db in &cat.databases {
            let Some(pool) = self.pools.get(&db.name) else {
                continue;
            };
            let mut problems = Vec::new();
            let actual = match pool
                .with(|c| tables_of(c).map_err(|e| e.to_string()))
                .map_err(|e| e.to_string())
            {
                Ok(Ok(t)) => t,
                Ok(Err(e)) | Err(e) => {
                    out.push((db.name.clone(), vec![e]));
                    continue;
                }
            };
            for t in &db.tables {
                match actual.get(&t.name) {
                    None => problems.push(format!(
                        "table `{}` is declared but the seed SQL does not create it",
                        t.name
                    )),
                    Some(cols) => {
                        let declared: Vec<&str> =
                            t.columns.iter().map(|c| c.name.as_str()).collect();
                        let real: Vec<&str> = cols.iter().map(String::as_str).collect();
                        if declared != real {
                            problems.push(format!(
                                "table `{}`: declared columns [{}] but the seed SQL creates [{}]",
                                t.name,
                                declared.join(", "),
                                real.join(", ")
                            ));
                        }
                    }
                }
            }
            for name in actual.keys() {
                if !db.tables.iter().any(|t| &t.name == name) {
                    problems.push(format!(
                        "the seed SQL creates table `{name}`, which is not declared"
                    ));
                }
            }
            if !problems.is_empty() {
                out.push((db.name.clone(), problems));
            }
        }
        out
    }

    /// Runs one read-only query. Writes, multiple statements and runaway queries are
    /// refused with a message for the model.
    pub fn query(&self, db: &str, sql: &str) -> Result<QueryResult, QueryError> {
        self.query_limited(db, sql, ROW_LIMIT)
    }

    /// [`Databases::query`] with another row limit (the SQL judge reads whole results).
    pub fn query_limited(
        &self,
        db: &str,
        sql: &str,
        limit: usize,
    ) -> Result<QueryResult, QueryError> {
        let pool = self
            .pools
            .get(db)
            .ok_or_else(|| QueryError(format!("unknown database `{db}`")))?;
        let sql = sql.trim().trim_end_matches(';').trim();
        if sql.is_empty() {
            return Err(QueryError("empty SQL".into()));
        }
        pool.with(|conn| {
            let started = std::time::Instant::now();
            let mut steps = 0u64;
            conn.progress_handler(
                1000,
                Some(move || {
                    steps += 1000;
                    steps > STEP_BUDGET || started.elapsed() > QUERY_TIMEOUT
                }),
            )
            .map_err(|e| e.to_string())?;
            let result = run(conn, sql, limit);
            let _ = conn.progress_handler(0, None::<fn() -> bool>);
            result
        })
        .map_err(|e| QueryError(e.to_string()))?
        .map_err(QueryError)
    }
}

fn run(conn: &Connection, sql: &str, limit: usize) -> Result<QueryResult, String> {
    let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
    if !stmt.readonly() {
        return Err("only read-only queries are allowed".into());
    }
    let columns: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let n = columns.len();
    let mut rows = stmt.query([]).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut truncated = false;
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        if out.len() == limit {
            truncated = true;
            break;
        }
        let mut r = Vec::with_capacity(n);
        for i in 0..n {
            r.push(match row.get_ref(i).map_err(|e| e.to_string())? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(i) => json!(i),
                ValueRef::Real(f) => json!(f),
                ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::String(format!("<{} bytes>", b.len())),
            });
        }
        out.push(r);
    }
    Ok(QueryResult {
        columns,
        rows: out,
        truncated,
    })
}

fn tables_of(conn: &Connection) -> rusqlite::Result<BTreeMap<String, Vec<String>>> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut out = BTreeMap::new();
    for n in names {
        let mut s = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
        let cols: Vec<String> = s.query_map([&n], |r| r.get(0))?.collect::<Result<_, _>>()?;
        out.insert(n, cols);
    }
    Ok(out)
}

/// The fixture answer of an executed call: the first `responses` entry for the
/// address whose `when` the arguments match, else one without `when`, else the tool's
/// own `response`, else a small default.
pub fn fixture_response(cat: &Catalog, address: &Address, args: &Value) -> Value {
    if let Some(r) = fixture_entry(cat, address, args) {
        return r.clone();
    }
    own_response(cat, address).unwrap_or_else(|| json!({"status": "ok"}))
}

/// Whether calls to `address` have any fixture answer besides the default.
pub fn has_fixture(cat: &Catalog, address: &Address) -> bool {
    cat.responses.iter().any(|r| &r.address == address) || own_response(cat, address).is_some()
}

/// Where the answer to a call comes from ([`fixture_response`]'s choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerSource {
    /// A `responses` entry whose `when` the arguments match.
    When,
    /// A `responses` entry without `when`: the address's default in this catalog.
    /// `any_args` when the fixture says the answer is right whatever the arguments.
    CatalogDefault { any_args: bool },
    /// The tool's own `response`.
    ToolDefault,
    /// No fixture at all: the small default (`{"status":"ok"}`).
    Nothing,
}

/// Where [`fixture_response`] takes its answer to a call of `address` with `args`.
pub fn answer_source(cat: &Catalog, address: &Address, args: &Value) -> AnswerSource {
    match fixture_match(cat, address, args) {
        Some(r) if !r.when.is_empty() => AnswerSource::When,
        Some(r) => AnswerSource::CatalogDefault {
            any_args: r.any_args,
        },
        None if own_response(cat, address).is_some() => AnswerSource::ToolDefault,
        None => AnswerSource::Nothing,
    }
}

fn fixture_entry<'c>(cat: &'c Catalog, address: &Address, args: &Value) -> Option<&'c Value> {
    fixture_match(cat, address, args).map(|r| &r.response)
}

/// The first `responses` entry for `address` whose `when` matches `args`, else the
/// first one without `when`.
fn fixture_match<'c>(
    cat: &'c Catalog,
    address: &Address,
    args: &Value,
) -> Option<&'c crate::catalog::FixtureResponse> {
    let schema = cat.schema_of(address).unwrap_or(Value::Null);
    let mut fallback = None;
    for r in cat.responses.iter().filter(|r| &r.address == address) {
        if r.when.is_empty() {
            fallback.get_or_insert(r);
        } else if crate::args::pinned_values_ok(&schema, &r.when, &BTreeMap::new(), args) {
            return Some(r);
        }
    }
    fallback
}

fn own_response(cat: &Catalog, address: &Address) -> Option<Value> {
    match cat.lookup(address) {
        Some(Target::Action(_, a)) => a.response.clone(),
        Some(Target::McpTool(_, t)) => t.response.clone(),
        Some(Target::Builtin(b)) => b.response.clone(),
        _ => None,
    }
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

pub(crate) fn normalize_cell(v: &Value) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Column, Database, Table};

    fn cat() -> Catalog {
        Catalog {
            databases: vec![Database {
                name: "hr".into(),
                description: String::new(),
                tables: vec![Table {
                    name: "people".into(),
                    description: String::new(),
                    columns: ["id", "name"]
                        .iter()
                        .map(|n| Column { name: n.to_string(), ty: "TEXT".into(), nullable: true, primary_key: false, description: String::new() })
                        .collect(),
                }],
                seed_sql: Some(
                    "CREATE TABLE people (id INTEGER, name TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 80) INSERT INTO people SELECT i, 'p' || i FROM n;".into(),
                ),
            }],
            ..Catalog::default()
        }
    }

    #[test]
    fn queries_are_read_only_and_limited() {
        let dbs = Databases::build(&cat()).unwrap();
        let r = dbs.query_limited("hr", "SELECT * FROM people", 50).unwrap();
        assert_eq!(r.rows.len(), 50);
        assert!(r.truncated);
        assert!(!dbs.query("hr", "SELECT * FROM people").unwrap().truncated);
        let e = dbs.query("hr", "DELETE FROM people").unwrap_err();
        assert!(e.0.contains("read-only"), "{e}");
        assert_eq!(
            dbs.query("hr", "SELECT count(*) FROM people").unwrap().rows[0][0],
            json!(80)
        );
        assert!(dbs.query("hr", "SELECT * FROM nope").is_err());
    }

    #[test]
    fn attach_and_setting_pragmas_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("other.db");
        let dbs = Databases::build(&cat()).unwrap();
        let e = dbs
            .query("hr", &format!("ATTACH DATABASE '{}' AS x", file.display()))
            .unwrap_err();
        assert!(e.0.contains("not authorized"), "{e}");
        assert!(!file.exists(), "ATTACH must not create a file");
        assert!(dbs.query("hr", "PRAGMA query_only = 0").is_err());
        assert!(
            dbs.query("hr", "DELETE FROM people").is_err(),
            "still read-only"
        );
        let cols = dbs.query("hr", "PRAGMA table_info(people)").unwrap();
        assert_eq!(cols.rows.len(), 2, "schema introspection still works");
        assert!(dbs.schema_mismatches(&cat()).is_empty());
    }

    #[test]
    fn the_judge_reads_past_the_row_limit() {
        let dbs = Databases::build(&cat()).unwrap();
        let r = dbs
            .query_limited("hr", "SELECT * FROM people", JUDGE_ROW_LIMIT)
            .unwrap();
        assert_eq!((r.rows.len(), r.truncated), (80, false));
    }

    #[test]
    fn runaway_queries_are_stopped() {
        let dbs = Databases::build(&cat()).unwrap();
        let e = dbs
            .query(
                "hr",
                "SELECT count(*) FROM people a, people b, people c, people d, people e",
            )
            .unwrap_err();
        assert!(e.0.contains("interrupt"), "{e}");
    }

    #[test]
    fn row_comparison_ignores_order_unless_asked() {
        let dbs = Databases::build(&cat()).unwrap();
        let a = dbs
            .query("hr", "SELECT id FROM people WHERE id < 4 ORDER BY id")
            .unwrap();
        let b = dbs
            .query("hr", "SELECT id FROM people WHERE id < 4 ORDER BY id DESC")
            .unwrap();
        assert!(same_rows(&a, &b, false));
        assert!(!same_rows(&a, &b, true));
        assert!(dbs.schema_mismatches(&cat()).is_empty());
    }
}
