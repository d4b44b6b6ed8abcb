//! Catalog-size sweeps: one scenario run at several catalog sizes, for the same
//! queries and expectations, so that accuracy and tokens can be drawn against size.
//!
//! [`sweep`] makes one scenario per size, named `<scenario>@<size>`, in which every
//! query has a catalog of its own ([`super::Query::catalog`]) holding exactly `size`
//! callable addresses:
//!
//! - the addresses the query needs, always: every expected call and alternative, the
//!   `allow`ed and the `forbid`den ones (the tempting wrong action must stay
//!   tempting), and what its `scope` names;
//! - then distractors, first from an order fixed by the seed over every other address
//!   — the scenario's own, and every tool of the pool of real MCP captures
//!   ([`Pool`], by default every `*.tools.json` in `fixtures/catalogs/`). The order is
//!   one for all sizes, so a size's catalog holds every smaller size's: the curve
//!   adds distractors, it does not redraw them. With `near_duplicates`, the order is
//!   per query instead: the candidates whose name and description are closest (BM25)
//!   to the tools the query needs come first — where selection breaks.
//!
//! A query that needs more addresses than a size holds gets just those, and the
//! sweep says so ([`SweepNotes::over`]). A pool server whose name the scenario already
//! uses is renamed `<name>-2` (`-3`, …); a pool tool equal to one already in the
//! catalog (same name, description and input schema: a capture the scenario itself
//! includes) is skipped, since a second copy would be an equally right answer the
//! expectation does not name. A size larger than every address there is is refused.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::load::load_mcp_dump;
use super::types::{Query, Scenario};
use crate::bm25;
use crate::catalog::{Address, Catalog, McpServer};
use crate::error::{InputError, InputErrors};

/// The pool a sweep draws from when none is given: the committed captures the
/// scenarios include, and the pool of servers from the package registries
/// (`fixtures/pool/`, gzip-compressed captures).
pub const DEFAULT_POOL: [&str; 2] = ["fixtures/catalogs", "fixtures/pool"];

/// A pool file's server name: its file name without `.tools.json` or `.tools.json.gz`;
/// `None` for a file that is neither.
fn capture_stem(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(".tools.json")
        .or_else(|| name.strip_suffix(".tools.json.gz"))
        .filter(|s| !s.is_empty())
}

/// What a sweep is: recorded in `run.json`, so that `--resume` makes the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Catalog sizes, ascending, each once.
    pub sizes: Vec<usize>,
    pub seed: u64,
    /// Pool files or directories, as given.
    pub pool: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub near_duplicates: bool,
}

impl SweepSpec {
    /// Sizes from `10,30,100`: each at least 1; sorted, each once.
    pub fn parse_sizes(text: &str) -> Result<Vec<usize>, String> {
        let mut sizes = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let n: usize = part
                .parse()
                .map_err(|_| format!("`{part}` is not a catalog size (a whole number)"))?;
            if n == 0 {
                return Err("a catalog size must be at least 1".into());
            }
            sizes.push(n);
        }
        if sizes.is_empty() {
            return Err("give at least one size, e.g. 10,30,100".into());
        }
        sizes.sort_unstable();
        sizes.dedup();
        Ok(sizes)
    }
}

/// Real MCP servers to draw distractors from, each named by its file's stem.
pub struct Pool {
    pub servers: Vec<McpServer>,
    /// Every pool file with the content hash of what was read (for `run.json`).
    pub sources: BTreeMap<PathBuf, String>,
}

/// Loads every `*.tools.json` and `*.tools.json.gz` of the given files and directories
/// (directories are read one level deep, files in name order).
pub fn load_pool(paths: &[PathBuf]) -> Result<Pool, InputErrors> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| InputErrors(vec![InputError::new(p, "", e.to_string())]))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| capture_stem(f).is_some())
                .collect();
            found.sort();
            files.extend(found);
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            return Err(InputErrors(vec![InputError::new(
                p,
                "",
                "no such file or directory (a sweep's pool is MCP captures: *.tools.json or *.tools.json.gz)",
            )]));
        }
    }
    if files.is_empty() {
        return Err(InputErrors(vec![InputError::new(
            paths.first().map_or(Path::new("."), |p| p.as_path()),
            "",
            "the pool holds no *.tools.json or *.tools.json.gz capture",
        )]));
    }
    // Read and checked on every core (each tool's schema is compiled: a second per
    // ten thousand tools), kept in file order.
    let read = |f: &PathBuf| {
        let stem = capture_stem(f)
            .or_else(|| f.file_stem().and_then(|s| s.to_str()))
            .unwrap_or("pool")
            .to_string();
        load_mcp_dump(f, &stem)
    };
    let read: Vec<_> = {
        use rayon::prelude::*;
        files.par_iter().map(read).collect()
    };
    let mut servers = Vec::new();
    let mut sources = BTreeMap::new();
    let mut errors = Vec::new();
    for (f, slot) in files.into_iter().zip(read) {
        match slot {
            Ok((server, hash)) => {
                sources.insert(f, hash);
                servers.push(server);
            }
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    if !errors.is_empty() {
        return Err(InputErrors(errors));
    }
    Ok(Pool { servers, sources })
}

/// What a sweep decided, for the user to read.
#[derive(Debug, Clone, Default)]
pub struct SweepNotes {
    /// Pool servers renamed because the scenario already has the name: (from, to).
    pub renamed: Vec<(String, String)>,
    /// Pool tools left out as copies of a tool already in the catalog.
    pub duplicates: usize,
    /// Distinct addresses to draw from in all (the scenario's and the pool's).
    pub available: usize,
    /// (size, query id, addresses it needs) where a query needs more than the size.
    pub over: Vec<(usize, String, usize)>,
}

/// The name of a sweep's scenario at one size: `<scenario>@<size>`.
pub fn point_name(base: &str, size: usize) -> String {
    format!("{base}@{size}")
}

/// A sweep's scenario name split into its scenario and size; `None` for any other.
pub fn split_point(name: &str) -> Option<(&str, usize)> {
    let (base, size) = name.rsplit_once('@')?;
    if base.is_empty() || size.is_empty() || !size.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, size.parse().ok()?))
}

/// The order reports list scenarios in: by name, a sweep's sizes in numeric order.
pub fn order_key(name: &str) -> (&str, usize) {
    split_point(name).unwrap_or((name, 0))
}

/// Every address a query must find in its catalog.
pub fn needed(q: &Query, catalog: &Catalog) -> BTreeSet<Address> {
    let mut out = BTreeSet::new();
    for e in q.expects() {
        for step in &e.calls {
            for alt in &step.alternatives {
                out.insert(alt.address.clone());
            }
        }
        out.extend(e.allow.iter().map(|a| a.address.clone()));
        out.extend(e.forbid.iter().cloned());
    }
    if !q.scope.is_empty() {
        out.extend(
            catalog
                .addresses()
                .into_iter()
                .filter(|a| q.scope.contains(&a.resource())),
        );
    }
    out
}

/// The scenario's catalog with the pool's servers added (renamed where the name is
/// taken; tools that copy one already there left out).
fn grown(base: &Catalog, pool: &Pool, notes: &mut SweepNotes) -> Catalog {
    let mut out = base.clone();
    let key = |t: &crate::catalog::McpTool| {
        let mut schema = String::new();
        canonical(&t.input_schema, &mut schema);
        (t.name.clone(), t.description.clone(), schema)
    };
    let mut seen: HashSet<(String, String, String)> = out
        .mcp_servers
        .iter()
        .flat_map(|s| &s.tools)
        .map(key)
        .collect();
    let taken = |out: &Catalog, n: &str| {
        out.mcp_servers.iter().any(|s| s.name == n) || out.connectors.iter().any(|c| c.name == n)
    };
    for server in &pool.servers {
        let mut s = server.clone();
        s.tools.retain(|t| {
            let fresh = seen.insert(key(t));
            if !fresh {
                notes.duplicates += 1;
            }
            fresh
        });
        if s.tools.is_empty() {
            continue;
        }
        if taken(&out, &s.name) {
            let mut k = 2;
            while taken(&out, &format!("{}-{k}", server.name)) {
                k += 1;
            }
            s.name = format!("{}-{k}", server.name);
            notes.renamed.push((server.name.clone(), s.name.clone()));
        }
        out.mcp_servers.push(s);
    }
    out
}

/// A JSON value written with every object's keys in order, so that two schemas equal
/// as values (key order aside) are written alike.
fn canonical(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A stable 64-bit key of an address under a seed: the sweep's draw order.
fn draw_key(seed: u64, a: &Address) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(a.to_string().as_bytes());
    u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().expect("8 bytes"))
}

/// What BM25 reads of an address: its name in words and its description.
fn text_of(catalog: &Catalog, a: &Address) -> String {
    let name = a.to_string().replace(['_', '-', '.', '/', ':'], " ");
    use crate::catalog::Target;
    let description = match catalog.lookup(a) {
        Some(Target::Skill(s)) => s.description.as_str(),
        Some(Target::Action(_, x)) => x.description.as_str(),
        Some(Target::Database(d)) => d.description.as_str(),
        Some(Target::McpTool(_, t)) => t.description.as_str(),
        Some(Target::Builtin(b)) => b.description.as_str(),
        None => "",
    };
    format!("{name} {description}")
}

/// One scenario per size (see the module documentation).
pub fn sweep(
    base: &Scenario,
    pool: &Pool,
    spec: &SweepSpec,
) -> Result<(Vec<Scenario>, SweepNotes), String> {
    let mut notes = SweepNotes::default();
    let all = Arc::new(grown(&base.catalog, pool, &mut notes));
    let addresses = all.addresses();
    notes.available = addresses.len();
    if let Some(&too_big) = spec.sizes.iter().find(|&&n| n > addresses.len()) {
        return Err(format!(
            "size {too_big} is larger than every address there is to draw from ({} in `{}` and its pool); add captures with --pool or lower --sizes",
            addresses.len(),
            base.name
        ));
    }
    let mut random = addresses.clone();
    random.sort_by_cached_key(|a| (draw_key(spec.seed, a), a.clone()));
    // Near duplicates: every candidate's text indexed once, each query ranks them.
    let index = spec.near_duplicates.then(|| {
        let docs: Vec<String> = random.iter().map(|a| text_of(&all, a)).collect();
        bm25::Index::new(&docs)
    });
    let mut sources = base.sources.clone();
    sources.extend(pool.sources.clone());
    let mut out: Vec<Scenario> = spec
        .sizes
        .iter()
        .map(|&n| Scenario {
            name: point_name(&base.name, n),
            description: format!(
                "{} — catalogs of {n} callable addresses per query (sweep, seed {}{})",
                base.name,
                spec.seed,
                if spec.near_duplicates {
                    ", nearest distractors"
                } else {
                    ""
                }
            ),
            path: base.path.clone(),
            catalog: all.clone(),
            agent: base.agent.clone(),
            queries: Vec::with_capacity(base.queries.len()),
            sources: sources.clone(),
            live: base.live.clone(),
        })
        .collect();
    // Catalogs of equal contents are shared (no-call queries, queries needing the
    // same tools).
    let mut made: HashMap<Vec<Address>, Arc<Catalog>> = HashMap::new();
    for q in &base.queries {
        let need = needed(q, &base.catalog);
        let order: Vec<&Address> = match &index {
            None => random.iter().collect(),
            Some(ix) => {
                let probe: String = if need.is_empty() {
                    q.text.clone()
                } else {
                    need.iter()
                        .map(|a| text_of(&all, a))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let scores = ix.scores(&probe);
                let mut ranked: Vec<usize> = (0..random.len()).collect();
                ranked.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
                ranked.into_iter().map(|i| &random[i]).collect()
            }
        };
        let rest: Vec<&Address> = order.into_iter().filter(|a| !need.contains(a)).collect();
        for (s, &n) in spec.sizes.iter().enumerate() {
            if need.len() > n {
                notes.over.push((n, q.id.clone(), need.len()));
            }
            let mut keep: Vec<Address> = need.iter().cloned().collect();
            keep.extend(
                rest.iter()
                    .take(n.saturating_sub(need.len()))
                    .map(|a| (*a).clone()),
            );
            keep.sort();
            let catalog = made
                .entry(keep.clone())
                .or_insert_with(|| Arc::new(all.restricted(&keep.into_iter().collect())))
                .clone();
            out[s].queries.push(Query {
                catalog: Some(catalog),
                ..q.clone()
            });
        }
    }
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_names_split_back_and_order_by_size() {
        assert_eq!(split_point(&point_name("hub", 30)), Some(("hub", 30)));
        assert_eq!(split_point("hub"), None);
        assert_eq!(split_point("a@b"), None);
        assert_eq!(split_point("@10"), None);
        let mut v = vec!["hub@100", "hub@30", "hub@1000", "alpha"];
        v.sort_by_key(|n| order_key(n));
        assert_eq!(v, ["alpha", "hub@30", "hub@100", "hub@1000"]);
    }

    #[test]
    fn sizes_parse_sorted_once_and_refuse_nonsense() {
        assert_eq!(
            SweepSpec::parse_sizes("100, 10,30,10").unwrap(),
            [10, 30, 100]
        );
        assert!(SweepSpec::parse_sizes("0").is_err());
        assert!(SweepSpec::parse_sizes("ten").unwrap_err().contains("`ten`"));
        assert!(SweepSpec::parse_sizes("").is_err());
    }
}
