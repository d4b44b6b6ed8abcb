//! The outcome explorer's data, as `index.html` embeds it: every outcome of a run,
//! reachable from one page that stays light at any number of outcomes.
//!
//! [`Explorer::build`] streams `outcomes.jsonl` once and produces three kinds of
//! gzip-compressed, base64-encoded JSON blobs, which the page expands in the browser
//! (`DecompressionStream`) only when it needs them:
//!
//! - **rows** — one row per outcome in plan order, as columns of small integers
//!   (scenario, query, mode, model, repeat, result, F1, turns, tokens, protocol
//!   errors, and which detail holds its drill-down), plus the dictionaries those
//!   integers index and each scenario × mode's contexts. The outcome table filters
//!   and sorts these in memory and draws one page of rows at a time.
//! - **strings** — every distinct string the drill-downs show (tool names, addresses,
//!   arguments, results, fetched schemas, system prompts, tool definitions), once
//!   each, cut at [`TEXT_LIMIT`] characters. A detail refers to a string by its index.
//! - **details** — each outcome's drill-down (turns with what entered the context and
//!   its tokens, the calls as scored, the selection step, the expectation) as a
//!   compact array of string indices and numbers. Identical details are stored once:
//!   a deterministic model's repeats, and the same episode under two names, share one.
//!   Details are packed [`CHUNK`] to a blob, so opening one outcome expands one blob.
//!
//! Why this shape: a run's outcomes repeat most of their content (the same discover
//! answer in every mode and repeat), which interning and detail sharing remove before
//! compression; gzip then removes what repeats inside the remaining JSON. gzip is what
//! every browser can expand without a library (`DecompressionStream("gzip")`), so the
//! page stays one self-contained file with no script of anyone else's.

use std::collections::HashMap;
use std::io::{Seek as _, Write as _};
use std::path::Path;

use base64::Engine as _;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::text::step_text;
use crate::record::manifest::{Interner, PlanOrder, Rank};
use crate::record::spill::{self, Spill};
use crate::record::texts::TextStore;
use crate::record::{reader, Entry, Layer, Outcome, RequestRecord};

/// The explorer's maps: keyed by its own texts, hashed fast.
type Map<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Characters of one text kept for the drill-down; the rest is counted.
pub const TEXT_LIMIT: usize = 2000;
/// Distinct details per compressed blob.
pub const CHUNK: usize = 256;

/// Every distinct string once, with its index; texts stored in `texts.jsonl` are
/// interned by their reference, so a long text is looked up and hashed once.
struct Strings<'a> {
    index: Map<String, u32>,
    list: Vec<String>,
    store: &'a TextStore,
    refs: Map<String, Option<u32>>,
    /// Parsed tool-definition lists and expectations, by reference.
    defs: Map<String, Option<std::rc::Rc<Vec<Entry>>>>,
    /// Expectations by reference: their steps' indices and their text.
    expected: Map<String, (std::rc::Rc<[u32]>, std::rc::Rc<str>)>,
}

impl<'a> Strings<'a> {
    fn new(store: &'a TextStore) -> Self {
        Strings {
            index: Map::default(),
            list: Vec::new(),
            store,
            refs: Map::default(),
            defs: Map::default(),
            expected: Map::default(),
        }
    }

    /// An entry's text: kept in the line, or stored by reference (`-1` when it is
    /// neither, or the store lacks it).
    fn text(&mut self, text: Option<&str>, text_ref: Option<&str>) -> i64 {
        if let Some(t) = text {
            return self.id(t) as i64;
        }
        let Some(h) = text_ref else { return -1 };
        if let Some(i) = self.refs.get(h) {
            return i.map_or(-1, i64::from);
        }
        let store = self.store;
        let i = store.get(h).map(|t| self.id(t));
        self.refs.insert(h.to_string(), i);
        i.map_or(-1, i64::from)
    }

    /// A turn's tool-definition list stored by reference.
    fn defs(&mut self, h: &str) -> Option<std::rc::Rc<Vec<Entry>>> {
        if let Some(d) = self.defs.get(h) {
            return d.clone();
        }
        let d = self
            .store
            .get(h)
            .and_then(|t| serde_json::from_str::<Vec<Entry>>(t).ok())
            .map(std::rc::Rc::new);
        self.defs.insert(h.to_string(), d.clone());
        d
    }

    /// An outcome's expectation, in the line or stored by reference: the indices of
    /// its steps' texts, and its whole text (pretty-printed; its index is taken where
    /// the detail shows it). Each stored one is read and printed once.
    fn expectation(&mut self, o: &Outcome) -> (std::rc::Rc<[u32]>, std::rc::Rc<str>) {
        let Some(h) = o.expected_ref.as_deref() else {
            return self.expectation_texts(&o.expected);
        };
        if let Some(v) = self.expected.get(h) {
            return v.clone();
        }
        let v = (self.store.get(h))
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        let ids = self.expectation_texts(&v);
        self.expected.insert(h.to_string(), ids.clone());
        ids
    }

    fn expectation_texts(&mut self, expected: &Value) -> (std::rc::Rc<[u32]>, std::rc::Rc<str>) {
        let steps: std::rc::Rc<[u32]> = (expected.get("calls").and_then(Value::as_array))
            .map(|a| a.iter().map(|x| self.id(&step_text(x))).collect())
            .unwrap_or_default();
        let text = serde_json::to_string_pretty(expected).unwrap_or_default();
        (steps, text.into())
    }

    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let kept = clip(s);
        let i = self.list.len() as u32;
        self.list.push(kept);
        self.index.insert(s.to_string(), i);
        i
    }

    fn opt(&mut self, s: Option<&str>) -> i64 {
        s.map_or(-1, |s| self.id(s) as i64)
    }
}

/// A text as the drill-down keeps it: whole, or its first [`TEXT_LIMIT`] characters and
/// a count of the rest.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(TEXT_LIMIT) {
        None => text.to_string(),
        Some((at, _)) => {
            let rest = text[at..].chars().count();
            format!("{}\n… ({rest} more characters)", &text[..at])
        }
    }
}

/// One outcome table row (before plan ordering): numbers only, so that a run of
/// millions of outcomes holds a few dozen bytes for each.
#[derive(Clone, Serialize, Deserialize)]
struct Row {
    rank: Rank,
    query: u32,
    mode: u32,
    model: u32,
    /// 1 exact, 0 not, 2 infra error.
    result: u8,
    /// F1 in thousandths.
    f1: u32,
    turns: usize,
    first_request: usize,
    billed_input: usize,
    protocol_errors: usize,
    detail: u32,
}

/// A scenario × mode's first-request contexts: its system prompt and, when no
/// selection step chose them per query, its tool definitions.
#[derive(Default)]
struct Context {
    system: Option<(usize, u32)>,
    defs: Option<Vec<(u32, usize, u32)>>,
}

/// Distinct details, compressed [`CHUNK`] to a blob as they arrive.
struct Details {
    seen: Map<[u8; 32], u32>,
    count: u32,
    open: Option<GzEncoder<Vec<u8>>>,
    in_open: usize,
    done: Vec<Vec<u8>>,
    raw_bytes: usize,
}

impl Details {
    fn new() -> Self {
        Details {
            seen: Map::default(),
            count: 0,
            open: None,
            in_open: 0,
            done: Vec::new(),
            raw_bytes: 0,
        }
    }

    /// The id of `detail`, storing it when it is new.
    fn id(&mut self, detail: &str) -> std::io::Result<u32> {
        let h = *blake3::hash(detail.as_bytes()).as_bytes();
        if let Some(&i) = self.seen.get(&h) {
            return Ok(i);
        }
        let i = self.count;
        self.count += 1;
        self.seen.insert(h, i);
        let enc = self
            .open
            .get_or_insert_with(|| GzEncoder::new(Vec::new(), Compression::new(6)));
        enc.write_all(if self.in_open == 0 { b"[" } else { b"," })?;
        enc.write_all(detail.as_bytes())?;
        self.raw_bytes += detail.len() + 1;
        self.in_open += 1;
        if self.in_open == CHUNK {
            self.close()?;
        }
        Ok(i)
    }

    fn close(&mut self) -> std::io::Result<()> {
        if let Some(mut enc) = self.open.take() {
            enc.write_all(b"]")?;
            self.done.push(enc.finish()?);
            self.in_open = 0;
        }
        Ok(())
    }
}

/// What the page embeds, each blob gzip-compressed and base64-encoded.
pub struct Explorer {
    pub rows: String,
    pub strings: String,
    pub chunks: Vec<String>,
    /// Outcomes in the table.
    pub outcomes: usize,
    /// Distinct details stored.
    pub details: usize,
    /// The uncompressed JSON of rows, strings and details, in bytes.
    pub raw_bytes: usize,
}

/// An outcome table column: its name and its value in a row.
type Column = (&'static str, fn(&Row) -> usize);

/// The bytes of one column's numbers held in memory before they go to a temporary
/// file in the run's directory.
const COLUMN_IN_MEMORY: usize = 4 << 20;

/// The rows blob, gzip-compressed: `head`'s fields and then `cols`, one array of
/// numbers per column, the JSON written straight into the compressor (never whole in
/// memory). The rows are read once, in order: each column's numbers gather in a
/// buffer of their own (a file in `dir` past [`COLUMN_IN_MEMORY`]) until they follow
/// one another into the blob. Returns the blob, the JSON's length and the number of
/// rows.
fn rows_blob(
    head: &Value,
    rows: impl Iterator<Item = anyhow::Result<Row>>,
    dir: &Path,
) -> anyhow::Result<(Vec<u8>, usize, usize)> {
    let columns: [Column; 11] = [
        ("q", |r| r.query as usize),
        ("m", |r| r.mode as usize),
        ("md", |r| r.model as usize),
        ("r", |r| r.rank.repeat()),
        ("x", |r| r.result.into()),
        ("f", |r| r.f1 as usize),
        ("tu", |r| r.turns),
        ("ft", |r| r.first_request),
        ("bi", |r| r.billed_input),
        ("pe", |r| r.protocol_errors),
        ("d", |r| r.detail as usize),
    ];
    let mut parts: Vec<std::io::BufWriter<tempfile::SpooledTempFile>> = columns
        .iter()
        .map(|_| {
            std::io::BufWriter::with_capacity(
                1 << 16,
                tempfile::spooled_tempfile_in(COLUMN_IN_MEMORY, dir),
            )
        })
        .collect();
    let mut num = itoa::Buffer::new();
    let mut count = 0;
    for r in rows {
        let r = r?;
        for ((_, value), part) in columns.iter().zip(&mut parts) {
            if count > 0 {
                part.write_all(b",")?;
            }
            part.write_all(num.format(value(&r)).as_bytes())?;
        }
        count += 1;
    }
    let mut w = Counted {
        inner: std::io::BufWriter::with_capacity(
            1 << 16,
            GzEncoder::new(Vec::new(), Compression::new(6)),
        ),
        n: 0,
    };
    let head = head.to_string();
    // `{…}` without its closing brace, then the columns as the last field.
    w.write_all(&head.as_bytes()[..head.len() - 1])?;
    w.write_all(br#","cols":{"#)?;
    for (i, ((name, _), part)) in columns.iter().zip(parts).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        write!(w, "\"{name}\":[")?;
        let mut part = part.into_inner().map_err(|e| e.into_error())?;
        part.rewind()?;
        std::io::copy(&mut part, &mut w)?;
        w.write_all(b"]")?;
    }
    w.write_all(b"}}")?;
    let n = w.n;
    let gz = w.inner.into_inner().map_err(|e| e.into_error())?.finish()?;
    Ok((gz, n, count))
}

/// A writer that counts the bytes written through it.
struct Counted<W> {
    inner: W,
    n: usize,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n += k;
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn gzip_b64(bytes: &[u8]) -> std::io::Result<String> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::new(6));
    enc.write_all(bytes)?;
    Ok(b64(&enc.finish()?))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn tri(b: Option<bool>) -> i8 {
    match b {
        None => -1,
        Some(false) => 0,
        Some(true) => 1,
    }
}

fn layer_code(l: Layer) -> u8 {
    match l {
        Layer::System => 0,
        Layer::ToolDefs => 1,
        Layer::Query => 2,
        Layer::Fetched => 3,
        Layer::Results => 4,
        Layer::Output => 5,
    }
}

/// The entries of a turn as the record holds them once resolved: its tool
/// definitions (stored as one list by reference in format 3) put back in place.
/// A request's entries in the order they entered the context, its tool definitions
/// (stored by reference as one list) at their place.
fn entries<'e>(t: &'e RequestRecord, defs: Option<&'e [Entry]>) -> impl Iterator<Item = &'e Entry> {
    let at = if defs.is_some() {
        t.tool_defs_at.min(t.entered.len())
    } else {
        t.entered.len()
    };
    (t.entered[..at].iter())
        .chain(defs.unwrap_or_default())
        .chain(&t.entered[at..])
}

/// One outcome's drill-down as the page reads it: each field a number, a string's
/// index, or an array of them, in this order (serialized as `json!` would write the
/// same object, without building it).
#[derive(Serialize)]
struct Detail {
    cv: Vec<ConversationTurn>,
    w: std::rc::Rc<[u32]>,
    e: u32,
    p: Vec<u32>,
    x: u8,
    f: i64,
    a: i8,
    s: i8,
    h: u8,
    pe: usize,
    sel: Option<(usize, usize, u8, usize, i64)>,
    l: [usize; 10],
    t: Vec<Request>,
    c: Vec<Call>,
    ft: i64,
    ie: i64,
}

/// A conversation's turn: its number, its first request, its requests, whether it was
/// exact, why it failed, its billed and cached input, its steps and its calls.
type ConversationTurn = (
    usize,
    usize,
    usize,
    u8,
    i64,
    usize,
    usize,
    Vec<u32>,
    Vec<u32>,
);
/// A request: its number, its tokens, the tools it showed, its cached prefix, and what
/// entered its context (layer, name, tokens, text).
type Request = (usize, usize, usize, usize, Vec<(u8, u32, usize, i64)>);
/// A call: its request, tool, arguments, effect, address, note, whether it was blind,
/// and the program that made it.
type Call = (usize, u32, u32, u32, i64, i64, u8, i64);

/// The drill-down of one outcome as compact JSON (string fields as indices).
fn detail(o: &Outcome, st: &mut Strings) -> String {
    let (steps, expectation) = st.expectation(o);
    let predicted: Vec<u32> = o
        .score
        .predicted
        .iter()
        .map(|a| st.id(&a.to_string()))
        .collect();
    let selection = o.selection.as_ref().map(|s| {
        (
            s.tools_before,
            o.tokens.selection,
            u8::from(s.shortcut),
            s.requests,
            st.opt(s.selected.as_ref().map(|v| v.join(", ")).as_deref()),
        )
    });
    let turns = o
        .requests
        .iter()
        .map(|t| {
            let defs = t.tool_defs_ref.as_deref().and_then(|h| st.defs(h));
            let entered = entries(t, defs.as_deref().map(Vec::as_slice))
                .map(|e| {
                    (
                        layer_code(e.layer),
                        st.id(&e.what),
                        e.tokens,
                        st.text(e.text.as_deref(), e.text_ref.as_deref()),
                    )
                })
                .collect();
            (
                t.request,
                t.request_tokens,
                t.tools_visible,
                t.cached_prefix,
                entered,
            )
        })
        .collect();
    let calls = o
        .calls
        .iter()
        .map(|c| {
            let mut note = c
                .error
                .map(|e| e.as_str().to_string())
                .unwrap_or_else(|| c.schema_errors.join("; "));
            if !c.cut.is_empty() {
                let cut: Vec<String> = c.cut.iter().map(|a| a.to_string()).collect();
                note = format!(
                    "{} definitions cut by the result budget: {}",
                    cut.len(),
                    cut.join(", ")
                );
            }
            (
                c.request,
                st.id(&c.tool),
                st.id(&c.arguments),
                st.id(c.effect.as_str()),
                st.opt(c.address.as_ref().map(|a| a.to_string()).as_deref()),
                st.opt(Some(note.as_str()).filter(|n| !n.is_empty())),
                u8::from(c.blind),
                // A call a program made: that program's index among the calls.
                c.program.map_or(-1, |p| p as i64),
            )
        })
        .collect();
    // A conversation's turns: where each begins among the requests, and how it did.
    let conversation = o
        .conversation
        .iter()
        .map(|t| {
            let steps: Vec<u32> = (t.expected.get("calls").and_then(Value::as_array))
                .map(|a| a.iter().map(|x| st.id(&step_text(x))).collect())
                .unwrap_or_default();
            let made: Vec<u32> = (t.score.predicted.iter())
                .map(|a| st.id(&a.to_string()))
                .collect();
            (
                t.turn,
                t.first_request_index,
                t.requests,
                u8::from(t.score.exact),
                st.opt(t.failed.as_deref()),
                t.tokens.billed_input,
                t.tokens.billed_cached,
                steps,
                made,
            )
        })
        .collect();
    let l = &o.tokens;
    let detail = Detail {
        cv: conversation,
        w: steps,
        e: st.id(&expectation),
        p: predicted,
        x: u8::from(o.score.exact),
        f: (o.score.f1 * 1000.0).round() as i64,
        a: tri(o.score.args_ok),
        s: tri(o.score.schema_valid),
        h: u8::from(o.score.forbidden_hit),
        pe: o.protocol_errors(),
        sel: selection,
        l: [
            l.system,
            l.tool_defs,
            l.fetched,
            l.results,
            l.output,
            l.selection,
            l.first_request,
            l.billed_input,
            l.peak_context,
            l.billed_cached,
        ],
        t: turns,
        c: calls,
        ft: st.opt(o.final_text.as_deref()),
        ie: st.opt(o.infra_error.as_deref()),
    };
    serde_json::to_string(&detail).expect("a detail serializes")
}

impl Explorer {
    /// Reads the run's outcomes (and `texts.jsonl` beside them) once.
    pub fn build(outcomes: &Path) -> anyhow::Result<Explorer> {
        // `Path::new("outcomes.jsonl").parent()` is the empty path.
        let dir = (outcomes.parent())
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let texts = TextStore::load(dir)?;
        let mut order = PlanOrder::for_dir(dir)?;
        let mut st = Strings::new(&texts);
        let (mut scenarios, mut modes, mut models) = (
            Interner::default(),
            Interner::default(),
            Interner::default(),
        );
        let mut queries: Map<(u32, String), u32> = Map::default();
        let mut query_list: Vec<Value> = Vec::new();
        let mut contexts: Map<(u32, u32), Context> = Map::default();
        let mut details = Details::new();
        // One row per outcome; past a million (`spill::limit`)
        // they are sorted in runs on disk.
        let limit = spill::limit()?;
        let mut rows: Spill<Row> = Spill::new(dir, limit);
        // Lines read before, by their content without the repeat index: their rows.
        let mut seen: Map<[u8; 32], Row> = Map::default();
        // Modes are shown as they ran ([`crate::record::mode_label`]).
        let mut labels = crate::record::ModeLabels::default();
        reader::read_text(outcomes, |line_no, line| {
            let same = crate::record::repeat_free_hash(line);
            if let Some((h, repeat)) = same {
                if let Some(row) = seen.get(&h) {
                    let row = Row {
                        rank: order.with_repeat(&row.rank, repeat),
                        ..row.clone()
                    };
                    rows.push(row);
                    return order.spill_if_full(&mut rows, |r| &r.rank);
                }
            }
            let o: Outcome =
                serde_json::from_str(line).map_err(|e| reader::RecordError::Malformed {
                    path: outcomes.to_path_buf(),
                    line: line_no,
                    message: e.to_string(),
                })?;
            let sc = scenarios.id(&o.scenario);
            let mode = modes.id(labels.label(&o.mode, &o.mode_spec));
            let model = models.id(&o.model);
            let query = match queries.get(&(sc, o.query_id.clone())) {
                Some(&q) => q,
                None => {
                    let q = query_list.len() as u32;
                    let text = first_user_text(&o, &texts);
                    query_list.push(json!([sc, o.query_id, text, o.tags]));
                    queries.insert((sc, o.query_id.clone()), q);
                    q
                }
            };
            // The scenario × mode's first-request texts, from the first outcome that
            // recorded them; definitions only where no selection step chose them.
            if let Some(first) = o.requests.first() {
                let selected = o.selection.as_ref().is_some_and(|s| s.selected.is_some());
                let cx = contexts.entry((sc, mode)).or_default();
                let needs_defs = cx.defs.is_none() && !selected;
                if cx.system.is_some() && !needs_defs {
                    // Nothing left to take from this outcome.
                } else {
                    let defs = (first.tool_defs_ref.as_deref()).and_then(|h| st.defs(h));
                    let entered: Vec<&Entry> =
                        entries(first, defs.as_deref().map(Vec::as_slice)).collect();
                    if cx.system.is_none() {
                        cx.system =
                            entered
                                .iter()
                                .find(|e| e.layer == Layer::System)
                                .and_then(|e| {
                                    let i = st.text(e.text.as_deref(), e.text_ref.as_deref());
                                    (i >= 0).then_some((e.tokens, i as u32))
                                });
                    }
                    if needs_defs {
                        let defs: Vec<(u32, usize, u32)> = entered
                            .iter()
                            .filter(|e| e.layer == Layer::ToolDefs)
                            .filter_map(|e| {
                                let i = st.text(e.text.as_deref(), e.text_ref.as_deref());
                                (i >= 0).then(|| (st.id(&e.what), e.tokens, i as u32))
                            })
                            .collect();
                        if !defs.is_empty() {
                            cx.defs = Some(defs);
                        }
                    }
                }
            }
            let d = details.id(&detail(&o, &mut st))?;
            let row = Row {
                rank: order.rank(&o.key()),
                query,
                mode,
                model,
                result: if o.infra_error.is_some() {
                    2
                } else {
                    u8::from(o.score.exact)
                },
                f1: (o.score.f1 * 1000.0).round() as u32,
                turns: o.protocol.requests,
                first_request: o.tokens.first_request,
                billed_input: o.tokens.billed_input,
                protocol_errors: o.protocol_errors(),
                detail: d,
            };
            if let Some((h, _)) = same {
                // Bounded too: lines that all differ would otherwise fill it.
                if seen.len() >= limit {
                    seen.clear();
                }
                seen.insert(h, row.clone());
            }
            rows.push(row);
            order.spill_if_full(&mut rows, |r| &r.rank)
        })?;
        drop(seen);
        details.close()?;
        let mut cx_list: Vec<Value> = contexts
            .iter()
            .map(|(&(sc, mode), c)| {
                json!([
                    sc,
                    mode,
                    c.system.map(|s| json!([s.0, s.1])),
                    c.defs.as_ref().map(|d| d
                        .iter()
                        .map(|&(n, t, x)| json!([n, t, x]))
                        .collect::<Vec<_>>())
                ])
            })
            .collect();
        cx_list.sort_by_key(|v| (v[0].as_u64(), v[1].as_u64()));
        let head = json!({
            "scenarios": scenarios.list(),
            "modes": modes.list(),
            "models": models.list(),
            "queries": query_list,
            "contexts": cx_list,
            "chunk": CHUNK,
        });
        // Episodes finish in any order: the table starts in plan order.
        let key = order.sort_key();
        let (rows_gz, rows_bytes, outcomes) =
            rows_blob(&head, rows.sorted(|r| key(&r.rank))?, dir)?;
        let strings_json = serde_json::to_string(&st.list)?;
        Ok(Explorer {
            raw_bytes: rows_bytes + strings_json.len() + details.raw_bytes,
            rows: b64(&rows_gz),
            strings: gzip_b64(strings_json.as_bytes())?,
            chunks: details.done.iter().map(|c| b64(c)).collect(),
            outcomes,
            details: details.count as usize,
        })
    }

    /// The blobs as `<script>` elements the page's script reads by id.
    pub fn html(&self) -> String {
        let mut s = String::with_capacity(
            self.rows.len()
                + self.strings.len()
                + self.chunks.iter().map(String::len).sum::<usize>()
                + 512,
        );
        let mut blob = |id: &str, data: &str| {
            s.push_str("<script type=application/gzip id=");
            s.push_str(id);
            s.push('>');
            s.push_str(data);
            s.push_str("</script>");
        };
        blob("d-rows", &self.rows);
        blob("d-strings", &self.strings);
        for (i, c) in self.chunks.iter().enumerate() {
            blob(&format!("d-det-{i}"), c);
        }
        s
    }
}

fn first_user_text(o: &Outcome, texts: &TextStore) -> String {
    o.requests
        .first()
        .and_then(|t| t.entered.iter().find(|e| e.layer == Layer::Query))
        .and_then(|e| {
            e.text
                .clone()
                .or_else(|| Some(texts.get(e.text_ref.as_deref()?)?.to_string()))
        })
        .unwrap_or_default()
}

/// Expands a blob as the page does (gzip of base64), for tests.
pub fn expand(b64_text: &str) -> anyhow::Result<Value> {
    use std::io::Read as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64_text.trim())?;
    let mut json = String::new();
    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut json)?;
    Ok(serde_json::from_str(&json)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::early::Early;

    #[test]
    fn long_texts_are_cut_and_counted() {
        let long = "é".repeat(TEXT_LIMIT + 5);
        let c = clip(&long);
        assert!(c.starts_with(&"é".repeat(TEXT_LIMIT)));
        assert!(c.ends_with("(5 more characters)"), "{c}");
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn an_explorer_started_early_is_the_one_built_late() {
        let outcomes =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs/pre-events/outcomes.jsonl");
        let late = Explorer::build(&outcomes).unwrap();
        let early = Early::start("explorer", Explorer::build, &outcomes);
        assert!(early.is_started(), "a small run starts at once");
        let got = early.take(&outcomes).unwrap();
        assert_eq!(got.outcomes, 24);
        assert_eq!(
            (got.rows, got.strings, got.chunks, got.details),
            (late.rows, late.strings, late.chunks, late.details)
        );
        // Taken once; a second take builds it again, and a missing file is an error
        // when the explorer is asked for, as it was before.
        assert_eq!(early.take(&outcomes).unwrap().outcomes, 24);
        let missing = outcomes.with_file_name("no-such-outcomes.jsonl");
        let never = Early::start("explorer", Explorer::build, &missing);
        assert!(never.take(&missing).is_err());
    }

    #[test]
    fn equal_details_are_stored_once_and_chunks_expand() {
        let mut d = Details::new();
        let a = d.id("[1,2]").unwrap();
        let b = d.id("[3]").unwrap();
        assert_eq!(d.id("[1,2]").unwrap(), a);
        assert_ne!(a, b);
        for i in 0..CHUNK {
            d.id(&format!("[{i},0]")).unwrap();
        }
        d.close().unwrap();
        assert_eq!(d.count as usize, CHUNK + 2);
        assert_eq!(d.done.len(), 2);
        let first = expand(&b64(&d.done[0])).unwrap();
        assert_eq!(first.as_array().unwrap().len(), CHUNK);
        assert_eq!(first[0], json!([1, 2]));
        let second = expand(&b64(&d.done[1])).unwrap();
        assert_eq!(second, json!([[254, 0], [255, 0]]));
    }
}
