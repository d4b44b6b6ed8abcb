//! A live session with a real MCP server over stdio, for runs: the server started as
//! a child process in a process group of its own (watched by the [`reaper`](super::reaper)
//! so that it dies with the run, SIGKILL included), initialized with `rmcp`, then
//! asked `tools/list`, `tools/call` and `resources/read` as the run needs, and stopped
//! as the MCP specification says (stdin closed, then SIGTERM, then SIGKILL to the
//! group) when the session is closed.
//!
//! Each session runs on a thread of its own with a single-threaded async runtime, so
//! that callers ask synchronously — a strategy answers a call synchronously — from any
//! thread, under any runtime or none.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ReadResourceRequestParams,
};
use rmcp::ServiceExt;
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::sync::mpsc;

use super::reaper::reaper;
use super::stdio::{stop, StderrTail};

/// How a live server is started.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program and its arguments.
    pub program: OsString,
    pub args: Vec<OsString>,
    /// The whole environment the process gets (nothing is inherited).
    pub env: BTreeMap<OsString, OsString>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// How long starting (through `initialize`) and each request may take.
    pub timeout: Duration,
}

impl Launch {
    /// The command as a person would type it, for messages.
    pub fn shown(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

enum Job {
    Tools(std_mpsc::Sender<Result<Vec<Value>, String>>),
    Call(
        String,
        Map<String, Value>,
        std_mpsc::Sender<Result<Value, String>>,
    ),
    Read(String, std_mpsc::Sender<Result<Value, String>>),
}

/// A started server with an initialized MCP session.
pub struct LiveSession {
    jobs: Option<mpsc::UnboundedSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The raw `initialize` result (`serverInfo`, `protocolVersion`, …).
    pub initialize: Value,
    timeout: Duration,
    shown: String,
    tail: StderrTail,
}

impl LiveSession {
    /// Starts the server and initializes a session with it (asking for `version`),
    /// within the launch's timeout.
    pub fn start(launch: Launch, version: &str) -> Result<LiveSession, String> {
        let shown = launch.shown();
        let (jobs, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let tail = StderrTail::default();
        let timeout = launch.timeout;
        let version = super::protocol_version(version).ok_or("unknown protocol version")?;
        let thread = {
            let tail = tail.clone();
            std::thread::Builder::new()
                .name("live-mcp".into())
                .spawn(move || serve(launch, version, rx, ready_tx, tail))
                .map_err(|e| format!("cannot start a thread for `{shown}`: {e}"))?
        };
        let mut session = LiveSession {
            jobs: Some(jobs),
            thread: Some(thread),
            initialize: Value::Null,
            timeout,
            shown: shown.clone(),
            tail,
        };
        // The thread bounds the start by the timeout itself; a little more here.
        match ready_rx.recv_timeout(timeout + Duration::from_secs(5)) {
            Ok(Ok(init)) => {
                session.initialize = init;
                Ok(session)
            }
            Ok(Err(e)) => Err(session.failed(e)),
            Err(_) => Err(session.failed(format!(
                "`{shown}` did not start within {} s",
                timeout.as_secs_f64()
            ))),
        }
    }

    /// Every tool the server lists (all pages), as JSON.
    pub fn tools(&self) -> Result<Vec<Value>, String> {
        let (tx, rx) = std_mpsc::channel();
        self.ask(Job::Tools(tx), rx, "tools/list")
    }

    /// `tools/call`: the server's `CallToolResult` as JSON. An error result
    /// (`isError`) is a result; `Err` is a failed exchange (the server crashed, hung
    /// past the timeout, or answered what is not MCP).
    pub fn call(&self, tool: &str, args: Map<String, Value>) -> Result<Value, String> {
        let (tx, rx) = std_mpsc::channel();
        self.ask(Job::Call(tool.to_string(), args, tx), rx, "tools/call")
    }

    /// `resources/read`: the server's `ReadResourceResult` as JSON.
    pub fn read(&self, uri: &str) -> Result<Value, String> {
        let (tx, rx) = std_mpsc::channel();
        self.ask(Job::Read(uri.to_string(), tx), rx, "resources/read")
    }

    fn ask<T>(
        &self,
        job: Job,
        rx: std_mpsc::Receiver<Result<T, String>>,
        what: &str,
    ) -> Result<T, String> {
        let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        if !sent {
            return Err(self.failed(format!("`{}` has stopped", self.shown)));
        }
        let wait = || rx.recv_timeout(self.timeout + Duration::from_secs(1));
        // A worker of a multi-threaded runtime lets the others go on while it waits.
        let got = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        match got {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.failed(format!("{what}: {e}"))),
            Err(_) => Err(self.failed(format!(
                "`{}` did not answer {what} within {} s",
                self.shown,
                self.timeout.as_secs_f64()
            ))),
        }
    }

    /// A failure's message with the end of what the server wrote to stderr.
    fn failed(&self, message: String) -> String {
        let tail = self.tail.text();
        if tail.trim().is_empty() {
            message
        } else {
            let lines: Vec<String> = tail.lines().map(|l| format!("  | {l}")).collect();
            format!(
                "{message}\nthe server's stderr ended with:\n{}",
                lines.join("\n")
            )
        }
    }

    /// Stops the server and waits until it is stopped (a few seconds at most).
    pub fn close(mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Stops the server without waiting: the returned thread ends when it is stopped.
    pub fn close_later(mut self) -> Option<std::thread::JoinHandle<()>> {
        self.jobs.take();
        self.thread.take()
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        // The thread stops the server on its own once the channel closes.
        self.jobs.take();
    }
}

/// The session's thread: starts the server, initializes, answers jobs until the
/// channel closes, then stops the server.
fn serve(
    launch: Launch,
    version: rmcp::model::ProtocolVersion,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    ready: std_mpsc::Sender<Result<Value, String>>,
    tail: StderrTail,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot start a runtime: {e}")));
            return;
        }
    };
    let shown = launch.shown();
    rt.block_on(async move {
        let mut cmd = Command::new(&launch.program);
        cmd.args(&launch.args)
            .env_clear()
            .envs(&launch.env)
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let watcher = reaper();
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = ready.send(Err(format!("cannot start `{shown}`: {e}")));
                return;
            }
        };
        let pgid = child.id();
        if let (Some(w), Some(p)) = (watcher, pgid) {
            w.watch(p);
        }
        let stderr_task = {
            let mut err = child.stderr.take().expect("stderr is piped");
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tail.push(&buf[..n]);
                }
            })
        };
        let reader = child.stdout.take().expect("stdout is piped");
        let writer = child.stdin.take().expect("stdin is piped");
        let mut config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("discbench", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = version;
        let started = tokio::time::timeout(launch.timeout, config.serve((reader, writer))).await;
        let client = match started {
            Ok(Ok(c)) => Some(c),
            Ok(Err(e)) => {
                let _ = ready.send(Err(format!("`{shown}` failed to initialize: {e}")));
                None
            }
            Err(_) => {
                let _ = ready.send(Err(format!(
                    "`{shown}` did not initialize within {} s",
                    launch.timeout.as_secs_f64()
                )));
                None
            }
        };
        if let Some(client) = client {
            let init = client
                .peer_info()
                .and_then(|i| serde_json::to_value(i).ok())
                .unwrap_or(Value::Null);
            if ready.send(Ok(init)).is_ok() {
                let peer = client.peer().clone();
                while let Some(job) = jobs.recv().await {
                    let t = launch.timeout;
                    match job {
                        Job::Tools(reply) => {
                            let r = tokio::time::timeout(t, peer.list_all_tools()).await;
                            let _ = reply.send(flatten(r, |tools| {
                                tools
                                    .iter()
                                    .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
                                    .collect()
                            }));
                        }
                        Job::Call(name, args, reply) => {
                            let params = CallToolRequestParams::new(name).with_arguments(args);
                            let r = tokio::time::timeout(t, peer.call_tool(params)).await;
                            let _ = reply.send(flatten(r, |res| {
                                serde_json::to_value(res).unwrap_or(Value::Null)
                            }));
                        }
                        Job::Read(uri, reply) => {
                            let params = ReadResourceRequestParams::new(uri);
                            let r = tokio::time::timeout(t, peer.read_resource(params)).await;
                            let _ = reply.send(flatten(r, |res| {
                                serde_json::to_value(res).unwrap_or(Value::Null)
                            }));
                        }
                    }
                }
            }
            // Closing the client closes the server's stdin.
            let _ = client.cancel().await;
        }
        stop(&mut child).await;
        if let (Some(w), Some(p)) = (watcher, pgid) {
            w.forget(p);
        }
        let _ = tokio::time::timeout(Duration::from_millis(500), stderr_task).await;
    });
}

/// A timed exchange's outcome as the caller reads it.
fn flatten<T, U, E: std::fmt::Display>(
    r: Result<Result<T, E>, tokio::time::error::Elapsed>,
    f: impl FnOnce(&T) -> U,
) -> Result<U, String> {
    match r {
        Ok(Ok(v)) => Ok(f(&v)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".to_string()),
    }
}
