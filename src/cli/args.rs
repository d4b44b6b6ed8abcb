//! The command line as clap parses it: one struct per command, raw values only
//! ([`super::config`] turns them into a validated configuration).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "discbench",
    version,
    about = "Measure how LLM agents should be shown large tool catalogs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run scenarios under modes and models; write outcomes and print a summary.
    Run(Box<RunArgs>),
    /// Print the static token ledger of each scenario under each mode (no model).
    Tokens(TokensArgs),
    /// Check scenario, catalog-fragment and MCP-dump files without running anything.
    Validate(ValidateArgs),
    /// Re-render every report of a run from its outcomes.jsonl (no model is called).
    Report(ReportArgs),
    /// Judge a run against a baseline; exit 1 on any regression.
    Compare(CompareArgs),
    /// Join the run directories of shards (`run --shard K/N`) into one run.
    Merge(MergeArgs),
    /// Make scenarios or catalog files from elsewhere: another benchmark's data
    /// (`import bfcl`) or a live MCP server (`import mcp -- COMMAND…`).
    Import(super::import::ImportArgs),
    /// Judge model outputs in BFCL's result format on scenarios made by `import bfcl`,
    /// with discbench's scoring.
    ScoreBfcl(ScoreBfclArgs),
    /// Serve a scenario as a real MCP server under one mode, so that agent clients
    /// discbench does not drive (IDE, desktop, your own) can be measured.
    Serve(ServeArgs),
    /// Run one scenario at several catalog sizes: each query's catalog holds the tools
    /// it needs and distractors drawn (by seed) from the scenario and a pool of real
    /// MCP captures, up to each size; one run directory, resumable and shardable like
    /// any other, whose report draws accuracy, recall@5 and tokens against size.
    Sweep(Box<SweepArgs>),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(super::completions::CompletionsArgs),
    /// Print the manual page of discbench or of one command (roff, from the same
    /// definitions as --help), or write every page into a directory with --out.
    Man(super::completions::ManArgs),
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Catalog sizes: callable addresses in each query's catalog, e.g. 10,30,100,300,1000
    #[arg(long, value_name = "N,N,…", required_unless_present = "resume")]
    pub sizes: Option<String>,
    /// Real MCP captures (`*.tools.json` or `*.tools.json.gz` files, or directories of
    /// them) to draw distractors from; repeatable [default: fixtures/catalogs and
    /// fixtures/pool]
    #[arg(long, value_name = "FILE|DIR")]
    pub pool: Vec<PathBuf>,
    /// Draw the distractors closest (BM25 on name and description) to the tools each
    /// query needs, instead of at random: where selection breaks.
    #[arg(long)]
    pub near_duplicates: bool,
}

#[derive(Args, Debug)]
pub struct ScoreBfclArgs {
    /// BFCL result files (JSON lines of `{"id", "result"}`, function-calling format), or
    /// directories holding them.
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// The scenarios `import bfcl` wrote (a directory or one file).
    #[arg(long, default_value = "scenarios/bfcl")]
    pub scenarios: PathBuf,
    /// The model's dotted function names were sent with `_` for `.` (BFCL's
    /// `underscore_to_dot`, set for OpenAI, Mistral and Google function-calling models).
    #[arg(long)]
    pub underscore_to_dot: bool,
    /// Write every verdict here, one JSON line each (`id`, `scenario`, `line`, `file`,
    /// `valid`, `reason`, and `variant` when the line has one).
    #[arg(long, value_name = "FILE")]
    pub verdicts: Option<PathBuf>,
    /// Multi-turn files are judged by executing them on BFCL's classes through the
    /// bridge `import bfcl` wrote beside the scenarios: let it start (as `run
    /// --allow-live` does).
    #[arg(long)]
    pub allow_live: bool,
    /// The Python the bridge runs with (one with bfcl-eval installed) [default: the one
    /// given to `import bfcl`]
    #[arg(long)]
    pub python: Option<String>,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The scenario file to serve.
    pub scenario: PathBuf,
    /// The disclosure: `legacy` (every MCP tool, connector action and database tool
    /// as its own tool), `progressive` (FIM One's meta-tools), `inline`,
    /// `mcp-resource` (the MCP Progressive Disclosure extension: minimal tools/list,
    /// the tool_descriptions resource, per-session authorization), or a spec of their
    /// values. The selection step is off (a server never sees the query).
    #[arg(long, value_name = "MODE", default_value = "progressive")]
    pub mode: String,
    /// How clients connect: `stdio` (the client starts this process, one session) or
    /// `http` (Streamable HTTP at http://LISTEN/mcp, any number of sessions; a client
    /// may name its query in the URL: /mcp?query=ID).
    #[arg(long, value_name = "stdio|http", default_value = "stdio")]
    pub transport: String,
    /// The address `--transport http` listens on (port 0: a free one, printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub listen: String,
    /// Tie every session to this query of the scenario: its outcome is scored
    /// against the query's expectation (an HTTP session's `?query=` wins).
    #[arg(long, value_name = "ID")]
    pub query: Option<String>,
    /// Append every session tied to a query, as an outcome, to this run directory
    /// (`report`, `compare` and the gate read it like a run's); sessions tied to no
    /// query go to its sessions.jsonl, unscored (ledger, calls, tokens).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// The name outcomes give the agent [default: client:<the client's name>]
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Tokenizer: o200k_base or cl100k_base [default: o200k_base]
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Prompt templates: a directory or a built-in template set (as for `run`).
    #[arg(long, value_name = "DIR|SET")]
    pub templates: Option<PathBuf>,
    #[command(flatten)]
    pub sql: SqlArgs,
    /// `--transport http`: bytes of one request body at most (past it: 413)
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// `--transport http`: a session with no request for this many seconds is ended
    /// (and recorded)
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub idle_timeout: f64,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Shard run directories of one plan.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The run directory to make (it must not hold outcomes yet).
    #[arg(long)]
    pub out: PathBuf,
    /// Compare the merged run with this baseline; exit 1 on regression.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Per-metric thresholds for --baseline, e.g. `exact=2,first_request=5`.
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
    /// Infra errors (requests that failed after every retry, an environment that
    /// broke) the run may hold and still be judged: a count, or a percentage of its
    /// outcomes (`5%`). Past it the exit code is 3 and the verdict `failed`
    /// [default: 0]
    #[arg(long, value_name = "N|P%")]
    pub max_infra: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run directory (holding outcomes.jsonl).
    pub run_dir: PathBuf,
    /// A baseline run directory or summary.json to compare with.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Per-metric thresholds, e.g. `exact=2,first_request=5` (points for rates, percent for tokens).
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
    /// Measure savings (first-request and billed input, of medians) against this mode
    /// instead of `legacy` (FIM One's framing); `all-tools` is always a second
    /// reference when the run holds it.
    #[arg(long, value_name = "MODE")]
    pub savings_against: Option<String>,
    /// With --baseline: infra errors the run may hold and still be judged (a count,
    /// or a percentage of its outcomes); past it the exit code is 3 [default: 0]
    #[arg(long, value_name = "N|P%", requires = "baseline")]
    pub max_infra: Option<String>,
    /// Open index.html afterwards: with $DISCBENCH_OPENER, else $BROWSER, else the
    /// platform's opener (xdg-open, open, start); where none exists, say so and go on.
    #[arg(long)]
    pub open: bool,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline: a run directory or a summary.json.
    pub baseline: PathBuf,
    /// Current: a run directory or a summary.json.
    pub current: PathBuf,
    /// Per-metric thresholds, e.g. `exact=2,first_request=5` (points for rates, percent for tokens).
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
    /// Where to write the verdict as Markdown [default: CURRENT/compare.md when CURRENT is a directory]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Infra errors CURRENT may hold and still be judged: a count, or a percentage of
    /// its outcomes (`5%`). Past it the verdict is `failed` and the exit code 3
    /// [default: 0]
    #[arg(long, value_name = "N|P%")]
    pub max_infra: Option<String>,
}

#[derive(Args, Debug)]
pub struct Common {
    /// Scenario files or directories [default: scenarios]
    pub scenarios: Vec<PathBuf>,
    /// Modes: presets (progressive, legacy, inline, mcp-resource, tool-search,
    /// retrieval; not run by default: all-tools, allowed-tools, code-mode, code-files)
    /// or specs like `skills=inline,mcp=legacy,selection=off`,
    /// `tool-search,search=regex,results=3`, `retrieval,k=10,fallback=none`,
    /// `mcp=resource,selection=off,templates=mcp-pd-brief`; repeat or separate with `;`.
    /// Default: the first six presets, or the mode set by *_TOOL_MODE variables.
    #[arg(long = "mode", value_name = "MODE")]
    pub modes: Vec<String>,
    /// Tokenizer: o200k_base or cl100k_base [default: o200k_base]
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Prompt templates: a directory of files overriding the built-in ones file by
    /// file, or a built-in template set (fim-frame, mcp-pd-brief, mcp-pd-verbose,
    /// mcp-pd-no-example, mcp-pd-no-prohibition).
    #[arg(long, value_name = "DIR|SET")]
    pub templates: Option<PathBuf>,
    /// The selection step runs when a mode offers more tools than this
    /// [default: $REACT_TOOL_SELECTION_THRESHOLD or 12]
    #[arg(long)]
    pub selection_threshold: Option<usize>,
    /// The selection step keeps at most this many tools, pinned ones aside
    /// [default: $REACT_TOOL_SELECTION_MAX or 6]
    #[arg(long)]
    pub selection_max: Option<usize>,
    /// Calls of tools that exist but were not loaded: run (as FIM One) or refuse
    /// [default: run]
    #[arg(long, value_name = "run|refuse", value_parser = crate::strategy::UnloadedCalls::parse)]
    pub unloaded_calls: Option<crate::strategy::UnloadedCalls>,
    /// Rows a database query returns at most [default: 1000]
    #[arg(long)]
    pub row_limit: Option<usize>,
    /// Connector and MCP results are cut to this many characters [default: 50000, or
    /// $CONNECTOR_RESPONSE_MAX_CHARS for connectors and $TOOL_OUTPUT_MAX_CHARS for MCP]
    #[arg(long)]
    pub result_max_chars: Option<usize>,
    /// Top-level JSON arrays in connector and MCP results keep this many items
    /// [default: 10, or $CONNECTOR_RESPONSE_MAX_ITEMS / $TOOL_OUTPUT_MAX_ITEMS]
    #[arg(long)]
    pub result_max_items: Option<usize>,
    /// Estimated tokens (characters / 4) of all tool results of one query; 0 = no
    /// budget [default: $REACT_TOOL_RESULT_BUDGET or 40000]
    #[arg(long)]
    pub result_budget: Option<usize>,
    /// Skill stub descriptions are cut to this many characters, `...` included
    /// [default: $SKILL_STUB_DESC_LENGTH or 120]
    #[arg(long)]
    pub skill_stub_chars: Option<usize>,
    /// The discount (percent of the input price) at which the cacheable prefix of each
    /// request is billed in `billed_cached`, for models whose prices give no cached
    /// input price [default: 90]
    #[arg(long, value_name = "PERCENT")]
    pub cache_discount: Option<usize>,
    #[command(flatten)]
    pub sql: SqlArgs,
    /// Keep only this query (repeatable): its `ID`, or `SCENARIO/ID`; with --tag, a
    /// query named or tagged is kept. To try one query on a paid model first; a
    /// filtered run judged against a baseline judges only the queries it kept.
    #[arg(long = "query", value_name = "ID")]
    pub queries: Vec<String>,
    /// Keep only the queries with this tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// The protocol settings a resumed run recorded: used whole, so that neither the
    /// flags nor the environment of the resuming shell can change them.
    #[arg(skip)]
    pub recorded_protocol: Option<Box<crate::strategy::ProtocolConfig>>,
    /// A catalog-size sweep of the (one) scenario: set by `discbench sweep`, or taken
    /// from a resumed run's run.json.
    #[arg(skip)]
    pub sweep: Option<crate::scenario::sweep::SweepSpec>,
}

impl Common {
    /// `--query` and `--tag`.
    pub fn filter(&self) -> crate::scenario::QueryFilter {
        crate::scenario::QueryFilter {
            queries: self.queries.clone(),
            tags: self.tags.clone(),
        }
    }

    /// The protocol flags as given.
    pub fn protocol_flags(&self) -> crate::strategy::config::ProtocolFlags {
        crate::strategy::config::ProtocolFlags {
            selection_threshold: self.selection_threshold,
            selection_max: self.selection_max,
            unloaded: self.unloaded_calls,
            row_limit: self.row_limit,
            result_max_chars: self.result_max_chars,
            result_max_items: self.result_max_items,
            result_budget: self.result_budget,
            skill_stub_chars: self.skill_stub_chars,
            cache_discount_pct: self.cache_discount,
            sql: self.sql.flags(),
        }
    }
}

/// What one SQL query a model writes may cost (`run`, `sweep`, `serve`); recorded in
/// run.json.
#[derive(Args, Debug, Clone, Default)]
pub struct SqlArgs {
    /// Bytes of the largest string, blob or row a query may make, and of its SQL text:
    /// past it the query is an error answer, nothing is allocated [default: 100000]
    #[arg(long, value_name = "BYTES")]
    pub sql_max_length: Option<usize>,
    /// Bytes of a LIKE or GLOB pattern [default: 1000]
    #[arg(long, value_name = "BYTES")]
    pub sql_max_pattern: Option<usize>,
    /// MiB of heap SQLite may hold for one query (sorts and temporary tables
    /// included): past it the query is an error answer [default: 64]
    #[arg(long, value_name = "MIB")]
    pub sql_memory: Option<usize>,
    /// Bytes of rows one answer carries; the rows past it are cut with a note
    /// [default: 1048576]
    #[arg(long, value_name = "BYTES")]
    pub sql_answer_bytes: Option<usize>,
    /// Milliseconds one query may run before it is interrupted [default: 5000]
    #[arg(long, value_name = "MS")]
    pub sql_timeout_ms: Option<u64>,
    /// SQLite steps one query may take before it is interrupted [default: 50000000]
    #[arg(long, value_name = "STEPS")]
    pub sql_max_steps: Option<u64>,
}

impl SqlArgs {
    pub fn flags(&self) -> crate::strategy::config::SqlFlags {
        crate::strategy::config::SqlFlags {
            max_length: self.sql_max_length,
            max_pattern: self.sql_max_pattern,
            memory_mib: self.sql_memory,
            answer_bytes: self.sql_answer_bytes,
            timeout_ms: self.sql_timeout_ms,
            max_steps: self.sql_max_steps,
        }
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: Common,
    /// Models (repeatable): `oracle` (follows the expectation through each protocol),
    /// `lexical` (BM25 over what the context shows), `openai:MODEL` (an
    /// OpenAI-compatible API; OPENAI_API_KEY, OPENAI_BASE_URL), `openai-responses:MODEL`
    /// (OpenAI's Responses API, same key and base URL), `anthropic:MODEL`
    /// (ANTHROPIC_API_KEY), `gemini:MODEL` (Gemini's generateContent; GOOGLE_API_KEY,
    /// else GEMINI_API_KEY), `replay:RUN_DIR` (answers from a `--record`ed run), or a
    /// name from the models file [default: oracle and lexical]
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Times each query is run per mode and model [default: 1]
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Model requests per user turn at most: the agent loop's rounds (a scenario's
    /// agent.max_requests wins; --max-turns is its old name) [default: 10]
    #[arg(long, alias = "max-turns")]
    pub max_requests: Option<usize>,
    /// Where run directories are made.
    #[arg(long, default_value = "reports", conflicts_with = "resume")]
    pub out: PathBuf,
    /// The run's id (its directory name) [default: a UTC timestamp]
    #[arg(long, conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// With --resume: run again the work items whose outcome is an infra error (those
    /// outcomes are moved to RUN_DIR/outcomes.infra, not deleted).
    #[arg(long, requires = "resume")]
    pub rerun_infra: bool,
    /// Stop starting new work items once the finished ones cost this much (US
    /// dollars, from provider usage and the models' prices); the run stays resumable.
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// Keep every model answer in RUN_DIR/recordings.jsonl, keyed by a hash of its
    /// request, for `--model replay:RUN_DIR`.
    #[arg(long)]
    pub record: bool,
    /// Episodes in flight at once.
    #[arg(long, default_value_t = crate::runner::DEFAULT_JOBS)]
    pub jobs: usize,
    /// Run only slice K of N of the plan (deterministic; join the shards with `merge`).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Finish an interrupted run: run only the work items of RUN_DIR that have no
    /// outcome yet, with the configuration its run.json records.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Retries of a model request that failed in a way that may pass (429, 5xx, timeout).
    #[arg(long, default_value_t = crate::runner::retry::DEFAULT_MAX_RETRIES)]
    pub max_retries: u32,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Never draw a progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Compare the run with this baseline (run directory or summary.json); exit 1 on regression.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Per-metric thresholds for --baseline, e.g. `exact=2,first_request=5`.
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
    /// Measure savings (first-request and billed input, of medians) against this mode
    /// instead of `legacy` (FIM One's framing); `all-tools` is always a second
    /// reference when the run holds it; recorded in run.json.
    #[arg(long, value_name = "MODE")]
    pub savings_against: Option<String>,
    /// Infra errors (requests that failed after every retry, an environment that
    /// broke) the run may hold and still be judged: a count, or a percentage of its
    /// outcomes (`5%`). Past it the exit code is 3 and the verdict `failed`
    /// [default: 0]
    #[arg(long, value_name = "N|P%")]
    pub max_infra: Option<String>,
    /// Let this run start the processes of the scenarios' live MCP servers (`live:` in
    /// a scenario: commands it names, run on this machine). Never on by default: a
    /// scenario that starts processes is code.
    #[arg(long)]
    pub allow_live: bool,
}

/// How the HTTP model backends are reached (keys come from the environment only).
#[derive(Args, Debug, Clone, Default)]
pub struct EndpointArgs {
    /// A YAML file naming model endpoints (name, provider, model, base URL, the
    /// environment variable holding the key, sampling, prices); `--model NAME` picks one.
    #[arg(long = "models", value_name = "FILE")]
    pub models_file: Option<PathBuf>,
    /// Base URL for `openai:<model>` [default: OPENAI_BASE_URL, else OpenAI's]
    #[arg(long, value_name = "URL")]
    pub openai_base_url: Option<String>,
    /// Base URL for `anthropic:<model>` [default: ANTHROPIC_BASE_URL, else Anthropic's]
    #[arg(long, value_name = "URL")]
    pub anthropic_base_url: Option<String>,
    /// Base URL for `gemini:<model>` [default: GEMINI_BASE_URL, else Google's]
    #[arg(long, value_name = "URL")]
    pub gemini_base_url: Option<String>,
    /// Seconds before a model request times out (and is retried).
    #[arg(long, default_value_t = 120.0)]
    pub request_timeout: f64,
    /// Sampling temperature sent to HTTP models (a models-file entry's own wins).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Output token limit sent to HTTP models.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Sampling seed sent to models that take one; under `sweep`, also the seed of
    /// the distractor draw (the same seed, scenario and pool give the same catalogs;
    /// default 0).
    #[arg(long)]
    pub seed: Option<i64>,
    /// Send `strict: true` on every OpenAI function (Chat Completions and Responses):
    /// the provider then holds every call to the schema, and refuses a schema outside
    /// its strict subset. Without it every function carries `strict: false`.
    #[arg(long)]
    pub strict_tools: bool,
    /// At most this many requests per minute to each HTTP model (a models-file
    /// entry's own limit wins).
    #[arg(long, value_name = "N")]
    pub requests_per_minute: Option<u32>,
    /// At most this many tokens (provider usage) per minute to each HTTP model.
    #[arg(long, value_name = "N")]
    pub tokens_per_minute: Option<u64>,
    /// Provider prompt caching: `on` puts cache breakpoints in Anthropic requests (the
    /// last tool, the system prompt, the newest message) and a cache key in Responses
    /// requests; `off` sends neither.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub prompt_cache: String,
    /// How long Anthropic keeps a cache entry: 5m or 1h (a write costs 1.25× or 2×
    /// the input price, a read 0.1×).
    #[arg(long, value_name = "5m|1h", default_value = "5m", value_parser = ["5m", "1h"])]
    pub cache_ttl: String,
}

#[derive(Args, Debug)]
pub struct TokensArgs {
    #[command(flatten)]
    pub common: Common,
    /// Print the exact context each mode renders: system prompt and tool definitions.
    #[arg(long)]
    pub show: bool,
    /// Whose tool names to count and print: `discbench` (as rendered: FIM One's names,
    /// what mock models see), or a provider's (`openai`, `anthropic`, `gemini`: a name
    /// it refuses is the one its backend sends instead).
    #[arg(
        long,
        value_name = "discbench|openai|anthropic|gemini",
        default_value = "discbench"
    )]
    pub names: String,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Files or directories [default: scenarios]
    pub paths: Vec<PathBuf>,
    /// Also list, per query, the expected or allowed calls that the fixtures would
    /// answer about another entity: tools with no fixture response (`{"status":"ok"}`),
    /// and calls whose pinned arguments match no `when` and fall to a default not
    /// marked `any_args`; exit 1 when any is listed.
    #[arg(long)]
    pub fixtures: bool,
}
