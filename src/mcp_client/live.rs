//! Live sessions with real MCP servers, for runs: a server started as a child process
//! over stdio (in a process group of its own, watched by the [`reaper`](super::reaper)
//! so that it dies with the run, SIGKILL included), or a session at a Streamable HTTP
//! endpoint (one a run started, [`LiveProcess`], or any other). A session is
//! initialized with `rmcp`, then asked `tools/list`, `tools/call` and
//! `resources/read` as the run needs; closing it closes the session (stdin, then
//! SIGTERM and SIGKILL to the group, for a process; `DELETE`, over HTTP).
//!
//! Every session runs as a task of one background runtime of its own ([`hub`]), so
//! that callers ask synchronously — a strategy answers a call synchronously — from
//! any thread, under any runtime or none, and HTTP sessions share one client.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc as std_mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ReadResourceRequestParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::http::HttpTransport;
use super::reaper::reaper;
use super::stdio::{drain_stderr, stop, StderrTail};

/// The runtime every live session and started server runs on.
fn hub() -> &'static tokio::runtime::Runtime {
    static HUB: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    HUB.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("live-mcp")
            .enable_all()
            .build()
            .expect("the live servers' runtime starts")
    })
}

/// The HTTP client every live session over HTTP shares (loopback mostly: no TLS
/// roots are loaded until a `https` endpoint needs them).
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client builds")
    })
}

/// How a process is started.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program and its arguments.
    pub program: OsString,
    pub args: Vec<OsString>,
    /// The whole environment the process gets (nothing is inherited).
    pub env: BTreeMap<OsString, OsString>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// How long starting (through `initialize`, or to its URL line) and each request
    /// may take.
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

    /// The command, ready to spawn: its own environment, directory and process group,
    /// its three streams piped.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .env_clear()
            .envs(&self.env)
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        cmd
    }
}

/// Where a session is opened.
#[derive(Debug, Clone)]
pub enum Target {
    /// A process started for this session alone, spoken to over its stdio.
    Process(Launch),
    /// A Streamable HTTP endpoint: each session is a new MCP session there.
    Url { url: String, timeout: Duration },
}

impl Target {
    fn timeout(&self) -> Duration {
        match self {
            Target::Process(l) => l.timeout,
            Target::Url { timeout, .. } => *timeout,
        }
    }

    fn shown(&self) -> String {
        match self {
            Target::Process(l) => l.shown(),
            Target::Url { url, .. } => url.clone(),
        }
    }
}

/// A started child: its group watched, its stderr drained into a tail.
struct Started {
    child: Child,
    pgid: Option<u32>,
    stderr_task: tokio::task::JoinHandle<()>,
}

impl Started {
    fn spawn(launch: &Launch, tail: &StderrTail) -> Result<Started, String> {
        let mut child = launch
            .command()
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", launch.shown()))?;
        let pgid = child.id();
        if let (Some(w), Some(p)) = (reaper(), pgid) {
            w.watch(p);
        }
        let stderr_task = drain_stderr(&mut child, tail);
        Ok(Started {
            child,
            pgid,
            stderr_task,
        })
    }

    async fn stop(mut self) {
        // A process whose stdin discbench still holds (one reached over HTTP) is told
        // to stop by its stdin closing first, as any other.
        drop(self.child.stdin.take());
        stop(&mut self.child).await;
        if let (Some(w), Some(p)) = (reaper(), self.pgid) {
            w.forget(p);
        }
        let _ = tokio::time::timeout(Duration::from_millis(500), self.stderr_task).await;
    }
}

/// A failure's message with the end of what a server wrote to stderr.
fn with_tail(message: String, tail: &StderrTail) -> String {
    let tail = tail.text();
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

/// A server a run started once and reaches over Streamable HTTP: its first line on
/// stdout is its endpoint's URL.
pub struct LiveProcess {
    started: Option<Started>,
    /// The endpoint it printed.
    pub url: String,
    tail: StderrTail,
}

impl LiveProcess {
    /// Starts the process and reads the URL it prints first, within the timeout.
    pub fn start(launch: Launch) -> Result<LiveProcess, String> {
        let tail = StderrTail::default();
        let t = tail.clone();
        let shown = launch.shown();
        let timeout = launch.timeout;
        let (tx, rx) = std_mpsc::channel();
        // On the hub, waited for from here: callable from inside a runtime too.
        hub().spawn(async move {
            let r = async {
                let mut started = Started::spawn(&launch, &t)?;
                let out = started.child.stdout.take().expect("stdout is piped");
                let mut lines = tokio::io::BufReader::new(out).lines();
                let first = tokio::time::timeout(launch.timeout, lines.next_line()).await;
                let url = match first {
                    Ok(Ok(Some(l)))
                        if l.trim().starts_with("http://") || l.trim().starts_with("https://") =>
                    {
                        l.trim().to_string()
                    }
                    Ok(Ok(Some(l))) => Err(format!(
                        "`{shown}` printed {l:?} first, not the URL of its endpoint"
                    ))?,
                    Ok(_) => Err(format!("`{shown}` exited before it printed its URL"))?,
                    Err(_) => Err(format!(
                        "`{shown}` printed no URL within {} s",
                        launch.timeout.as_secs_f64()
                    ))?,
                };
                // Whatever it prints later is read and dropped, so that it never blocks.
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                Ok::<_, String>((started, url))
            }
            .await;
            let _ = tx.send(r);
        });
        let r = wait(|| rx.recv_timeout(timeout + Duration::from_secs(5)))
            .unwrap_or_else(|_| Err("it did not start in time".to_string()));
        match r {
            Ok((started, url)) => Ok(LiveProcess {
                started: Some(started),
                url,
                tail,
            }),
            Err(e) => Err(with_tail(e, &tail)),
        }
    }

    /// The end of its stderr, for messages.
    pub fn tail(&self) -> String {
        self.tail.text()
    }

    /// Stops it (stdin closed, SIGTERM, SIGKILL to its group) and waits.
    pub fn stop(mut self) {
        if let Some(s) = self.started.take() {
            let (tx, rx) = std_mpsc::channel();
            hub().spawn(async move {
                s.stop().await;
                let _ = tx.send(());
            });
            let _ = wait(|| rx.recv());
        }
    }
}

impl Drop for LiveProcess {
    fn drop(&mut self) {
        if let Some(s) = self.started.take() {
            hub().spawn(s.stop());
        }
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

/// An initialized MCP session with a live server.
pub struct LiveSession {
    jobs: Option<mpsc::UnboundedSender<Job>>,
    /// Reports when the session (and a process started for it) has stopped.
    done: Option<std_mpsc::Receiver<()>>,
    /// The raw `initialize` result (`serverInfo`, `protocolVersion`, …).
    pub initialize: Value,
    timeout: Duration,
    shown: String,
    tail: StderrTail,
}

/// A session being stopped: [`Stopping::wait`] returns once it has.
pub struct Stopping(std_mpsc::Receiver<()>);

impl Stopping {
    /// Waits until the session has stopped (a few seconds at most).
    pub fn wait(self) {
        let _ = self.0.recv();
    }

    /// Whether it has stopped already.
    pub fn is_done(&self) -> bool {
        !matches!(self.0.try_recv(), Err(std_mpsc::TryRecvError::Empty))
    }
}

impl LiveSession {
    /// Opens a session (starting the process, for a [`Target::Process`]) and
    /// initializes it, asking for protocol `version`, within the target's timeout.
    pub fn start(target: Target, version: &str) -> Result<LiveSession, String> {
        let shown = target.shown();
        let timeout = target.timeout();
        let version = super::protocol_version(version).ok_or("unknown protocol version")?;
        let (jobs, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let (done_tx, done_rx) = std_mpsc::channel();
        let tail = StderrTail::default();
        let t = tail.clone();
        hub().spawn(async move {
            serve(target, version, rx, ready_tx, t).await;
            let _ = done_tx.send(());
        });
        let mut session = LiveSession {
            jobs: Some(jobs),
            done: Some(done_rx),
            initialize: Value::Null,
            timeout,
            shown: shown.clone(),
            tail,
        };
        // The task bounds the start by the timeout itself; a little more here.
        match wait(|| ready_rx.recv_timeout(timeout + Duration::from_secs(5))) {
            Ok(Ok(init)) => {
                session.initialize = init;
                Ok(session)
            }
            Ok(Err(e)) => Err(with_tail(e, &session.tail)),
            Err(_) => Err(with_tail(
                format!("`{shown}` did not start within {} s", timeout.as_secs_f64()),
                &session.tail,
            )),
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
            return Err(with_tail(
                format!("`{}` has stopped", self.shown),
                &self.tail,
            ));
        }
        match wait(|| rx.recv_timeout(self.timeout + Duration::from_secs(1))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(with_tail(format!("{what}: {e}"), &self.tail)),
            Err(_) => Err(with_tail(
                format!(
                    "`{}` did not answer {what} within {} s",
                    self.shown,
                    self.timeout.as_secs_f64()
                ),
                &self.tail,
            )),
        }
    }

    /// Closes the session without waiting: the server stops on its own.
    pub fn close_later(mut self) -> Option<Stopping> {
        self.jobs.take();
        self.done.take().map(Stopping)
    }

    /// Closes the session and waits until it (and its process) stopped.
    pub fn close(self) {
        if let Some(s) = self.close_later() {
            s.wait();
        }
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        // The task closes the session on its own once the channel closes.
        self.jobs.take();
    }
}

/// Blocks on `f`, letting the other workers of a multi-threaded runtime go on.
fn wait<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The session's task: opens and initializes, answers jobs until the channel closes,
/// then closes the session (and stops a process started for it).
async fn serve(
    target: Target,
    version: rmcp::model::ProtocolVersion,
    jobs: mpsc::UnboundedReceiver<Job>,
    ready: std_mpsc::Sender<Result<Value, String>>,
    tail: StderrTail,
) {
    let timeout = target.timeout();
    let shown = target.shown();
    let mut config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("discbench", env!("CARGO_PKG_VERSION")),
    );
    config.protocol_version = version;
    let fail = |ready: &std_mpsc::Sender<Result<Value, String>>, e: String| {
        let _ = ready.send(Err(e));
    };
    match target {
        Target::Process(launch) => {
            let mut started = match Started::spawn(&launch, &tail) {
                Ok(s) => s,
                Err(e) => return fail(&ready, e),
            };
            let reader = started.child.stdout.take().expect("stdout is piped");
            let writer = started.child.stdin.take().expect("stdin is piped");
            match tokio::time::timeout(timeout, config.serve((reader, writer))).await {
                Ok(Ok(client)) => answer(client, jobs, ready, timeout).await,
                Ok(Err(e)) => fail(&ready, format!("`{shown}` failed to initialize: {e}")),
                Err(_) => fail(
                    &ready,
                    format!(
                        "`{shown}` did not initialize within {} s",
                        timeout.as_secs_f64()
                    ),
                ),
            }
            started.stop().await;
        }
        Target::Url { url, .. } => {
            let transport = HttpTransport::live(client().clone(), &url);
            match tokio::time::timeout(timeout, config.serve(transport)).await {
                Ok(Ok(client)) => answer(client, jobs, ready, timeout).await,
                Ok(Err(e)) => fail(&ready, format!("{url} failed to initialize: {e}")),
                Err(_) => fail(
                    &ready,
                    format!(
                        "{url} did not initialize within {} s",
                        timeout.as_secs_f64()
                    ),
                ),
            }
        }
    }
}

/// Reports the session ready, then answers its jobs until the channel closes, and
/// closes it (for a process: its stdin; over HTTP: `DELETE`).
async fn answer<S: rmcp::service::Service<RoleClient>>(
    client: RunningService<RoleClient, S>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    ready: std_mpsc::Sender<Result<Value, String>>,
    t: Duration,
) {
    let init = client
        .peer_info()
        .and_then(|i| serde_json::to_value(i).ok())
        .unwrap_or(Value::Null);
    if ready.send(Ok(init)).is_ok() {
        let peer = client.peer().clone();
        while let Some(job) = jobs.recv().await {
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
                    // A JSON-RPC error the server answers (invalid arguments, an unknown
                    // tool) is its answer to the call, an error result; a transport that
                    // failed or timed out is not.
                    let r = match r {
                        Ok(Err(rmcp::ServiceError::McpError(e))) => Ok(serde_json::json!({
                            "content": [{"type": "text", "text": e.message}],
                            "isError": true,
                        })),
                        r => flatten(r, |res| serde_json::to_value(res).unwrap_or(Value::Null)),
                    };
                    let _ = reply.send(r);
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
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
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
