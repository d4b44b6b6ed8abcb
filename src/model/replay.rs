//! Record and replay (DESIGN §6).
//!
//! `run --record` wraps every backend in a [`Recording`]: each answer is appended to
//! the run directory's `recordings.jsonl` under a hash of its request — the model's
//! name, the purpose, the system prompt, the tool definitions exactly as counted, the
//! messages, and the work item's repeat index — together with a digest of the request
//! (hashes of its parts) so that a later miss can say what changed. No request is
//! stored in full, and no key or header ever is: recordings hold what the model said.
//!
//! `--model replay:PATH` (a run directory made with `--record`, or its
//! `recordings.jsonl`) answers from a recording, one backend per recorded model name,
//! so a replayed run's outcomes carry the same names. It is strict: a request with no
//! recorded answer is an error naming the work item and where its request differs
//! from the nearest recorded one (same work item and request), and the run exits 3.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::backend::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
use crate::hash::content_hash;
use crate::record::{reader, OutcomeKey, Usage};
use crate::wire::{Context, Message, Response};

/// The file inside a run directory.
pub const FILE: &str = "recordings.jsonl";
/// The message prefix of a replay miss (the run exits 3 when an outcome carries it).
pub const MISS: &str = "no recorded answer";

/// Hashes of a request's parts, for telling what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    pub purpose: String,
    /// The sampling parameters sent (`null` for none, and for mock models).
    #[serde(default)]
    pub parameters: serde_json::Value,
    pub system: String,
    /// A hash of every tool definition as counted, in order (one hash keeps a
    /// recording of a 200-tool catalog small).
    pub tools: String,
    pub tool_count: usize,
    /// Per message: `role:hash`.
    pub messages: Vec<String>,
    /// A hash of the tools that may be called, when a mode limits them without
    /// changing the list (`allowed-tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<String>,
}

/// The answer as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedAnswer {
    pub response: Response,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// One line of `recordings.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Line {
    pub hash: String,
    pub key: OutcomeKey,
    /// The request's place in its episode (0 = first).
    /// The request's place in its episode (0 = first); `turn` in lines before format 4.
    #[serde(alias = "turn")]
    pub request: usize,
    pub digest: Digest,
    /// Whose tool-name rule the recorded model's requests were sent under (`openai`,
    /// `anthropic`), so that a replay counts the names that were sent; absent for mock
    /// models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<String>,
    pub answer: RecordedAnswer,
}

fn purpose_name(p: Purpose, cx: &Context) -> String {
    let name = match p {
        Purpose::Act => "act".into(),
        Purpose::Select { max } => format!("select:{max}"),
    };
    if cx.json_mode {
        format!("{name}:json")
    } else {
        name
    }
}

/// The digest of a request with these sampling parameters.
pub fn digest(purpose: Purpose, cx: &Context, parameters: serde_json::Value) -> Digest {
    let h = |s: &str| content_hash(s.as_bytes())[..12].to_string();
    Digest {
        purpose: purpose_name(purpose, cx),
        parameters,
        system: h(&cx.system),
        tools: h(&cx
            .tools
            .iter()
            .map(|t| t.wire_json())
            .collect::<Vec<_>>()
            .join("\n")),
        tool_count: cx.tools.len(),
        messages: cx
            .messages
            .iter()
            .map(|m| {
                let text = serde_json::to_string(m).expect("messages serialize");
                let role = match m {
                    Message::User { .. } => "user",
                    Message::Assistant { .. } => "assistant",
                    Message::Tool { .. } => "tool",
                };
                format!("{role}:{}", h(&text))
            })
            .collect(),
        allowed: cx.allowed.as_ref().map(|a| h(&a.join("\n"))),
    }
}

/// The key a request is recorded under.
pub fn request_hash(model: &str, repeat: usize, d: &Digest) -> String {
    let text = serde_json::json!({"model": model, "repeat": repeat, "request": d}).to_string();
    content_hash(text.as_bytes())
}

/// Appends recorded answers to a run directory (one writer for all tasks).
pub struct Recorder {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl Recorder {
    pub fn open(dir: &Path) -> anyhow::Result<Arc<Recorder>> {
        let path = dir.join(FILE);
        let f = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Arc::new(Recorder {
            path,
            out: Mutex::new(BufWriter::new(f)),
        }))
    }

    fn write(&self, line: &Line) -> std::io::Result<()> {
        let mut out = self.out.lock().expect("recorder lock");
        serde_json::to_writer(&mut *out, line)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

/// A backend whose answers are recorded.
pub struct Recording {
    pub inner: Arc<dyn Backend>,
    pub recorder: Arc<Recorder>,
}

impl Backend for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn prices(&self) -> Option<super::prices::Prices> {
        self.inner.prices()
    }

    fn wants_ground_truth(&self) -> bool {
        self.inner.wants_ground_truth()
    }

    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }

    fn json_mode(&self) -> bool {
        self.inner.json_mode()
    }

    fn writes_cache(&self) -> bool {
        self.inner.writes_cache()
    }

    fn names(&self) -> Option<crate::names::NameRule> {
        self.inner.names()
    }

    fn open(&self, key: &OutcomeKey, truth: Option<GroundTruth>) -> Box<dyn Session> {
        Box::new(RecordingSession {
            inner: self.inner.open(key, truth),
            recorder: self.recorder.clone(),
            key: key.clone(),
            request: 0,
            parameters: self.inner.parameters(),
            names: self.inner.names().map(|r| r.provider.to_string()),
        })
    }
}

struct RecordingSession {
    inner: Box<dyn Session>,
    recorder: Arc<Recorder>,
    key: OutcomeKey,
    request: usize,
    parameters: serde_json::Value,
    names: Option<String>,
}

#[async_trait::async_trait]
impl Session for RecordingSession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        let a = self.inner.respond(request).await?;
        let digest = digest(request.purpose, request.context, self.parameters.clone());
        let line = Line {
            hash: request_hash(&self.key.model, self.key.repeat, &digest),
            key: self.key.clone(),
            request: self.request,
            digest,
            names: self.names.clone(),
            answer: RecordedAnswer {
                response: a.response.clone(),
                usage: a.usage,
                truncated: a.truncated,
                refusal: a.refusal.clone(),
            },
        };
        self.request += 1;
        self.recorder.write(&line).map_err(|e| {
            ModelError::Connection(format!(
                "cannot write {}: {e}",
                self.recorder.path.display()
            ))
        })?;
        Ok(a)
    }
}

/// A recording, loaded for replay.
pub struct Tape {
    answers: HashMap<String, RecordedAnswer>,
    /// By work item and request: the recorded digest (to explain a miss).
    digests: HashMap<(OutcomeKey, usize), Digest>,
    /// The model names recorded, in first-seen order.
    pub models: Vec<String>,
    /// The models that were asked in JSON mode (so they have one).
    json_models: std::collections::HashSet<String>,
    /// Per model, the tool-name rule its requests were sent under.
    names: HashMap<String, crate::names::NameRule>,
}

impl Tape {
    /// Loads `PATH/recordings.jsonl`, or `PATH` itself when it is a file.
    pub fn load(path: &Path) -> anyhow::Result<Tape> {
        let file = if path.is_dir() {
            path.join(FILE)
        } else {
            path.to_path_buf()
        };
        if !file.is_file() {
            anyhow::bail!(
                "{} holds no recording (make one with `discbench run --record`)",
                path.display()
            );
        }
        let mut t = Tape {
            answers: HashMap::new(),
            digests: HashMap::new(),
            models: Vec::new(),
            json_models: Default::default(),
            names: HashMap::new(),
        };
        reader::read::<Line>(&file, |_, l| {
            if !t.models.contains(&l.key.model) {
                t.models.push(l.key.model.clone());
            }
            if l.digest.purpose.ends_with(":json") {
                t.json_models.insert(l.key.model.clone());
            }
            if let Some(rule) = l.names.as_deref().and_then(crate::names::rule_of) {
                t.names.insert(l.key.model.clone(), rule);
            }
            t.digests.insert((l.key.clone(), l.request), l.digest);
            t.answers.insert(l.hash, l.answer);
            Ok(())
        })?;
        // Answers are appended as episodes finish: take the models in the order the
        // recorded run listed them, when its run.json is there.
        let dir = file.parent().unwrap_or(Path::new("."));
        match crate::record::manifest::Manifest::load_if_present(dir)? {
            Some(m) => t
                .models
                .sort_by_key(|n| m.settings.models.iter().position(|x| x == n)),
            None => t.models.sort(),
        }
        Ok(t)
    }

    /// What differs between `d` and the recorded request of the same work item and
    /// place, in words.
    fn difference(&self, key: &OutcomeKey, index: usize, d: &Digest) -> String {
        let Some(r) = self.digests.get(&(key.clone(), index)) else {
            return format!(
                "the recording has no request {} of this work item",
                index + 1
            );
        };
        let mut out = Vec::new();
        if r.purpose != d.purpose {
            out.push(format!("purpose {} (recorded {})", d.purpose, r.purpose));
        }
        if r.parameters != d.parameters {
            out.push(format!(
                "sampling parameters {} (recorded {})",
                d.parameters, r.parameters
            ));
        }
        if r.system != d.system {
            out.push("the system prompt differs".to_string());
        }
        if r.tools != d.tools {
            out.push(format!(
                "the tool definitions differ ({} tools, recorded {})",
                d.tool_count, r.tool_count
            ));
        }
        if r.messages.len() != d.messages.len() {
            out.push(format!(
                "{} messages (recorded {})",
                d.messages.len(),
                r.messages.len()
            ));
        }
        for (i, (a, b)) in r.messages.iter().zip(&d.messages).enumerate() {
            if a != b {
                out.push(format!(
                    "message {} ({}) differs",
                    i + 1,
                    b.split(':').next().unwrap_or("")
                ));
                break;
            }
        }
        if out.is_empty() {
            "the request matches the recorded one in every part but not as a whole (model name or repeat index)".into()
        } else {
            out.join("; ")
        }
    }
}

/// One recorded model, answering from a shared tape. `parameters` are the sampling
/// parameters of this run (`--temperature`, `--max-tokens`, `--seed`): a recording
/// made with others does not answer.
pub struct Replay {
    pub name: String,
    pub tape: Arc<Tape>,
    pub parameters: serde_json::Value,
}

impl Backend for Replay {
    fn name(&self) -> &str {
        &self.name
    }

    /// As the recorded model: a model asked in JSON mode had one. (A model that had one
    /// but never needed it took the same path without it.)
    fn json_mode(&self) -> bool {
        self.tape.json_models.contains(&self.name)
    }

    /// As the recorded model: its requests were sent (and counted) under these names.
    fn names(&self) -> Option<crate::names::NameRule> {
        self.tape.names.get(&self.name).copied()
    }

    fn open(&self, key: &OutcomeKey, _truth: Option<GroundTruth>) -> Box<dyn Session> {
        Box::new(ReplaySession {
            tape: self.tape.clone(),
            key: key.clone(),
            request: 0,
            parameters: self.parameters.clone(),
        })
    }
}

struct ReplaySession {
    tape: Arc<Tape>,
    key: OutcomeKey,
    request: usize,
    parameters: serde_json::Value,
}

#[async_trait::async_trait]
impl Session for ReplaySession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        let d = digest(request.purpose, request.context, self.parameters.clone());
        let h = request_hash(&self.key.model, self.key.repeat, &d);
        let index = self.request;
        self.request += 1;
        match self.tape.answers.get(&h) {
            Some(a) => Ok(Answer {
                response: a.response.clone(),
                usage: a.usage,
                latency: None,
                truncated: a.truncated,
                refusal: a.refusal.clone(),
            }),
            None => Err(ModelError::Replay(format!(
                "{MISS} for {} (request {}): {}",
                self.key,
                index + 1,
                self.tape.difference(&self.key, index, &d)
            ))),
        }
    }
}
