//! `run.json`: what a run directory was made from and what it was meant to hold.
//!
//! It records the discbench version, the effective configuration, content hashes of
//! every scenario file (with its includes, skill texts and seed SQL) and of every
//! template, the tokenizer, the full plan of work items, and the shard this directory
//! runs. Resume refuses a directory whose inputs changed ([`Manifest::differences`]),
//! merge joins only shards of one plan, and `report` says when a run is incomplete.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::{OutcomeKey, FORMAT_VERSION};
use crate::hash::content_hash;

/// The file name inside a run directory.
pub const FILE: &str = "run.json";

/// A mode as it was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeEntry {
    /// The label outcomes carry (preset name or spec).
    pub label: String,
    /// Its canonical spec (before a scenario's `agent.modes`).
    pub spec: String,
}

/// The configuration that decides what a run's outcomes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// The scenario paths as given (files or directories), to load them again on resume.
    pub scenario_paths: Vec<PathBuf>,
    pub modes: Vec<ModeEntry>,
    /// The model names outcomes carry.
    pub models: Vec<String>,
    /// The `--model` values as given, when they differ from the names (`replay:PATH`
    /// stands for the models it recorded); resume builds the backends from these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_specs: Vec<String>,
    pub repeat: usize,
    /// Model requests per user turn at most (`max_turns` in runs before format 4).
    #[serde(alias = "max_turns")]
    pub max_requests: usize,
    /// The protocol settings: selection threshold and maximum, calls of tools not
    /// loaded, row and result limits, skill stub length. `None` in a run made before
    /// they were recorded (such a run still reports and merges, but cannot resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<crate::strategy::ProtocolConfig>,
    pub tokenizer: String,
    /// The `--templates` directory, if any (the hashes below are what counts).
    pub templates_dir: Option<PathBuf>,
    /// A catalog-size sweep (`discbench sweep`): its sizes, seed and pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::scenario::sweep::SweepSpec>,
    /// Provider prompt caching (`--prompt-cache`, `--cache-ttl`) and the price
    /// multipliers of cache reads and writes; `None` in runs made before it was
    /// recorded, and in runs of mock models alone (nothing is cached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<PromptCache>,
    /// `--query` / `--tag`: the queries the run kept, when it did not keep all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<crate::scenario::QueryFilter>,
    /// `--savings-against`: the mode savings are measured against, when not `legacy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_against: Option<String>,
}

/// One scenario's inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioInputs {
    pub name: String,
    pub path: PathBuf,
    /// Every file it was loaded from, with the content hash of each.
    pub files: BTreeMap<PathBuf, String>,
    /// Its live MCP servers as the run found them at start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<crate::environment::live::LiveInfo>,
}

/// The planned work: every item of the whole plan (all shards), in plan order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub total: usize,
    /// A content hash of `items`: shards of one plan carry the same one.
    pub hash: String,
    pub items: Vec<OutcomeKey>,
}

impl PlanRecord {
    pub fn new(items: Vec<OutcomeKey>) -> PlanRecord {
        let bytes = serde_json::to_vec(&items).expect("keys serialize");
        PlanRecord {
            total: items.len(),
            hash: content_hash(&bytes),
            items,
        }
    }
}

/// `K/N`: the K-th of N deterministic slices of a plan (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A `--shard` value that is not `K/N` with 1 <= K <= N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not K/N with 1 <= K <= N (e.g. 2/4)")]
pub struct BadShard(pub String);

impl FromStr for Shard {
    type Err = BadShard;
    fn from_str(s: &str) -> Result<Shard, BadShard> {
        let bad = || BadShard(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The positions in `items` that belong to this shard. Items are ordered by a
    /// stable hash of their key (ties by the key) and dealt round-robin, so the N
    /// shards differ in size by at most one, each item lands in exactly one shard,
    /// and the split depends only on the plan, never on the machine.
    pub fn select(&self, items: &[OutcomeKey]) -> Vec<usize> {
        let mut order: Vec<(u64, &OutcomeKey, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, k)| (k.stable_hash(), k, i))
            .collect();
        order.sort();
        let mut mine: Vec<usize> = order
            .into_iter()
            .enumerate()
            .filter(|(pos, _)| pos % self.count == self.index - 1)
            .map(|(_, (_, _, i))| i)
            .collect();
        mine.sort_unstable();
        mine
    }
}

/// The contents of `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The outcome line format of the run ([`FORMAT_VERSION`]).
    pub format: u32,
    pub discbench_version: String,
    pub run_id: String,
    pub settings: Settings,
    pub scenarios: Vec<ScenarioInputs>,
    /// Content hash of each template's effective text, by file name.
    pub templates: BTreeMap<String, String>,
    pub plan: PlanRecord,
    /// The slice of the plan this directory runs; `None` for the whole plan.
    pub shard: Option<Shard>,
    /// How many work items this directory is meant to hold.
    pub assigned: usize,
    /// For a merged directory: the shard directories it was joined from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<PathBuf>,
}

impl Manifest {
    /// The keys this directory is meant to hold.
    pub fn assigned_keys(&self) -> Vec<OutcomeKey> {
        match self.shard {
            None => self.plan.items.clone(),
            Some(s) => s
                .select(&self.plan.items)
                .into_iter()
                .map(|i| self.plan.items[i].clone())
                .collect(),
        }
    }

    /// Each planned key's position in the plan.
    pub fn positions(&self) -> std::collections::HashMap<OutcomeKey, usize> {
        self.plan
            .items
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect()
    }

    pub fn load(dir: &Path) -> anyhow::Result<Manifest> {
        let p = dir.join(FILE);
        let bytes = std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
        // Bad input, not the machine's failure: the CLI exits 2 for it.
        let bad = |message: String| super::reader::RecordError::NotManifest {
            path: p.clone(),
            message,
        };
        let text = String::from_utf8(bytes).map_err(|e| bad(e.to_string()))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if m.format > FORMAT_VERSION {
            return Err(bad(format!(
                "written in outcome format {}, newer than the {FORMAT_VERSION} this discbench reads",
                m.format
            ))
            .into());
        }
        Ok(m)
    }

    /// Loads `run.json` when the directory has one (runs before it existed have none).
    pub fn load_if_present(dir: &Path) -> anyhow::Result<Option<Manifest>> {
        if dir.join(FILE).is_file() {
            Manifest::load(dir).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("manifest serializes");
        s.push('\n');
        s
    }

    /// What differs between the run this manifest describes and `now` (the same
    /// configuration rebuilt from today's files), in words; empty when nothing does.
    /// The version of discbench and the shard are not compared here.
    pub fn differences(&self, now: &Manifest) -> Vec<String> {
        let mut d = Vec::new();
        let a = &self.settings;
        let b = &now.settings;
        let labels = |m: &[ModeEntry]| {
            m.iter()
                .map(|e| format!("{} ({})", e.label, e.spec))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if a.modes != b.modes {
            d.push(format!(
                "modes: [{}] now [{}]",
                labels(&a.modes),
                labels(&b.modes)
            ));
        }
        if a.models != b.models {
            d.push(format!(
                "models: [{}] now [{}]",
                a.models.join(", "),
                b.models.join(", ")
            ));
        }
        if a.tokenizer != b.tokenizer {
            d.push(format!("tokenizer: {} now {}", a.tokenizer, b.tokenizer));
        }
        if a.repeat != b.repeat {
            d.push(format!("repeat: {} now {}", a.repeat, b.repeat));
        }
        if a.max_requests != b.max_requests {
            d.push(format!(
                "max requests: {} now {}",
                a.max_requests, b.max_requests
            ));
        }
        if a.prompt_cache != b.prompt_cache {
            let show = |c: &Option<PromptCache>| match c {
                Some(c) if c.enabled => format!("on, {}", c.ttl.as_str()),
                Some(_) => "off".to_string(),
                None => "(none)".to_string(),
            };
            d.push(format!(
                "prompt cache: {} now {}",
                show(&a.prompt_cache),
                show(&b.prompt_cache)
            ));
        }
        if a.filter != b.filter {
            let show = |f: &Option<crate::scenario::QueryFilter>| match f {
                Some(f) => f.describe(),
                None => "(every query)".into(),
            };
            d.push(format!(
                "query filter: {} now {}",
                show(&a.filter),
                show(&b.filter)
            ));
        }
        if a.sweep != b.sweep {
            let show = |s: &Option<crate::scenario::sweep::SweepSpec>| match s {
                Some(s) => serde_json::to_string(s).unwrap_or_default(),
                None => "(none)".into(),
            };
            d.push(format!("sweep: {} now {}", show(&a.sweep), show(&b.sweep)));
        }
        if a.protocol != b.protocol {
            let show = |p: &Option<crate::strategy::ProtocolConfig>| match p {
                Some(p) => serde_json::to_string(p).unwrap_or_default(),
                None => "(not recorded)".into(),
            };
            d.push(format!(
                "protocol settings: {} now {}",
                show(&a.protocol),
                show(&b.protocol)
            ));
        }
        for (name, h) in &self.templates {
            match now.templates.get(name) {
                Some(h2) if h2 == h => {}
                Some(_) => d.push(format!("template {name} changed")),
                None => d.push(format!("template {name} is gone")),
            }
        }
        for name in now.templates.keys() {
            if !self.templates.contains_key(name) {
                d.push(format!("template {name} is new"));
            }
        }
        let by_name = |v: &[ScenarioInputs]| -> BTreeMap<String, ScenarioInputs> {
            v.iter().map(|s| (s.name.clone(), s.clone())).collect()
        };
        let (old, new) = (by_name(&self.scenarios), by_name(&now.scenarios));
        for (name, s) in &old {
            let Some(n) = new.get(name) else {
                d.push(format!(
                    "scenario `{name}` is no longer among the scenarios"
                ));
                continue;
            };
            for (f, h) in &s.files {
                match n.files.get(f) {
                    Some(h2) if h2 == h => {}
                    Some(_) => d.push(format!(
                        "scenario `{name}`: {} changed since the run started",
                        f.display()
                    )),
                    None => d.push(format!("scenario `{name}` no longer reads {}", f.display())),
                }
            }
            for f in n.files.keys() {
                if !s.files.contains_key(f) {
                    d.push(format!("scenario `{name}` now also reads {}", f.display()));
                }
            }
        }
        for name in new.keys() {
            if !old.contains_key(name) {
                d.push(format!("scenario `{name}` is new"));
            }
        }
        if d.is_empty() && self.plan.hash != now.plan.hash {
            d.push(format!(
                "the plan differs ({} work items, now {})",
                self.plan.total, now.plan.total
            ));
        }
        d
    }
}

/// How readers order outcomes, whatever order episodes finished in: by position in
/// the run's plan when the directory has a `run.json`, else (and for keys not in
/// it) by key.
///
/// A reader that holds one entry per outcome (the JUnit cases, the explorer's rows)
/// keeps a [`Rank`] of five numbers, not the key's four strings: the strings are
/// numbered once each here, and [`PlanOrder::sort`] orders by the strings' own order,
/// so the result is the order of `(position, key)`.
pub struct PlanOrder {
    positions: std::collections::HashMap<OutcomeKey, usize>,
    /// Scenario, query id, mode (as asked for) and model, numbered as first seen.
    names: [Interner; 4],
}

/// An outcome's place in [`PlanOrder`]: its plan position (`usize::MAX` when not in
/// the plan) and its key as numbers ([`PlanOrder::key`] gives the key back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rank {
    position: usize,
    names: [u32; 4],
    repeat: usize,
}

/// What ranks sort by: plan position, the four names' places among those seen, and
/// the repeat.
pub type RankKey = (usize, u32, u32, u32, u32, usize);

impl Rank {
    pub fn repeat(&self) -> usize {
        self.repeat
    }
}

impl PlanOrder {
    pub fn for_dir(dir: &Path) -> anyhow::Result<PlanOrder> {
        Ok(PlanOrder {
            positions: Manifest::load_if_present(dir)?
                .map(|m| m.positions())
                .unwrap_or_default(),
            names: Default::default(),
        })
    }

    /// The rank of `key`.
    pub fn rank(&mut self, key: &OutcomeKey) -> Rank {
        let [s, q, m, mo] = &mut self.names;
        Rank {
            position: self.positions.get(key).copied().unwrap_or(usize::MAX),
            names: [
                s.id(&key.scenario),
                q.id(&key.query_id),
                m.id(&key.mode),
                mo.id(&key.model),
            ],
            repeat: key.repeat,
        }
    }

    /// The rank of the key `r` stands for, at another repeat.
    pub fn with_repeat(&self, r: &Rank, repeat: usize) -> Rank {
        let mut key = self.key(r);
        key.repeat = repeat;
        Rank {
            position: self.positions.get(&key).copied().unwrap_or(usize::MAX),
            names: r.names,
            repeat,
        }
    }

    /// The key a rank stands for.
    pub fn key(&self, r: &Rank) -> OutcomeKey {
        let name = |i: usize| self.names[i].get(r.names[i]).to_string();
        OutcomeKey {
            scenario: name(0),
            query_id: name(1),
            mode: name(2),
            model: name(3),
            repeat: r.repeat,
        }
    }

    /// Sorts `items` by their ranks (stable): by plan position, then by key.
    pub fn sort<T>(&self, items: &mut [T], rank: impl Fn(&T) -> &Rank) {
        let key = self.sort_key();
        items.sort_by_key(|t| key(rank(t)));
    }

    /// What [`PlanOrder::sort`] orders by, for the ranks given so far. Names first
    /// seen later fall between the earlier ones without changing their order, so a
    /// key taken later orders earlier ranks as this one does (what a
    /// [`super::spill::Spill`] needs of it).
    pub fn sort_key(&self) -> impl Fn(&Rank) -> RankKey {
        let order = self.names.each_ref().map(Interner::sorted_ranks);
        move |r| {
            let n = |i: usize| order[i][r.names[i] as usize];
            (r.position, n(0), n(1), n(2), n(3), r.repeat)
        }
    }

    /// Writes `items` out as one sorted run, in this order of each one's `rank`, when
    /// there are as many as may be held: what a reader that keeps one entry per
    /// outcome (the JUnit cases, the explorer's rows) does after each push.
    pub fn spill_if_full<T: Serialize + serde::de::DeserializeOwned>(
        &self,
        items: &mut super::spill::Spill<T>,
        rank: impl Fn(&T) -> &Rank,
    ) -> anyhow::Result<()> {
        if items.full() {
            let key = self.sort_key();
            items.spill(|t| key(rank(t)))?;
        }
        Ok(())
    }
}

/// Strings numbered in the order they are first seen, each held once.
#[derive(Default)]
pub struct Interner {
    index: std::collections::HashMap<std::sync::Arc<str>, u32>,
    list: Vec<std::sync::Arc<str>>,
}

impl Interner {
    /// The number of `s`, given to it when new.
    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        let s: std::sync::Arc<str> = s.into();
        self.list.push(s.clone());
        self.index.insert(s, i);
        i
    }

    pub fn get(&self, id: u32) -> &str {
        &self.list[id as usize]
    }

    /// Every string, by number.
    pub fn list(&self) -> &[std::sync::Arc<str>] {
        &self.list
    }

    /// Each number's place among the strings sorted.
    fn sorted_ranks(&self) -> Vec<u32> {
        let mut by: Vec<u32> = (0..self.list.len() as u32).collect();
        by.sort_by(|&a, &b| self.list[a as usize].cmp(&self.list[b as usize]));
        let mut at = vec![0; by.len()];
        for (place, &id) in by.iter().enumerate() {
            at[id as usize] = place as u32;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<OutcomeKey> {
        (0..n)
            .map(|i| OutcomeKey {
                scenario: format!("s{}", i % 3),
                query_id: format!("q{i}"),
                mode: "progressive".into(),
                model: "oracle".into(),
                repeat: 0,
            })
            .collect()
    }

    /// Ranks sort as `(position, key)` did: plan keys by position, the rest after
    /// them by scenario, query, mode, model and repeat, whatever order they came in.
    #[test]
    fn ranks_sort_by_plan_position_then_by_key() {
        let plan = keys(6);
        let mut order = PlanOrder {
            positions: plan.iter().cloned().zip([4, 0, 5, 1, 3, 2]).collect(),
            names: Default::default(),
        };
        let mut all = plan.clone();
        for (i, s) in ["b", "a", "c", "a"].iter().enumerate() {
            for r in [1, 0] {
                all.push(OutcomeKey {
                    scenario: s.to_string(),
                    query_id: format!("q{}", 9 - i),
                    mode: ["z", "progressive"][i % 2].into(),
                    model: "oracle".into(),
                    repeat: r,
                });
            }
        }
        all.reverse();
        let mut ranks: Vec<Rank> = all.iter().map(|k| order.rank(k)).collect();
        order.sort(&mut ranks, |r| r);
        let sorted: Vec<OutcomeKey> = ranks.iter().map(|r| order.key(r)).collect();
        let mut want: Vec<(usize, OutcomeKey)> = all
            .iter()
            .map(|k| {
                (
                    order.positions.get(k).copied().unwrap_or(usize::MAX),
                    k.clone(),
                )
            })
            .collect();
        want.sort();
        assert_eq!(sorted, want.into_iter().map(|w| w.1).collect::<Vec<_>>());
        assert_eq!(sorted[0], plan[1]);
        assert_eq!(sorted[6].scenario, "a");
        // Another repeat of a plan key is placed as that key would be.
        let r = order.rank(&plan[2]);
        let again = order.with_repeat(&r, 0);
        assert_eq!(again, r);
        let off_plan = order.with_repeat(&r, 1);
        assert_eq!(off_plan.repeat(), 1);
        let mut two = vec![off_plan, order.rank(&plan[0])];
        order.sort(&mut two, |r| r);
        assert_eq!(
            two[1], off_plan,
            "a key not in the plan goes after the plan"
        );
    }

    #[test]
    fn shards_partition_the_plan_evenly() {
        let items = keys(103);
        let mut seen = vec![0; items.len()];
        let mut sizes = Vec::new();
        for k in 1..=4 {
            let s = Shard { index: k, count: 4 };
            let mine = s.select(&items);
            sizes.push(mine.len());
            for i in mine {
                seen[i] += 1;
            }
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "every item in exactly one shard"
        );
        assert_eq!(sizes.iter().sum::<usize>(), 103);
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        // Deterministic.
        let s = Shard { index: 2, count: 4 };
        assert_eq!(s.select(&items), s.select(&items));
    }

    #[test]
    fn shard_specs_parse() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["0/4", "5/4", "a/b", "3", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}

/// A cache read, as a share of the input price.
pub const READ: f64 = 0.1;
/// A cache write with the 5-minute TTL, as a multiple of the input price.
pub const WRITE_5M: f64 = 1.25;
/// A cache write with the 1-hour TTL, as a multiple of the input price.
pub const WRITE_1H: f64 = 2.0;

/// How long a cache entry lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ttl {
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    #[serde(rename = "1h")]
    OneHour,
}

impl Ttl {
    pub fn as_str(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
        }
    }

    pub fn parse(s: &str) -> Result<Ttl, String> {
        match s {
            "5m" => Ok(Ttl::FiveMinutes),
            "1h" => Ok(Ttl::OneHour),
            _ => Err(format!("a cache TTL is 5m or 1h, not `{s}`")),
        }
    }

    /// What a write costs, as a multiple of the input price.
    pub fn write_multiplier(self) -> f64 {
        match self {
            Ttl::FiveMinutes => WRITE_5M,
            Ttl::OneHour => WRITE_1H,
        }
    }
}

/// Provider prompt caching as a run asks for it (`--prompt-cache`, `--cache-ttl`), with
/// the price multipliers in force — Anthropic's published ones (Prompt caching page,
/// read 2026-11-25): a read at [`READ`] × the input price, a write at [`WRITE_5M`] × or
/// [`WRITE_1H`] × by TTL; a models-file entry's own prices win. What `run.json`
/// records.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PromptCache {
    pub enabled: bool,
    pub ttl: Ttl,
    /// A read's price as a share of the input price.
    pub read_multiplier: f64,
    /// A write's price as a multiple of the input price.
    pub write_multiplier: f64,
}

// The multipliers are published constants, never NaN: equality is total.
impl Eq for PromptCache {}

impl Default for PromptCache {
    fn default() -> PromptCache {
        PromptCache::new(true, Ttl::FiveMinutes)
    }
}

impl PromptCache {
    pub fn new(enabled: bool, ttl: Ttl) -> PromptCache {
        PromptCache {
            enabled,
            ttl,
            read_multiplier: READ,
            write_multiplier: ttl.write_multiplier(),
        }
    }
}
