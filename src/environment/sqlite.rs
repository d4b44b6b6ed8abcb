//! One embedded SQLite database per catalog database, built from its seed SQL and then made
//! read-only, answering `query` calls with at most a row limit (by default
//! [`ROW_LIMIT`], FIM One's default `max_rows`).
//!
//! [`Databases`] is shared by every episode of a scenario, however many run at once:
//! each database is a small pool of identical read-only in-memory connections. A
//! query takes an idle connection (or seeds a new one), runs, and gives it back; the
//! pool's lock is held only to take and return a connection, never during a query
//! or across a model call.
//!
//! What a model's SQL may cost is bounded before anything is built ([`SqlLimits`],
//! flags recorded in `run.json`): SQLite's own limits refuse a string, blob, row, SQL
//! text or LIKE/GLOB pattern past its length (`SQLITE_LIMIT_LENGTH`,
//! `SQLITE_LIMIT_SQL_LENGTH`, `SQLITE_LIMIT_LIKE_PATTERN_LENGTH`) before allocating
//! it; a memory guard in SQLite's allocator refuses any allocation that would take one
//! query's heap past its budget (temporary tables and sorts are kept in memory, so
//! the guard sees them); a progress handler stops a query past its time or step
//! limit; and the rows read back are counted in bytes as they are read, so an answer
//! stops growing at its limit (cut, with a note) instead of being cut after it was
//! built.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::heap;
use super::rows::QueryResult;
use crate::catalog::Catalog;

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
/// Bytes of rows the SQL judge reads of one query (it compares whole results, but a
/// hostile query must not make it hold more than this).
pub const JUDGE_BYTE_LIMIT: usize = 16 << 20;
/// SQLite VM steps between two looks at the clock and the step count. Small, so that a
/// query of expensive steps (each bounded by the length limits) stops close to its
/// time limit.
const PROGRESS_PERIOD: u64 = 10;
/// A seed gets this many times a query's time and memory limits.
const SEED_FACTOR: u64 = 16;
/// What JSON adds around each cell of an answer (quotes, comma, indentation), counted
/// against the answer's byte limit.
const CELL_OVERHEAD: usize = 16;

/// What one query may cost: SQLite's length limits, its heap, its time and steps, and
/// the bytes of the rows read back. Recorded in `run.json` (`protocol.sql`); each is a
/// flag of `run`, `sweep` and `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SqlLimits {
    /// Bytes of the largest string, blob or row a query may make, and of its SQL text
    /// (`SQLITE_LIMIT_LENGTH`, `SQLITE_LIMIT_SQL_LENGTH`); past it the query fails
    /// before the value is allocated.
    pub max_length: usize,
    /// Bytes of a LIKE or GLOB pattern (`SQLITE_LIMIT_LIKE_PATTERN_LENGTH`): matching
    /// costs the pattern's length times the text's, in one step the clock cannot stop.
    pub max_pattern: usize,
    /// MiB of heap SQLite may hold for one query beyond what its connection held
    /// before it (sorts and temporary tables included); past it the query fails.
    pub memory_mib: usize,
    /// Bytes of rows one answer to the model carries (cells as JSON, with their
    /// punctuation); the rows past it are cut, as past the row limit.
    pub answer_bytes: usize,
    /// Wall-clock milliseconds one query may run.
    pub timeout_ms: u64,
    /// SQLite VM steps one query may take (guards against runaway joins).
    pub max_steps: u64,
}

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            max_length: 100_000,
            max_pattern: 1_000,
            memory_mib: 64,
            answer_bytes: 1 << 20,
            timeout_ms: 5_000,
            max_steps: 50_000_000,
        }
    }
}

impl SqlLimits {
    /// Why these limits cannot work, naming the flag.
    pub fn check(&self) -> Result<(), String> {
        let ok = |v: u64, min: u64, max: u64, flag: &str| {
            if v < min || v > max {
                Err(format!("{flag} {v}: from {min} to {max}"))
            } else {
                Ok(())
            }
        };
        // SQLite's own ceilings (SQLITE_MAX_LENGTH, SQLITE_MAX_LIKE_PATTERN_LENGTH):
        // past them it would lower the limit silently, and run.json would say otherwise.
        ok(
            self.max_length as u64,
            1_000,
            1_000_000_000,
            "--sql-max-length",
        )?;
        ok(self.max_pattern as u64, 1, 50_000, "--sql-max-pattern")?;
        ok(self.memory_mib as u64, 1, 1 << 20, "--sql-memory")?;
        ok(
            self.answer_bytes as u64,
            1_000,
            1 << 40,
            "--sql-answer-bytes",
        )?;
        ok(self.timeout_ms, 1, 24 * 3600 * 1000, "--sql-timeout-ms")?;
        ok(self.max_steps, 1_000, u64::MAX / 2, "--sql-max-steps")?;
        Ok(())
    }

    fn memory_bytes(&self) -> i64 {
        (self.memory_mib as i64).saturating_mul(1 << 20)
    }
}

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
    limits: SqlLimits,
}

/// Identical read-only connections to one seeded in-memory database.
struct Pool {
    name: String,
    seed: String,
    limits: SqlLimits,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    /// Runs `f` on an idle connection, seeding a new one when none is idle. The
    /// connection goes back to the pool unless `f` says to drop it (`false`).
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> (T, bool)) -> Result<T, DbError> {
        let taken = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match taken {
            Some(c) => c,
            None => open_seeded(&self.name, &self.seed, &self.limits)?,
        };
        let (out, keep) = f(&mut conn);
        if keep {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
        }
        Ok(out)
    }
}

/// Pragmas whose setting is the whole process's, not one connection's.
const PROCESS_PRAGMAS: &[&str] = &[
    "hard_heap_limit",
    "soft_heap_limit",
    "temp_store_directory",
    "data_store_directory",
];

/// A new in-memory database: the seed SQL run, then made read-only, limited and
/// guarded.
fn open_seeded(name: &str, seed: &str, limits: &SqlLimits) -> Result<Connection, DbError> {
    let db = || name.to_string();
    heap::install().map_err(|message| DbError::Guard { db: db(), message })?;
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
    // No database but this one, ever: a seed (a scenario file, perhaps someone
    // else's) could otherwise `ATTACH` or `VACUUM INTO` a path and write a file
    // anywhere the process may. Both need a database slot, and there is none.
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)
        .map_err(|e| DbError::Guard {
            db: db(),
            message: e.to_string(),
        })?;
    // Nor may a seed change what the whole process shares: the heap limits every
    // database lives under, or where SQLite puts files. (The query guard below
    // replaces this authorizer once the seed has run.)
    conn.authorizer(Some(|ctx: AuthContext<'_>| match ctx.action {
        AuthAction::Pragma { pragma_name, .. }
            if PROCESS_PRAGMAS.contains(&pragma_name.to_ascii_lowercase().as_str()) =>
        {
            Authorization::Deny
        }
        _ => Authorization::Allow,
    }))
    .map_err(|e| DbError::Guard {
        db: db(),
        message: e.to_string(),
    })?;
    // A seed is the scenario author's, not a model's, but a bad file must not hang or
    // exhaust the machine either: it gets SEED_FACTOR times a query's time and memory.
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_millis(limits.timeout_ms.saturating_mul(SEED_FACTOR));
    conn.progress_handler(1_000, Some(move || started.elapsed() > deadline))
        .map_err(|e| DbError::Seed {
            db: db(),
            message: e.to_string(),
        })?;
    let guard = heap::Guard::begin(limits.memory_bytes().saturating_mul(SEED_FACTOR as i64));
    let seeded = conn.execute_batch(seed);
    let refused = guard.end();
    let _ = conn.progress_handler(0, None::<fn() -> bool>);
    seeded.map_err(|e| DbError::Seed {
        db: db(),
        message: match e.sqlite_error_code() {
            Some(ErrorCode::OperationInterrupted) => format!(
                "interrupted: the seed ran past its time limit ({} ms)",
                deadline.as_millis()
            ),
            _ if refused => format!(
                "out of memory: a seed may hold at most {} MiB",
                limits.memory_mib.saturating_mul(SEED_FACTOR as usize)
            ),
            _ => e.to_string(),
        },
    })?;
    // Sorts and temporary tables in memory, where the heap guard counts them (in
    // temporary files they would grow unseen).
    conn.pragma_update(None, "temp_store", "MEMORY")
        .and_then(|_| conn.pragma_update(None, "query_only", true))
        .map_err(|e| DbError::Guard {
            db: db(),
            message: e.to_string(),
        })?;
    let clamp = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
    for (limit, value) in [
        (Limit::SQLITE_LIMIT_LENGTH, clamp(limits.max_length)),
        (Limit::SQLITE_LIMIT_SQL_LENGTH, clamp(limits.max_length)),
        (
            Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH,
            clamp(limits.max_pattern),
        ),
    ] {
        conn.set_limit(limit, value).map_err(|e| DbError::Guard {
            db: db(),
            message: e.to_string(),
        })?;
    }
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

impl Databases {
    /// Creates one in-memory SQLite per database, runs its seed SQL, and makes it
    /// read-only, with the default [`SqlLimits`]. A database without seed SQL gets its
    /// declared tables, empty.
    pub fn build(cat: &Catalog) -> Result<Databases, DbError> {
        Databases::build_with(cat, SqlLimits::default())
    }

    /// [`Databases::build`] with the given limits.
    pub fn build_with(cat: &Catalog, limits: SqlLimits) -> Result<Databases, DbError> {
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
            let first = open_seeded(&db.name, &seed, &limits)?;
            pools.insert(
                db.name.clone(),
                Pool {
                    name: db.name.clone(),
                    seed,
                    limits,
                    idle: Mutex::new(vec![first]),
                },
            );
        }
        Ok(Databases { pools, limits })
    }

    /// The limits every query runs under.
    pub fn limits(&self) -> &SqlLimits {
        &self.limits
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
                .with(|c| (tables_of(c).map_err(|e| e.to_string()), true))
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

    /// Runs one read-only query. Writes, multiple statements and queries past a limit
    /// are refused with a message for the model.
    pub fn query(&self, db: &str, sql: &str) -> Result<QueryResult, QueryError> {
        self.query_limited(db, sql, ROW_LIMIT)
    }

    /// [`Databases::query`] with another row limit; the answer also stops at the
    /// limits' `answer_bytes`.
    pub fn query_limited(
        &self,
        db: &str,
        sql: &str,
        limit: usize,
    ) -> Result<QueryResult, QueryError> {
        self.query_bounded(db, sql, limit, self.limits.answer_bytes)
    }

    /// A query as the SQL judge runs it: whole results, up to [`JUDGE_ROW_LIMIT`] rows
    /// and [`JUDGE_BYTE_LIMIT`] bytes, not the page the model was shown.
    pub fn judge(&self, db: &str, sql: &str) -> Result<QueryResult, QueryError> {
        self.query_bounded(db, sql, JUDGE_ROW_LIMIT, JUDGE_BYTE_LIMIT)
    }

    /// One query: at most `rows` rows and `bytes` bytes of cells read back, within
    /// the limits' time, steps, lengths and memory.
    pub fn query_bounded(
        &self,
        db: &str,
        sql: &str,
        rows: usize,
        bytes: usize,
    ) -> Result<QueryResult, QueryError> {
        let pool = self
            .pools
            .get(db)
            .ok_or_else(|| QueryError(format!("unknown database `{db}`")))?;
        let sql = sql.trim().trim_end_matches(';').trim();
        if sql.is_empty() {
            return Err(QueryError("empty SQL".into()));
        }
        let limits = self.limits;
        pool.with(|conn| {
            let started = std::time::Instant::now();
            let timeout = std::time::Duration::from_millis(limits.timeout_ms);
            // Why the handler stopped the query: 0 it did not, else a `Stop`.
            let stopped = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(0));
            let mut steps = 0u64;
            let why = stopped.clone();
            if let Err(e) = conn.progress_handler(
                PROGRESS_PERIOD as std::ffi::c_int,
                Some(move || {
                    steps += PROGRESS_PERIOD;
                    let stop = if steps > limits.max_steps {
                        Some(Stop::Steps)
                    } else if started.elapsed() > timeout {
                        Some(Stop::Time)
                    } else {
                        None
                    };
                    why.store(
                        stop.map_or(0, |s| s as u8),
                        std::sync::atomic::Ordering::Relaxed,
                    );
                    stop.is_some()
                }),
            ) {
                return (Err(e.to_string()), true);
            }
            let guard = heap::Guard::begin(limits.memory_bytes());
            let result = run(conn, sql, rows, bytes);
            let refused = guard.end();
            let _ = conn.progress_handler(0, None::<fn() -> bool>);
            let stop = match stopped.load(std::sync::atomic::Ordering::Relaxed) {
                1 => Some(Stop::Time),
                2 => Some(Stop::Steps),
                _ => None,
            };
            let result = result.map_err(|e| explain(e, stop, refused, &limits));
            // A connection that ran out of memory is dropped, not trusted again.
            (result, !refused)
        })
        .map_err(|e| QueryError(e.to_string()))?
        .map_err(QueryError)
    }
}

/// Why the progress handler stopped a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Time = 1,
    Steps = 2,
}

/// What the model is told when a query fails: SQLite's message, and for a limit,
/// which limit.
fn explain(e: Failed, stop: Option<Stop>, refused: bool, l: &SqlLimits) -> String {
    let e = match e {
        Failed::Refused(why) => return why.to_string(),
        Failed::Sql(e) => e,
    };
    let code = e.sqlite_error_code();
    match (code, stop) {
        (Some(ErrorCode::OperationInterrupted), Some(Stop::Time)) => format!(
            "interrupted: the query ran past its time limit ({} ms)",
            l.timeout_ms
        ),
        (Some(ErrorCode::OperationInterrupted), Some(Stop::Steps)) => format!(
            "interrupted: the query ran past its step limit ({} steps)",
            l.max_steps
        ),
        (Some(ErrorCode::TooBig), _) => format!(
            "{e}: a string, blob or row may hold at most {} bytes, a SQL text as many",
            l.max_length
        ),
        (Some(ErrorCode::OutOfMemory), _) if refused => format!(
            "out of memory: a query may hold at most {} MiB",
            l.memory_mib
        ),
        _ if refused => format!(
            "{e} (the query needed more than the {} MiB a query may hold)",
            l.memory_mib
        ),
        _ => {
            let msg = e.to_string();
            if msg.contains("LIKE or GLOB pattern too complex") {
                format!("{msg}: a pattern may hold at most {} bytes", l.max_pattern)
            } else {
                msg
            }
        }
    }
}

/// The bytes a cell adds to an answer: its JSON text and punctuation, at most.
fn cell_bytes(v: &ValueRef<'_>) -> usize {
    CELL_OVERHEAD
        + match v {
            ValueRef::Null => 4,
            ValueRef::Integer(_) | ValueRef::Real(_) => 24,
            // As the text will be written: each invalid UTF-8 sequence becomes one
            // U+FFFD (three bytes), quotes and backslashes two, control characters up
            // to six.
            ValueRef::Text(t) => t
                .utf8_chunks()
                .map(|c| {
                    let valid: usize = c
                        .valid()
                        .bytes()
                        .map(|b| match b {
                            b'"' | b'\\' => 2,
                            0..=0x1f => 6,
                            _ => 1,
                        })
                        .sum();
                    valid + if c.invalid().is_empty() { 0 } else { 3 }
                })
                .sum(),
            // `"<N bytes>"`
            ValueRef::Blob(b) => 11 + b.len().checked_ilog10().unwrap_or(0) as usize,
        }
}

/// Why [`run`] gave no rows.
enum Failed {
    Sql(rusqlite::Error),
    Refused(&'static str),
}

impl From<rusqlite::Error> for Failed {
    fn from(e: rusqlite::Error) -> Failed {
        Failed::Sql(e)
    }
}

fn run(conn: &Connection, sql: &str, limit: usize, bytes: usize) -> Result<QueryResult, Failed> {
    let mut stmt = conn.prepare(sql)?;
    if !stmt.readonly() {
        return Err(Failed::Refused("only read-only queries are allowed"));
    }
    let columns: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let n = columns.len();
    let mut used: usize = columns.iter().map(|c| c.len() + CELL_OVERHEAD).sum();
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    let mut truncated = false;
    while let Some(row) = rows.next()? {
        if out.len() == limit {
            truncated = true;
            break;
        }
        // The row's size is known before any of it is copied out of SQLite.
        let mut size = 0usize;
        for i in 0..n {
            size += cell_bytes(&row.get_ref(i)?);
        }
        if used + size > bytes {
            truncated = true;
            break;
        }
        used += size;
        let mut r = Vec::with_capacity(n);
        for i in 0..n {
            r.push(match row.get_ref(i)? {
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

#[cfg(test)]
mod tests {
    use super::super::rows::same_rows;
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
    fn a_seed_writes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        for sql in [
            "ATTACH DATABASE '{}' AS x; CREATE TABLE x.t (a);",
            "CREATE TABLE people (id, name); VACUUM INTO '{}';",
        ] {
            let file = dir.path().join("other.db");
            let mut c = cat();
            c.databases[0].seed_sql = Some(sql.replace("{}", &file.display().to_string()));
            let Err(e) = Databases::build(&c) else {
                panic!("{sql}: seeded");
            };
            let e = e.to_string();
            assert!(e.contains("too many attached databases"), "{sql}: {e}");
            assert!(!file.exists(), "{sql} wrote {}", file.display());
        }
        let mut c = cat();
        c.databases[0].seed_sql = Some("PRAGMA hard_heap_limit = 4096;".into());
        let Err(e) = Databases::build(&c) else {
            panic!("a seed set the process's heap limit");
        };
        assert!(e.to_string().contains("not authorized"), "{e}");
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
