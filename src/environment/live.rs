//! Live MCP servers: real processes answering a run's executed calls instead of
//! fixture responses.
//!
//! A scenario names how to start each live server ([`LiveSpec`], beside the committed
//! catalog file it includes); a run that is allowed to start them ([`Live`]) first
//! checks one instance's `tools/list` against that catalog ([`Live::check`]), then
//! gives every conversation (or single query) instances of its own ([`Instances`]):
//! a fresh process and MCP session per server, started at the first call that needs
//! it, in a fresh empty working directory, stopped when the conversation ends. A
//! started process gets a fixed, small environment — `PATH`, `HOME`, `LANG`, `TMPDIR`
//! from discbench's own, and the variables the scenario names — and nothing else, so
//! no API key reaches it unless named.
//!
//! A call the server answers is a result (an `isError` answer an error result); a
//! server that cannot be started, crashes, or does not answer within the timeout is
//! an infrastructure failure of that conversation ([`Instances::failure`]), and the
//! run goes on.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::catalog::Catalog;
use crate::mcp_client::live::{Launch, LiveProcess, LiveSession, Stopping, Target};

/// How long a live server may take to start (through `initialize`) and to answer one
/// request, unless the scenario says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The variables every started process gets from discbench's environment (when set).
pub const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// How a live server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A process per instance, over its stdin and stdout.
    Stdio,
    /// A Streamable HTTP endpoint, a session per instance: at `url`, or at the URL a
    /// process started once per run prints first.
    Http,
}

/// How to start (or reach) one live server, as the scenario says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveSpec {
    /// The server's name in the catalog (`mcp:<server>/…`).
    pub server: String,
    /// The program and its arguments (empty for a server at `url`). A program written
    /// with a `/` and relative is relative to the scenario file that names it; without
    /// one it is found on `PATH`.
    pub command: Vec<String>,
    /// A Streamable HTTP endpoint that is not started by the run.
    pub url: Option<String>,
    pub transport: Transport,
    /// The resource that holds the server's state (read to judge a turn by state).
    pub state: Option<String>,
    /// Where the scenario says it (file and field): servers of one `live` share a
    /// process started once per run (`transport: http`).
    #[serde(skip)]
    pub origin: String,
    /// Variables passed from discbench's environment besides [`BASE_ENV`].
    pub env: Vec<String>,
    /// Seconds to start, and per request.
    pub timeout: Duration,
    /// The directory of the file that names it.
    #[serde(skip)]
    pub base: PathBuf,
}

impl LiveSpec {
    /// The command as written (or the URL), for messages.
    pub fn shown(&self) -> String {
        match &self.url {
            Some(u) => u.clone(),
            None => self.command.join(" "),
        }
    }

    /// The endpoint of this server's instances at `base`: the instance named by
    /// the `instance` query parameter (the server's name), so that one endpoint can
    /// serve several servers' instances.
    fn session_url(&self, base: &str) -> String {
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}instance={}", encode(&self.server))
    }

    fn program(&self) -> OsString {
        let p = Path::new(&self.command[0]);
        if p.is_relative() && self.command[0].contains('/') {
            self.base.join(p).into_os_string()
        } else {
            p.as_os_str().to_owned()
        }
    }

    /// The environment the process gets: [`BASE_ENV`] and the named variables, from
    /// `vars` (discbench's own environment). A named variable that is not set is an
    /// error: the server would start without what the scenario says it needs.
    pub fn environment(
        &self,
        vars: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<BTreeMap<OsString, OsString>, String> {
        let mut env = BTreeMap::new();
        for k in BASE_ENV {
            if let Some(v) = vars(k) {
                env.insert(OsString::from(k), v);
            }
        }
        for k in &self.env {
            match vars(k) {
                Some(v) => {
                    env.insert(OsString::from(k), v);
                }
                None => {
                    return Err(format!(
                        "the live server `{}` is to get `{k}` from the environment, and `{k}` is not set",
                        self.server
                    ))
                }
            }
        }
        Ok(env)
    }
}

/// A query parameter's value, percent-encoded.
fn encode(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What a run records of a live server (`run.json`): how it was started, what it said
/// it is, and a hash of the tools it listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LiveInfo {
    pub server: String,
    pub command: String,
    /// `serverInfo.name` and `serverInfo.version` from its `initialize` answer.
    pub name: Option<String>,
    pub version: Option<String>,
    /// A content hash of its `tools/list` (every tool, as listed, in order).
    pub tools_hash: String,
}

/// Why a run's live servers failed their check at start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// A server could not be started or did not answer: the machine's or the
    /// server's fault.
    #[error("{0}")]
    Failed(String),
    /// The scenario's fault: the server answered with other tools than its committed
    /// catalog's, or it is to get a variable that is not set.
    #[error("{0}")]
    Differs(String),
}

/// Which of a conversation's two sets of instances: the agent's, or the reference's
/// (judging by state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Agent,
    Reference,
}

/// The file of a run directory that keeps the live answers (`run --record`).
pub const TAPE_FILE: &str = "live.jsonl";

/// The prefix of the infra error of a replay that finds no recorded live answer.
pub const REPLAY_MISS: &str = "no recorded live answer";

/// One exchange with a live server, as `--record` keeps it: a call (tool and
/// arguments, the answer's text) or a state read (its value), or how it failed.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
struct Exchange {
    /// The conversation's outcome key.
    key: String,
    side: Side,
    server: String,
    /// The tool called; absent for a state read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
    /// Marks the start of an attempt at the conversation (the first exchange of its
    /// instances): a rerun's exchanges replace an earlier attempt's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    start: bool,
}

/// What a run does with live answers besides using them: keeps them, or serves them
/// instead of any server.
enum Tape {
    /// The run's one tape file, shared by every scenario's servers: each exchange is
    /// written whole with one append.
    Record(Arc<Mutex<std::fs::File>>),
    Replay(Mutex<HashMap<(String, Side), std::collections::VecDeque<Exchange>>>),
}

/// A run's live servers, allowed to start.
pub struct Live {
    /// Recording or replaying the live answers, when the run does.
    tape: std::sync::OnceLock<Tape>,
    specs: Vec<LiveSpec>,
    /// Processes started once per run (`transport: http`), by origin, with their
    /// working directories.
    processes: Mutex<HashMap<String, (LiveProcess, tempfile::TempDir)>>,
    /// Sessions being stopped, with their working directories (removed once the
    /// process is gone), waited for at the end of the run.
    stopping: Mutex<Vec<(Stopping, Option<tempfile::TempDir>)>>,
    /// Where each instance's working directory is made.
    scratch: PathBuf,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").field("specs", &self.specs).finish()
    }
}

/// The protocol version asked for in `initialize`.
const VERSION: &str = crate::mcp_client::DEFAULT_PROTOCOL_VERSION;

impl Live {
    pub fn new(specs: Vec<LiveSpec>) -> Live {
        Live {
            tape: std::sync::OnceLock::new(),
            specs,
            processes: Mutex::new(HashMap::new()),
            stopping: Mutex::new(Vec::new()),
            scratch: std::env::temp_dir(),
        }
    }

    pub fn specs(&self) -> &[LiveSpec] {
        &self.specs
    }

    fn spec(&self, server: &str) -> Option<&LiveSpec> {
        self.specs.iter().find(|s| s.server == server)
    }

    /// How a process of `spec` is started, in `dir`.
    fn launch(&self, spec: &LiveSpec, dir: &Path) -> Result<Launch, String> {
        Ok(Launch {
            program: spec.program(),
            args: spec.command[1..].iter().map(OsString::from).collect(),
            env: spec.environment(&|k| std::env::var_os(k))?,
            cwd: dir.to_path_buf(),
            timeout: spec.timeout,
        })
    }

    fn scratch_dir(&self, spec: &LiveSpec) -> Result<tempfile::TempDir, String> {
        tempfile::Builder::new()
            .prefix("discbench-live-")
            .tempdir_in(&self.scratch)
            .map_err(|e| format!("cannot make a working directory for `{}`: {e}", spec.server))
    }

    /// Starts one instance of `spec`'s server: a process in a fresh working directory
    /// (removed when the instance stops), or a new session at its endpoint (starting
    /// the run's process for it first, once).
    fn start(&self, spec: &LiveSpec) -> Result<Instance, String> {
        let fail = |e: String| format!("live server `{}`: {e}", spec.server);
        let (target, dir) = match (spec.transport, &spec.url) {
            (Transport::Stdio, _) => {
                let dir = self.scratch_dir(spec).map_err(fail)?;
                let launch = self.launch(spec, dir.path()).map_err(fail)?;
                (Target::Process(launch), Some(dir))
            }
            (Transport::Http, Some(url)) => (
                Target::Url {
                    url: spec.session_url(url),
                    timeout: spec.timeout,
                },
                None,
            ),
            (Transport::Http, None) => {
                let mut processes = self.processes.lock().expect("processes");
                if !processes.contains_key(&spec.origin) {
                    // The run's one process for these servers keeps its directory
                    // until the run ends.
                    let dir = self.scratch_dir(spec).map_err(fail)?;
                    let launch = self.launch(spec, dir.path()).map_err(fail)?;
                    let p = LiveProcess::start(launch).map_err(fail)?;
                    processes.insert(spec.origin.clone(), (p, dir));
                }
                (
                    Target::Url {
                        url: spec.session_url(&processes[&spec.origin].0.url),
                        timeout: spec.timeout,
                    },
                    None,
                )
            }
        };
        let session = LiveSession::start(target, VERSION).map_err(fail)?;
        Ok(Instance {
            session: Some(session),
            dir,
        })
    }

    /// Starts one instance of every live server, reads its `tools/list`, and checks it
    /// against the committed catalog: the same tools, in any order, each with the same
    /// description and input schema. Returns what run.json records of each.
    pub fn check(&self, catalog: &Catalog) -> Result<Vec<LiveInfo>, CheckError> {
        let mut out = Vec::new();
        for spec in &self.specs {
            spec.environment(&|k| std::env::var_os(k))
                .map_err(CheckError::Differs)?;
            let inst = self.start(spec).map_err(CheckError::Failed)?;
            let session = inst.session.as_ref().expect("a started instance");
            let listed = session
                .tools()
                .map_err(|e| CheckError::Failed(format!("live server `{}`: {e}", spec.server)));
            let info = session.initialize.get("serverInfo").cloned();
            self.retire(inst);
            let listed = listed?;
            let server = catalog
                .mcp_servers
                .iter()
                .find(|s| s.name == spec.server)
                .ok_or_else(|| {
                    CheckError::Differs(format!("the catalog has no MCP server `{}`", spec.server))
                })?;
            let differences = differences(server, &listed);
            if !differences.is_empty() {
                return Err(CheckError::Differs(format!(
                    "the live server `{}` (`{}`) does not list the tools of its committed catalog:\n  - {}\ncapture it again with `discbench import mcp` if the server changed on purpose",
                    spec.server,
                    spec.shown(),
                    differences.join("\n  - ")
                )));
            }
            let s = |k: &str| {
                info.as_ref()
                    .and_then(|i| i.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            out.push(LiveInfo {
                server: spec.server.clone(),
                command: spec.shown(),
                name: s("name"),
                version: s("version"),
                // In name order: a server may list its tools in any order.
                tools_hash: {
                    let mut sorted = listed;
                    sorted.sort_by(|a, b| {
                        let n =
                            |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
                        n(a).cmp(&n(b))
                    });
                    crate::hash::content_hash(Value::Array(sorted).to_string().as_bytes())
                },
            });
        }
        Ok(out)
    }

    /// Instances of this run's servers, kept by no tape: none started until a call
    /// needs one.
    pub fn instances(self: &Arc<Self>) -> Instances {
        self.instances_for("", Side::Agent)
    }

    /// One conversation's instances of this run's servers (`key`: its outcome key),
    /// on its `side`: none started until a call needs one; under a replay, none ever.
    pub fn instances_for(self: &Arc<Self>, key: &str, side: Side) -> Instances {
        Instances {
            live: self.clone(),
            running: Mutex::new(HashMap::new()),
            failure: Mutex::new(None),
            results: Mutex::new(Vec::new()),
            key: key.to_string(),
            side,
            taped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Opens `dir`'s [`TAPE_FILE`] for appending, to be shared by every [`Live`] of
    /// the run ([`Live::record_to`]).
    pub fn tape_file(dir: &Path) -> std::io::Result<Arc<Mutex<std::fs::File>>> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(TAPE_FILE))?;
        Ok(Arc::new(Mutex::new(f)))
    }

    /// Keeps every live answer of the run in `file` (see [`Live::tape_file`]).
    pub fn record_to(&self, file: Arc<Mutex<std::fs::File>>) {
        let _ = self.tape.set(Tape::Record(file));
    }

    /// Serves the live answers recorded runs kept (each a run directory, or a file of
    /// one) instead of any server: `Ok(false)` when they kept none. A conversation
    /// recorded more than once (a resumed run's rerun) is served its last attempt.
    pub fn replay_from(&self, dirs: &[&Path]) -> Result<bool, String> {
        let mut map: HashMap<(String, Side), std::collections::VecDeque<Exchange>> = HashMap::new();
        let mut found = false;
        for dir in dirs {
            let dir = if dir.is_file() {
                dir.parent().unwrap_or(Path::new("."))
            } else {
                dir
            };
            let path = dir.join(TAPE_FILE);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            found = true;
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let x: Exchange = serde_json::from_str(line)
                    .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
                let queue = map.entry((x.key.clone(), x.side)).or_default();
                if x.start {
                    // A new attempt at this conversation: the earlier one is void.
                    queue.clear();
                } else {
                    queue.push_back(x);
                }
            }
        }
        let _ = self.tape.set(Tape::Replay(Mutex::new(map)));
        Ok(found)
    }

    /// Whether the run serves recorded answers (it starts nothing).
    pub fn is_replay(&self) -> bool {
        matches!(self.tape.get(), Some(Tape::Replay(_)))
    }

    /// Stops an instance without waiting for it; [`Live::finish`] waits.
    fn retire(&self, inst: Instance) {
        let Instance { session, dir } = inst;
        if let Some(t) = session.and_then(LiveSession::close_later) {
            let mut stopping = self.stopping.lock().expect("stopping");
            stopping.retain(|(t, _)| !t.is_done());
            stopping.push((t, dir));
        }
    }

    /// Waits until every instance this run started has stopped.
    pub fn finish(&self) {
        let threads = std::mem::take(&mut *self.stopping.lock().expect("stopping"));
        for (t, dir) in threads {
            t.wait();
            drop(dir);
        }
        let processes = std::mem::take(&mut *self.processes.lock().expect("processes"));
        for (_, (p, dir)) in processes {
            p.stop();
            drop(dir);
        }
    }
}

/// The committed catalog's tools against a live `tools/list`: what differs, said.
fn differences(server: &crate::catalog::McpServer, listed: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    let live: BTreeMap<&str, &Value> = listed
        .iter()
        .filter_map(|t| Some((t.get("name")?.as_str()?, t)))
        .collect();
    for tool in &server.tools {
        let Some(l) = live.get(tool.name.as_str()) else {
            out.push(format!("`{}` is not listed by the live server", tool.name));
            continue;
        };
        let description = l.get("description").and_then(Value::as_str).unwrap_or("");
        if description != tool.description {
            out.push(format!("`{}`: the description differs", tool.name));
        }
        let schema = l.get("inputSchema").cloned().unwrap_or(json!({}));
        if schema != *tool.input_schema {
            out.push(format!("`{}`: the input schema differs", tool.name));
        }
    }
    for name in live.keys() {
        if !server.tools.iter().any(|t| t.name == *name) {
            out.push(format!("`{name}` is listed live but not in the catalog"));
        }
    }
    out
}

/// One started server of one conversation.
struct Instance {
    session: Option<LiveSession>,
    /// The working directory of a process started for this instance alone.
    dir: Option<tempfile::TempDir>,
}

/// What an executed call of a live server answers.
pub trait LiveCalls: Send + Sync {
    /// Whether calls to `server`'s tools go to a live instance.
    fn serves(&self, server: &str) -> bool;
    /// The server's answer to `tool` with `args`, as the model reads it; `None` when
    /// the exchange failed (the failure is kept: [`Instances::failure`]).
    fn call(&self, server: &str, tool: &str, args: &Value) -> Option<String>;
}

/// One conversation's live instances.
pub struct Instances {
    live: Arc<Live>,
    running: Mutex<HashMap<String, Instance>>,
    failure: Mutex<Option<String>>,
    /// Every answer a live server gave, in call order (their text, before any cut).
    results: Mutex<Vec<String>>,
    /// The conversation's outcome key (empty: kept by no tape) and side.
    key: String,
    side: Side,
    /// Whether its attempt's start was kept already (`--record`).
    taped: std::sync::atomic::AtomicBool,
}

impl Instances {
    /// The first exchange that failed, if one did: the conversation's infra error.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().expect("failure").clone()
    }

    fn fail(&self, e: String) {
        self.failure.lock().expect("failure").get_or_insert(e);
    }

    /// Every answer the live servers gave so far, in call order.
    pub fn results(&self) -> Vec<String> {
        self.results.lock().expect("results").clone()
    }

    /// The live servers whose state can be read (they name a `state` resource), among
    /// `servers`.
    pub fn stateful<'s>(&self, servers: impl Iterator<Item = &'s str>) -> Vec<String> {
        servers
            .filter(|s| self.live.spec(s).is_some_and(|l| l.state.is_some()))
            .map(str::to_string)
            .collect()
    }

    /// The live servers with a `state` resource, by name.
    pub fn stateful_servers(&self) -> Vec<String> {
        self.live
            .specs
            .iter()
            .filter(|s| s.state.is_some())
            .map(|s| s.server.clone())
            .collect()
    }

    /// Runs `f` on the running instance of `server`, starting it first if needed;
    /// `None` (the failure kept) when it cannot start.
    fn with_instance<T>(&self, server: &str, f: impl FnOnce(&LiveSession) -> T) -> Option<T> {
        if self.failure().is_some() {
            return None;
        }
        let spec = self.live.spec(server)?;
        let mut running = self.running.lock().expect("running");
        if !running.contains_key(server) {
            match self.live.start(spec) {
                Ok(i) => {
                    running.insert(server.to_string(), i);
                }
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            }
        }
        let session = running[server]
            .session
            .as_ref()
            .expect("a running instance");
        Some(f(session))
    }

    /// The tape this conversation is kept by or served from, if any.
    fn tape(&self) -> Option<&Tape> {
        (!self.key.is_empty())
            .then(|| self.live.tape.get())
            .flatten()
    }

    /// Under a replay: the next recorded exchange of this conversation, which must be
    /// this one (`server`, and `tool` with `args` for a call); its answer, or its
    /// failure kept. `None` outside a replay.
    fn replayed(&self, server: &str, call: Option<(&str, &Value)>) -> Option<Option<Value>> {
        let Some(Tape::Replay(map)) = self.tape() else {
            return None;
        };
        if self.failure().is_some() {
            return Some(None);
        }
        let next = map
            .lock()
            .expect("tape")
            .get_mut(&(self.key.clone(), self.side))
            .and_then(|q| q.pop_front());
        let wanted = (call.map(|c| c.0.to_string()), call.map(|c| c.1.clone()));
        match next {
            Some(x) if x.server == server && (x.tool.clone(), x.args.clone()) == wanted => {
                if let Some(f) = x.failure {
                    self.fail(f);
                    return Some(None);
                }
                Some(x.answer)
            }
            _ => {
                let what = match call {
                    Some((tool, args)) => format!("the call {server}/{tool} {args}"),
                    None => format!("the state of {server}"),
                };
                self.fail(format!(
                    "{REPLAY_MISS}: the recording holds no answer to {what} here"
                ));
                Some(None)
            }
        }
    }

    /// Under `--record`: keeps an exchange and its answer (or its failure).
    fn keep(&self, server: &str, call: Option<(&str, &Value)>, answer: Option<Value>) {
        let Some(Tape::Record(out)) = self.tape() else {
            return;
        };
        let x = Exchange {
            key: self.key.clone(),
            side: self.side,
            server: server.to_string(),
            tool: call.map(|c| c.0.to_string()),
            args: call.map(|c| c.1.clone()),
            failure: answer.is_none().then(|| self.failure()).flatten(),
            answer,
            start: false,
        };
        let mut bytes = Vec::new();
        if !self.taped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let start = Exchange {
                server: String::new(),
                tool: None,
                args: None,
                answer: None,
                failure: None,
                start: true,
                ..x.clone()
            };
            let _ = serde_json::to_writer(&mut bytes, &start);
            bytes.push(b'\n');
        }
        let _ = serde_json::to_writer(&mut bytes, &x);
        bytes.push(b'\n');
        // One append of whole lines: exchanges of concurrent conversations never
        // interleave.
        let _ = out.lock().expect("tape").write_all(&bytes);
    }

    /// The state `server` exposes (its `state` resource: the JSON of its first
    /// text content, or the text itself when it is not JSON); `None` when it has no
    /// such resource or the read failed (the failure kept).
    pub fn state(&self, server: &str) -> Option<Value> {
        self.live.spec(server)?.state.as_ref()?;
        if let Some(r) = self.replayed(server, None) {
            return r;
        }
        let v = self.read_state(server);
        self.keep(server, None, v.clone());
        v
    }

    fn read_state(&self, server: &str) -> Option<Value> {
        let uri = self.live.spec(server)?.state.clone()?;
        match self.with_instance(server, |s| s.read(&uri))? {
            Ok(r) => {
                // A state that cannot be read as text would compare equal to anything
                // else unread: it is a failure, not an empty state.
                let Some(text) = r.pointer("/contents/0/text").and_then(Value::as_str) else {
                    self.fail(format!(
                        "live server `{server}`: {uri} has no text content to compare"
                    ));
                    return None;
                };
                Some(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())))
            }
            Err(e) => {
                self.fail(format!("live server `{server}`: reading {uri}: {e}"));
                None
            }
        }
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        let running = std::mem::take(&mut *self.running.lock().expect("running"));
        for (_, inst) in running {
            self.live.retire(inst);
        }
    }
}

impl LiveCalls for Instances {
    fn serves(&self, server: &str) -> bool {
        self.live.spec(server).is_some()
    }

    fn call(&self, server: &str, tool: &str, args: &Value) -> Option<String> {
        if let Some(r) = self.replayed(server, Some((tool, args))) {
            let text = r.as_ref().and_then(Value::as_str).map(str::to_string);
            if let Some(t) = &text {
                self.results.lock().expect("results").push(t.clone());
            }
            return text;
        }
        let text = self.call_live(server, tool, args);
        self.keep(server, Some((tool, args)), text.clone().map(Value::String));
        text
    }
}

impl Instances {
    fn call_live(&self, server: &str, tool: &str, args: &Value) -> Option<String> {
        let args = args.as_object().cloned().unwrap_or_default();
        match self.with_instance(server, |s| s.call(tool, args))? {
            Ok(result) => {
                let text = answer_text(&result);
                self.results.lock().expect("results").push(text.clone());
                Some(text)
            }
            Err(e) => {
                // A server that failed once is not asked again in this conversation.
                let gone = self.running.lock().expect("running").remove(server);
                if let Some(inst) = gone {
                    self.live.retire(inst);
                }
                self.fail(format!("live server `{server}`: {e}"));
                None
            }
        }
    }
}

/// A `CallToolResult` as the model reads it: the text of its text blocks, one per
/// line, any other block as its JSON; the structured content when there is no block;
/// an error result (`isError`) as `{"error": …}`, as discbench answers its own errors.
pub fn answer_text(result: &Value) -> String {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut parts: Vec<String> = blocks
        .iter()
        .map(
            |b| match (b.get("type").and_then(Value::as_str), b.get("text")) {
                (Some("text"), Some(Value::String(t))) => t.clone(),
                _ => b.to_string(),
            },
        )
        .collect();
    if parts.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            parts.push(s.to_string());
        }
    }
    let text = parts.join("\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        json!({ "error": text }).to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_text_and_errors_as_errors() {
        let ok = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
        assert_eq!(answer_text(&ok), "a\nb");
        let err = json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true});
        assert_eq!(answer_text(&err), r#"{"error":"no such repo"}"#);
        let structured = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(answer_text(&structured), r#"{"n":1}"#);
        let image =
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]});
        assert!(answer_text(&image).contains("image/png"));
    }

    #[test]
    fn the_environment_is_fixed_and_named_variables_must_be_set() {
        let spec = LiveSpec {
            server: "git".into(),
            command: vec!["mcp-server-git".into()],
            env: vec!["GIT_AUTHOR_NAME".into()],
            timeout: DEFAULT_TIMEOUT,
            base: PathBuf::new(),
            url: None,
            transport: Transport::Stdio,
            state: None,
            origin: String::new(),
        };
        let vars = |k: &str| match k {
            "PATH" => Some("/bin".into()),
            "OPENAI_API_KEY" => Some("secret".into()),
            "GIT_AUTHOR_NAME" => Some("A".into()),
            _ => None,
        };
        let env = spec.environment(&vars).unwrap();
        let keys: Vec<_> = env
            .keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(keys, ["GIT_AUTHOR_NAME", "PATH"]);
        let none = |k: &str| (k == "PATH").then(|| OsString::from("/bin"));
        let e = spec.environment(&none).unwrap_err();
        assert!(e.contains("`GIT_AUTHOR_NAME` is not set"), "{e}");
    }

    #[test]
    fn a_relative_program_with_a_slash_is_relative_to_the_scenario() {
        let spec = |c: &str| LiveSpec {
            server: "s".into(),
            command: vec![c.into()],
            env: vec![],
            timeout: DEFAULT_TIMEOUT,
            base: PathBuf::from("/scenarios"),
            url: None,
            transport: Transport::Stdio,
            state: None,
            origin: String::new(),
        };
        assert_eq!(spec("./bridge.py").program(), "/scenarios/./bridge.py");
        assert_eq!(spec("python3").program(), "python3");
        assert_eq!(spec("/usr/bin/env").program(), "/usr/bin/env");
    }

    #[test]
    fn an_instance_is_named_in_its_session_url() {
        let mut s = LiveSpec {
            server: "multi turn/0".into(),
            command: vec![],
            env: vec![],
            timeout: DEFAULT_TIMEOUT,
            base: PathBuf::new(),
            url: None,
            transport: Transport::Http,
            state: None,
            origin: String::new(),
        };
        assert_eq!(
            s.session_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp?instance=multi%20turn%2F0"
        );
        s.server = "a".into();
        assert_eq!(
            s.session_url("http://h/mcp?k=1"),
            "http://h/mcp?k=1&instance=a"
        );
    }
}
