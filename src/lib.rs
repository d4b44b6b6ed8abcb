//! discbench: measures how LLM agents should be shown large tool catalogs.
//!
//! A scenario (catalog + queries + expectations, [`scenario`]) is disclosed to a model
//! under a [`strategy::Mode`]; the [`runner`] drives the agent loop, [`tokens`] counts
//! every layer of the context, [`score`] judges the calls on canonical addresses
//! ([`catalog::Address`]), and each scored [`record::Outcome`] is one JSON line of the
//! versioned run record; [`analysis`] aggregates and compares runs, [`report`]
//! renders them.
//!
//! # Floors
//!
//! Every module sits on one floor and imports only from the floors below it; modules
//! on the same floor do not import each other, and no two files import each other
//! (inside a folder, the files import the file that defines what they use, never the
//! `mod.rs` that declares them). `tests/layers.rs` reads every `crate::…` path under
//! `src/` and fails, naming the file and the import, when one goes up. Top to bottom:
//!
//! ```text
//! cli
//! report
//! analysis, serve
//! runner
//! model
//! record
//! bfcl
//! score
//! strategy
//! scenario
//! environment
//! ground: tokens, disclosure, mcp_client
//! ground: catalog, args, bm25
//! ground: names
//! ground: wire, hash, error, exit, events, sandbox, memory, memo
//! ```
//!
//! - `cli` parses flags and dispatches; nothing imports it.
//! - `report` renders a run (table, JSON, CSV, Markdown, JUnit, plots, HTML) from what
//!   `analysis` computed and what the `record` holds.
//! - `analysis` aggregates a run's outcomes and compares runs; it reads only the record.
//! - `serve` is a scenario as a real MCP server under one mode; a session an external
//!   client holds ends as an outcome through the runner's tally, like an episode.
//! - `runner` plans a run and drives each episode: strategy, model, scoring, record.
//! - `model` answers contexts (mock, replayed or real); the oracle alone sees the
//!   strategy's protocol and the expectation.
//! - `record` is the versioned outcome format: it holds scores, ledgers and protocol
//!   settings, so it sits above what it stores.
//! - `bfcl` converts the Berkeley Function Calling Leaderboard's data into scenarios
//!   and judges outputs in its result format with `score` (multi-turn ones by running
//!   them on the live servers of `environment`).
//! - `score` judges an episode's calls against its query's expectation.
//! - `strategy` renders a catalog under a mode and answers the model's calls; its
//!   families (`fim`, `mcp_pd`, `search`, `code`, one folder each) import no other
//!   family and meet in its composite.
//! - `scenario` loads and validates the scenario format; it knows catalogs, the
//!   disclosure vocabulary and the databases it checks reference SQL on, no strategy.
//! - `environment` is the world calls act on: fixture responses, seeded SQLite, and
//!   live MCP servers started per conversation.
//! - The ground knows nothing above it: `tokens` counts wire texts; `disclosure` is the
//!   vocabulary of modes per resource kind; `catalog` holds resources and addresses;
//!   `args` compares argument values; `bm25` ranks short texts (tool search, retrieval
//!   and the lexical model); `events` names protocol refusals and the events a
//!   strategy defines (so that scoring and the record count them by name, knowing no
//!   strategy); `sandbox` runs code mode's programs in an embedded, bounded
//!   JavaScript engine; `wire`, `hash`, `error` and `exit` stand alone;
//!   `memory` tells the allocator to give freed memory back at once while
//!   aggregation runs; `memo` keeps values by text in two bounded generations;
//!   `names` makes tool names unique and maps them to what each provider accepts;
//!   `mcp_client` lists what a real MCP server offers, over stdio or Streamable HTTP
//!   (`import mcp`), holds live sessions with servers it starts (and the watcher that
//!   stops them should discbench die), and imports nothing of the crate.

/// The allocator of every program built on this crate (the binary, its tests and
/// benches): mimalloc, not the system's malloc. A run makes many small, short-lived
/// allocations (tool texts, requests) on several threads, and polars' threads more;
/// glibc's malloc served them slower and left a 10,000-tool sweep holding 3.1 GiB
/// against mimalloc's 1.6 GiB (docs: benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod analysis;
pub mod args;
pub mod bfcl;
pub mod bm25;
pub mod catalog;
pub mod cli;
pub mod disclosure;
pub mod environment;
pub mod error;
pub mod events;
pub mod exit;
pub mod hash;
pub mod mcp_client;
pub mod memo;
pub mod memory;
pub mod model;
pub mod names;
pub mod record;
pub mod report;
pub mod runner;
pub mod sandbox;
pub mod scenario;
pub mod score;
pub mod serve;
pub mod strategy;
pub mod tokens;
pub mod wire;
