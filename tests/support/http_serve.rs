//! A `serve --transport http` process on a free loopback port, as the MCP and fuzz
//! tests start one: the URL it printed, SIGTERM to stop it, and no process left
//! behind by a test that fails.

// Each user needs only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};

/// A running server and the URL of its endpoint.
pub struct HttpServer {
    child: Child,
    pub url: String,
    err: BufReader<ChildStderr>,
}

impl HttpServer {
    /// `serve SCENARIO --transport http --listen 127.0.0.1:0 ARGS…`, with `--record DIR`
    /// when given; returns once the server printed its URL.
    pub fn start(scenario: &Path, args: &[&str], record: Option<&Path>) -> HttpServer {
        let mut c = Command::new(env!("CARGO_BIN_EXE_discbench"));
        c.arg("serve")
            .arg(scenario)
            .args(["--transport", "http", "--listen", "127.0.0.1:0"])
            .args(args);
        if let Some(dir) = record {
            c.arg("--record").arg(dir);
        }
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let url = loop {
            let mut l = String::new();
            assert!(
                err.read_line(&mut l).unwrap() > 0,
                "serve ended before it listened"
            );
            if let Some(i) = l.find("http://") {
                break l[i..].trim().to_string();
            }
        };
        HttpServer { child, url, err }
    }

    /// The URL without the endpoint's path.
    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// SIGTERM, then the exit status and the rest of stderr.
    pub fn stop(mut self) -> (ExitStatus, String) {
        let o = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .output()
            .unwrap();
        assert!(o.status.success(), "kill: {o:?}");
        let status = self.child.wait().unwrap();
        let mut rest = String::new();
        self.err.read_to_string(&mut rest).unwrap();
        (status, rest)
    }
}

/// A test that fails leaves no server behind (it would hold whatever the test process
/// held open, and run on).
impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
