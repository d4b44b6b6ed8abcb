//! Hostile SQL against the database guard, and a run of it at `--jobs 32`.
//!
//! `fixtures/hostile/statements.txt` holds statements a model could write to exhaust
//! the harness — values of gigabytes, recursion without end, joins that explode,
//! sorts and temporary tables past any memory, quadratic string functions, answers
//! of thousands of wide rows, writes, pragmas, ATTACH — each with what must happen
//! to it: refused (an error answer), interrupted (at the time or step limit), stopped
//! at the memory limit, cut (at the row or byte limit) or answered whole. Every one
//! must end within its time limit and leave the database as it was.
//!
//! The run tests start a fake OpenAI-compatible model on 127.0.0.1 that answers each
//! query of `fixtures/hostile/sql.yaml` with its statement, and run discbench on it:
//! every statement reaches the database and the SQL judge from many episodes at once.
//! The peak memory of that run is read from the kernel (`wait4`'s `ru_maxrss`). The
//! bounded one runs under `cargo test`; the `--jobs 32` one is `#[ignore]`d (run it
//! with `cargo test --release --test hostile -- --ignored --nocapture`).

#[path = "support/server.rs"]
mod server;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use discbench::environment::{Databases, SqlLimits};
use serde_json::{json, Value};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The statements with what must happen to each.
fn statements() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("fixtures/hostile/statements.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (kind, sql) = l.split_once('\t').expect("kind<TAB>statement");
            (kind.to_string(), expand(sql))
        })
        .collect()
}

/// `{{c*N}}` → the character `c` N times.
fn expand(sql: &str) -> String {
    let mut out = String::new();
    let mut rest = sql;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let j = rest[i..].find("}}").expect("closing }}") + i;
        let (c, n) = rest[i + 2..j].split_once('*').expect("{{c*N}}");
        out.push_str(&c.repeat(n.parse().unwrap()));
        rest = &rest[j + 2..];
    }
    out.push_str(rest);
    out
}

fn databases(limits: SqlLimits) -> Databases {
    let sc = discbench::scenario::load(&root().join("fixtures/hostile/sql.yaml")).unwrap();
    Databases::build_with(&sc.catalog, limits).unwrap()
}

/// Every hostile statement is refused, interrupted, stopped at the memory limit, cut
/// or answered whole as the corpus says, within its time limit and with an answer
/// within its byte limit; the database answers as before afterwards.
#[test]
fn hostile_statements_are_refused_or_bounded() {
    let limits = SqlLimits {
        timeout_ms: 1_000,
        ..SqlLimits::default()
    };
    let dbs = databases(limits);
    let all = statements();
    assert!(all.len() >= 40, "{} statements", all.len());
    let mut tally = std::collections::BTreeMap::<&str, usize>::new();
    for (kind, sql) in &all {
        let started = Instant::now();
        let r = dbs.query("hr", sql);
        let took = started.elapsed();
        let shown: String = sql.chars().take(90).collect();
        assert!(
            took < Duration::from_millis(limits.timeout_ms + 1_500),
            "{shown}: took {took:?}"
        );
        let got = match &r {
            Err(e) if e.0.starts_with("interrupted") => "interrupted",
            Err(e) if e.0.starts_with("out of memory") => "memory",
            Err(_) => "refused",
            Ok(q) if q.truncated => "cut",
            Ok(_) => "ok",
        };
        assert_eq!(got, kind, "{shown}: {r:?}");
        if let Ok(q) = &r {
            let bytes = serde_json::to_string(&q.rows).unwrap().len();
            assert!(
                bytes <= limits.answer_bytes,
                "{shown}: {bytes} bytes of rows"
            );
            assert!(q.rows.len() <= discbench::environment::ROW_LIMIT);
        }
        eprintln!("{took:>10.3?} {got:<12} {shown}");
        *tally.entry(got).or_default() += 1;
    }
    eprintln!("{} hostile statements: {tally:?}", all.len());
    for f in ["hostile.db", "hostile.txt"] {
        assert!(!root().join(f).exists(), "{f} was written");
    }
    // Nothing was changed, and every connection still answers.
    for _ in 0..4 {
        let r = dbs
            .query("hr", "SELECT count(*), max(name) FROM people")
            .unwrap();
        assert_eq!(r.rows[0], vec![json!(80), json!("person 9")]);
    }
}

/// The two statements that drove a server to 2.6 GB are refused at once, before
/// anything of their size is allocated.
#[test]
fn gigabyte_values_are_refused_before_they_are_made() {
    let dbs = databases(SqlLimits::default());
    for sql in [
        "SELECT randomblob(900000000)",
        "SELECT printf('%.*c', 900000000, 'x')",
    ] {
        let started = Instant::now();
        let e = dbs.query("hr", sql).unwrap_err();
        assert!(e.0.contains("too big"), "{e}");
        assert!(e.0.contains("at most 100000 bytes"), "{e}");
        assert!(started.elapsed() < Duration::from_millis(500), "{sql}");
    }
}

/// A recursive query that never ends is interrupted at its time limit, however many
/// steps it may still take; at its step limit, however much time it may still take.
#[test]
fn endless_queries_stop_at_their_limits() {
    let endless =
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM r";
    let dbs = databases(SqlLimits {
        timeout_ms: 300,
        max_steps: u64::MAX / 4,
        ..SqlLimits::default()
    });
    let started = Instant::now();
    let e = dbs.query("hr", endless).unwrap_err();
    let took = started.elapsed();
    assert_eq!(
        e.0,
        "interrupted: the query ran past its time limit (300 ms)"
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1_300),
        "{took:?}"
    );
    // Expensive steps, each bounded by the length limits: stopped near the limit too.
    let heavy = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(instr(printf('%.*c', 99000, 'a'), printf('%.*c', 49000, 'a') || 'b')) FROM r";
    let started = Instant::now();
    let e = dbs.query("hr", heavy).unwrap_err();
    assert!(e.0.contains("time limit"), "{e}");
    assert!(
        started.elapsed() < Duration::from_millis(1_300),
        "{:?}",
        started.elapsed()
    );

    let dbs = databases(SqlLimits {
        timeout_ms: 60_000,
        max_steps: 100_000,
        ..SqlLimits::default()
    });
    let e = dbs.query("hr", endless).unwrap_err();
    assert_eq!(
        e.0,
        "interrupted: the query ran past its step limit (100000 steps)"
    );
}

/// A query whose sort or temporary table outgrows the memory limit fails with an
/// error answer; what it held is given back and the next query runs.
#[test]
fn memory_past_the_limit_is_an_error_answer() {
    let dbs = databases(SqlLimits {
        memory_mib: 8,
        ..SqlLimits::default()
    });
    let union = "WITH RECURSIVE r(i, s) AS (SELECT 1, randomblob(50000) UNION SELECT i+1, randomblob(50000) FROM r) SELECT count(*) FROM r";
    for _ in 0..3 {
        let e = dbs.query("hr", union).unwrap_err();
        assert_eq!(e.0, "out of memory: a query may hold at most 8 MiB");
        let r = dbs.query("hr", "SELECT count(*) FROM people").unwrap();
        assert_eq!(r.rows[0][0], json!(80));
    }
    // A sort that fits is answered.
    let r = dbs
        .query("hr", "SELECT name FROM people ORDER BY name DESC LIMIT 1")
        .unwrap();
    assert_eq!(r.rows[0][0], json!("person 9"));
}

/// Rows stop at the answer's byte limit as they are read: the answer is cut, and the
/// model is told how many rows it holds.
#[test]
fn answers_stop_at_their_byte_limit() {
    let dbs = databases(SqlLimits {
        answer_bytes: 100_000,
        ..SqlLimits::default()
    });
    let r = dbs
        .query(
            "hr",
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 50) SELECT printf('%.*c', 30000, 'x') FROM r",
        )
        .unwrap();
    assert!(r.truncated);
    assert_eq!(
        r.rows.len(),
        3,
        "3 × 30 kB fit in 100 kB, a fourth does not"
    );
    // Escapes count: a control character is six bytes of JSON.
    let r = dbs
        .query(
            "hr",
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 50) SELECT printf('%.*c', 10000, char(1)) FROM r",
        )
        .unwrap();
    assert_eq!(r.rows.len(), 1, "60 kB of JSON each");
    assert!(serde_json::to_string(&r.rows).unwrap().len() <= 100_000);
    // Found by fuzzing: text that is not UTF-8 is written with a three-byte U+FFFD
    // for each bad sequence, and counted so (it once made 1.4 MB of a 1 MiB answer).
    let r = dbs
        .query("hr", "SELECT upper(randomblob(30000)) FROM people")
        .unwrap();
    assert!(r.truncated);
    let n = serde_json::to_string(&r.rows).unwrap().len();
    assert!(n <= 100_000, "{n} bytes");
    // The judge reads whole results, to its own limit.
    let r = dbs
        .judge(
            "hr",
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 50) SELECT printf('%.*c', 30000, 'x') FROM r",
        )
        .unwrap();
    assert_eq!((r.rows.len(), r.truncated), (50, false));
}

fn discbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_discbench"))
}

/// The fake model: query `hostile-NN` is answered with the NN-th statement (a call of
/// the database's query tool), then, once the tool has answered, with a sentence.
fn model(statements: Vec<String>) -> server::Server {
    server::serve_unrecorded(move |seen, _| {
        let messages = seen.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        let answered = messages.iter().any(|m| m["role"] == "tool");
        let message = if answered {
            json!({"role": "assistant", "content": "Done."})
        } else {
            let user = messages
                .iter()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
                .unwrap_or("");
            let n: usize = user
                .split_whitespace()
                .find_map(|w| w.parse().ok())
                .unwrap_or(1);
            let sql = &statements[(n - 1) % statements.len()];
            let tool = seen.body["tools"]
                .as_array()
                .and_then(|t| {
                    t.iter()
                        .filter_map(|t| t["function"]["name"].as_str())
                        .find(|n| n.ends_with("__query"))
                })
                .unwrap_or("hr__query")
                .to_string();
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{n}"), "type": "function",
                "function": {"name": tool, "arguments": json!({"sql": sql}).to_string()}
            }]})
        };
        server::Reply::Json(
            200,
            vec![],
            json!({"id": "x", "object": "chat.completion", "model": "hostile",
                   "choices": [{"index": 0, "message": message,
                                "finish_reason": if answered { "stop" } else { "tool_calls" }}],
                   "usage": usage}),
        )
    })
}

/// What one run of the hostile scenario did.
struct Hostile {
    status: std::process::ExitStatus,
    peak_kib: i64,
    took: Duration,
    outcomes: Vec<Value>,
    stderr: String,
}

/// Runs the hostile scenario against the fake model with `jobs` and `repeat`, and
/// reads the run's peak memory from the kernel.
// The child is reaped by `wait4`, which also gives its peak memory.
#[allow(clippy::zombie_processes)]
fn hostile_run(jobs: usize, repeat: usize, extra: &[&str]) -> Hostile {
    let statements: Vec<String> = statements().into_iter().map(|(_, s)| s).collect();
    let server = model(statements);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let child = discbench()
        .arg("run")
        .arg(root().join("fixtures/hostile/sql.yaml"))
        .args([
            "--model",
            "openai:hostile",
            "--mode",
            "legacy",
            "--no-progress",
        ])
        .args(["--jobs", &jobs.to_string(), "--repeat", &repeat.to_string()])
        .args(["--run-id", "hostile", "--out"])
        .arg(dir.path())
        .args(extra)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "sk-hostile-test")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
        s
    });
    let mut status = 0;
    // SAFETY: `rusage` is plain data; `wait4` fills it for the child this test started.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    let took = started.elapsed();
    let status = std::os::unix::process::ExitStatusExt::from_raw(status);
    let outcomes = std::fs::read_to_string(dir.path().join("hostile/outcomes.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Hostile {
        status,
        peak_kib: usage.ru_maxrss,
        took,
        outcomes,
        stderr: reader.join().unwrap(),
    }
}

/// Checks a hostile run: it finished, every episode is an outcome, the model's calls
/// were executed and answered, none was an infrastructure error.
fn check_run(h: &Hostile, episodes: usize) {
    assert!(h.status.success(), "{:?}\n{}", h.status, h.stderr);
    assert_eq!(h.outcomes.len(), episodes, "{}", h.stderr);
    for o in &h.outcomes {
        assert!(o["infra_error"].is_null(), "{o}");
        let calls = o["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{o}");
        assert_eq!(calls[0]["effect"], "executed", "{o}");
    }
}

/// A bounded hostile run: every statement from four episodes at once.
#[test]
fn a_hostile_run_finishes_with_every_outcome() {
    let h = hostile_run(4, 1, &["--sql-timeout-ms", "1000"]);
    check_run(&h, 45);
    eprintln!(
        "hostile run, --jobs 4, 45 episodes: {:.1} s, peak RSS {} MiB",
        h.took.as_secs_f64(),
        h.peak_kib / 1024
    );
    assert!(h.peak_kib < 1024 * 1024, "peak RSS {} KiB", h.peak_kib);
}

/// The stated bound: 180 hostile episodes at `--jobs 32` with the default limits stay
/// under 1 GiB of peak RSS (docs/src/robustness.md publishes the measured figure).
#[test]
#[ignore = "a long run: cargo test --release --test hostile -- --ignored --nocapture"]
fn hostile_run_at_jobs_32_stays_within_its_memory() {
    let h = hostile_run(32, 4, &[]);
    check_run(&h, 180);
    eprintln!(
        "hostile run, --jobs 32, 180 episodes: {:.1} s, peak RSS {} MiB",
        h.took.as_secs_f64(),
        h.peak_kib / 1024
    );
    assert!(h.peak_kib < 1024 * 1024, "peak RSS {} KiB", h.peak_kib);
}

/// A seed that never ends, or that fills memory, is stopped at its own limits (16
/// times a query's): a bad scenario file is an error, not a hang.
#[test]
fn endless_and_huge_seeds_stop_at_their_limits() {
    use discbench::catalog::{Catalog, Database};
    let cat = |seed: &str| Catalog {
        databases: vec![Database {
            name: "hr".into(),
            description: String::new(),
            tables: Vec::new(),
            seed_sql: Some(seed.into()),
        }],
        ..Catalog::default()
    };
    let limits = SqlLimits {
        timeout_ms: 50,
        memory_mib: 4,
        ..SqlLimits::default()
    };
    let started = Instant::now();
    let e = Databases::build_with(
        &cat("CREATE TABLE t(i); WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) INSERT INTO t SELECT i FROM r;"),
        limits,
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "hr: the seed SQL fails: interrupted: the seed ran past its time limit (800 ms)"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The memory case gets a time limit it does not reach first: making 64 MiB of
    // random blobs in SQLite built without optimisation took longer than the 800 ms
    // above on a loaded 2-core machine (CI failed so).
    let e = Databases::build_with(
        &cat("CREATE TABLE t(b); WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 10000) INSERT INTO t SELECT randomblob(100000) FROM r;"),
        SqlLimits {
            timeout_ms: 1_000,
            ..limits
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "hr: the seed SQL fails: out of memory: a seed may hold at most 64 MiB"
    );
}

/// The limits are flags, recorded in run.json with their defaults; a resume with
/// another value is refused, naming the flag; a value that cannot work is bad input.
#[test]
fn sql_limits_are_flags_recorded_in_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let o = discbench()
        .arg("run")
        .arg(root().join("fixtures/snapshot/tiny.yaml"))
        .args(["--model", "oracle", "--mode", "legacy", "--no-progress"])
        .args([
            "--sql-timeout-ms",
            "1234",
            "--sql-memory",
            "32",
            "--run-id",
            "r",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r/run.json")).unwrap())
            .unwrap();
    assert_eq!(
        run["settings"]["protocol"]["sql"],
        json!({"max_length": 100000, "max_pattern": 1000, "memory_mib": 32,
               "answer_bytes": 1048576, "timeout_ms": 1234, "max_steps": 50000000})
    );
    let o = discbench()
        .args([
            "run",
            "--no-progress",
            "--sql-timeout-ms",
            "999",
            "--resume",
        ])
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--sql-timeout-ms 999 (the run used 1234)"),
        "{err}"
    );
    let o = discbench()
        .args(["run", "--no-progress", "--resume"])
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for bad in [["--sql-memory", "0"], ["--sql-max-length", "10"]] {
        let o = discbench()
            .arg("run")
            .arg(root().join("fixtures/snapshot/tiny.yaml"))
            .args(bad)
            .args(["--no-progress", "--out"])
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(bad[0]), "{err}");
    }
}
