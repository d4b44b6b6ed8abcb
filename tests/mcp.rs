//! Real MCP both ways, with real processes: `import mcp` against a real server
//! installed from PyPI, and its failures (a command that does not exist, a server
//! that exits, hangs or answers garbage) with their exit codes and messages.
//!
//! The Python packages (`tests/mcp/requirements.txt`, every version pinned) go into
//! a virtualenv under `CARGO_TARGET_TMPDIR/mcp-venv`, made once and kept while the
//! requirements stay the same. Without python3 or the package registry the tests
//! that need it say they were skipped; under `CI` that is a failure (`.ci/run` runs
//! on a machine with python3 and pip).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn discbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_discbench"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The virtualenv holding the pinned Python packages, or `None` (the test then says
/// it was skipped) where it cannot be made outside CI.
fn venv() -> Option<&'static Path> {
    static VENV: OnceLock<Option<PathBuf>> = OnceLock::new();
    VENV.get_or_init(|| match make_venv() {
        Ok(p) => Some(p),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the MCP tests need python3 and PyPI in CI: {why}"
            );
            None
        }
    })
    .as_deref()
}

fn make_venv() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-venv");
    let wanted = std::fs::read_to_string(root().join("tests/mcp/requirements.txt"))
        .map_err(|e| e.to_string())?;
    let marker = dir.join("discbench-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(dir);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
    }
    let run = |c: &mut Command| -> Result<(), String> {
        let o = c.output().map_err(|e| format!("{c:?}: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{c:?} failed: {}", text(&o)))
        }
    };
    run(Command::new("python3").arg("-m").arg("venv").arg(&dir))?;
    run(Command::new(dir.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "-r",
        ])
        .arg(root().join("tests/mcp/requirements.txt")))?;
    std::fs::write(&marker, wanted).map_err(|e| e.to_string())?;
    Ok(dir)
}

macro_rules! need_venv {
    () => {
        match venv() {
            Some(v) => v,
            None => {
                eprintln!(
                    "SKIPPED: python3 with pip and PyPI are needed to install tests/mcp/requirements.txt"
                );
                return;
            }
        }
    };
}

/// `mcp-server-time` from PyPI, imported, is the committed catalog byte for byte (it
/// was captured from that version, asking for protocol 2025-06-18, in UTC), and the
/// file it wrote validates as a dump scenarios can include.
#[test]
fn import_reproduces_the_committed_catalog_of_a_real_server() {
    let venv = need_venv!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("time.tools.json");
    let o = discbench()
        .args(["import", "mcp", "--protocol-version", "2025-06-18", "--out"])
        .arg(&out)
        .arg("--")
        .arg(venv.join("bin/mcp-server-time"))
        .env("TZ", "Etc/UTC")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("mcp-time 2026.10.19 (2025-06-18): 2 tools"),
        "{}",
        text(&o)
    );
    let committed = std::fs::read(root().join("fixtures/catalogs/mcp-server-time.tools.json"));
    assert!(
        std::fs::read(&out).unwrap() == committed.unwrap(),
        "the import differs from fixtures/catalogs/mcp-server-time.tools.json"
    );
    let o = discbench().arg("validate").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));

    // `--name` renames the server and names the default file; `-` writes to stdout.
    let o = discbench()
        .current_dir(dir.path())
        .args(["import", "mcp", "--name", "clock", "--"])
        .arg(venv.join("bin/mcp-server-time"))
        .env("TZ", "Etc/UTC")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("clock.tools.json")).unwrap())
            .unwrap();
    assert_eq!(v["serverInfo"]["name"], "clock");
    // The newest version with a handshake is asked for by default; this server has it.
    assert_eq!(v["protocolVersion"], "2025-11-25");
    let o = discbench()
        .args(["import", "mcp", "--out", "-", "--"])
        .arg(venv.join("bin/mcp-server-time"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), 2);
}

/// A command that cannot start is bad input (exit 2); a server that exits early,
/// hangs or answers what is not MCP is an infrastructure failure (exit 3) within the
/// timeout, and the message carries the end of its stderr.
#[test]
fn import_failures_are_clear_and_bounded() {
    let import = |timeout: &str, script: &str| {
        let started = Instant::now();
        let o = discbench()
            .args(["import", "mcp", "--out", "-", "--timeout", timeout])
            .args(["--", "sh", "-c", script])
            .output()
            .unwrap();
        (o, started.elapsed())
    };
    let o = discbench()
        .args(["import", "mcp", "--", "/no/such/server"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("cannot start `/no/such/server`"),
        "{}",
        text(&o)
    );
    let o = discbench().args(["import", "mcp"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    let (o, _) = import(
        "10",
        "echo 'loading config' >&2; echo 'fatal: no token' >&2; exit 4",
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("exited (exit status: 4) before it finished answering"),
        "{t}"
    );
    assert!(t.contains("| fatal: no token"), "{t}");

    let (o, took) = import("1", "echo 'waiting forever' >&2; sleep 60");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("did not finish answering within 1 s"), "{t}");
    assert!(t.contains("| waiting forever"), "{t}");
    // The timeout, the grace after stdin closes, SIGTERM: nowhere near the sleep.
    assert!(took < Duration::from_secs(15), "took {took:?}");

    let (o, _) = import("10", "echo 'Server ready on stdio'; echo '{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":7}'; sleep 60");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("failed as an MCP server: initialize"), "{t}");
    assert!(
        t.contains(
            "1 line(s) to stdout that are not JSON-RPC, the first: \"Server ready on stdio\""
        ),
        "{t}"
    );
    assert!(o.stdout.is_empty(), "nothing is written on failure: {t}");
}
