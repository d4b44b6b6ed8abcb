//! The plan: built once before anything runs. Each scenario × mode is rendered once
//! into a [`Unit`] (its composite and the token counts of its first-request texts) and
//! shared read-only by all of its episodes — once per distinct view when queries
//! carry their own `scope`, `instructions` or catalog (a sweep gives every query a
//! catalog of its own); each scenario's databases are seeded once; the work items are
//! listed in a fixed order (scenario, mode, model, repeat, query) and keyed by
//! [`OutcomeKey`].
//!
//! A unit is rendered when its first work item starts and dropped after its last one
//! ([`UnitSlot`]), so a run holds the units of the work in flight, not every view of
//! every scenario × mode at once: a sweep to 1,000 tools renders 65 queries × 6 modes ×
//! 5 sizes views of up to a thousand definitions each. The first view of each scenario
//! × mode is rendered while the plan is built, and with a template override every view
//! is, so that a template that fails to render fails before anything runs.

use std::sync::{Arc, Mutex};

use super::config::RunConfig;
use crate::catalog::{Catalog, Part, Resource};
use crate::environment::live::Live;
use crate::environment::Databases;
use crate::hash::FastMap;
use crate::record::manifest::{ModeEntry, PlanRecord, ScenarioInputs, Settings};
use crate::record::OutcomeKey;
use crate::scenario::Scenario;
use crate::strategy::{Composite, Mode, ProtocolConfig, Templates};
use crate::tokens::Counter;

/// Why a plan cannot be built: bad input, found before anything runs.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    #[error("scenario `{scenario}`: {source}")]
    Database {
        scenario: String,
        source: crate::environment::DbError,
    },
    #[error("scenario `{scenario}` under mode `{mode}`: {source}")]
    Template {
        scenario: String,
        mode: String,
        source: crate::strategy::TemplateError,
    },
}

/// One scenario × mode, rendered (for the queries that share one scope and one set
/// of instructions).
pub struct Unit {
    pub scenario: usize,
    /// How many addresses the rendered catalog holds (the query's scope).
    pub catalog_size: usize,
    /// The mode label as asked for (outcomes carry it).
    pub mode_label: String,
    pub composite: Arc<Composite>,
    pub max_requests: usize,
    /// Tokens of the system prompt.
    pub system_tokens: usize,
    /// Per top-level tool of the mode (not `request_tools`, whose text changes): its
    /// tokens and the exact JSON sent, made when an episode first sends it (a view of
    /// ten thousand deferred tools sends a few of them).
    tool_texts: Mutex<FastMap<String, ToolText>>,
}

/// A tool definition as sent: its tokens, its exact JSON and that JSON's hash (the
/// piece the cache prediction chains). The text is shared, not copied, between the
/// requests that send it.
#[derive(Clone)]
pub struct ToolText {
    pub tokens: usize,
    pub text: Arc<str>,
    pub hash: u64,
}

impl ToolText {
    fn new(t: &crate::wire::ToolDef, counter: &Counter) -> ToolText {
        let text = t.wire_json();
        ToolText {
            tokens: counter.count(&text),
            hash: hash_value(text.as_str()),
            text: Arc::from(text),
        }
    }
}

/// A hash of a message or text, to tell the pieces of two requests apart. It never
/// leaves the process (only equal chains are compared), so it is foldhash with a
/// fixed seed, not SipHash, which took 2% of the suite's time hashing tool texts.
pub fn hash_value<T: std::hash::Hash + ?Sized>(x: &T) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::default().hash_one(x)
}

impl Unit {
    /// A tool definition as sent: kept once per unit for the mode's own tools, made
    /// anew for any other (`request_tools`, or a name a provider's name rule changed).
    pub fn tool_text(&self, t: &crate::wire::ToolDef, counter: &Counter) -> ToolText {
        if !self.composite.is_own_tool(&t.name) {
            return ToolText::new(t, counter);
        }
        if let Some(known) = self
            .tool_texts
            .lock()
            .expect("tool texts lock")
            .get(&t.name)
        {
            return known.clone();
        }
        let made = ToolText::new(t, counter);
        self.tool_texts
            .lock()
            .expect("tool texts lock")
            .insert(t.name.clone(), made.clone());
        made
    }
}

/// A scenario with the environment its episodes act on.
pub struct ScenarioRun {
    pub scenario: Arc<Scenario>,
    pub databases: Arc<Databases>,
    /// Its live MCP servers, when it has any: nothing is started until a call needs
    /// it (and `run` starts nothing unless the user allowed it).
    pub live: Option<Arc<Live>>,
}

/// One unit of work.
#[derive(Debug, Clone)]
pub struct WorkItem {
    pub key: OutcomeKey,
    /// The unit of its first turn.
    pub unit: usize,
    /// A conversation whose turns add to the catalog: (turn, unit) from each such turn
    /// on (0-based turns).
    pub stages: Vec<(usize, usize)>,
    pub query: usize,
    pub model: usize,
    pub repeat: usize,
}

/// Everything a run will do.
pub struct Plan {
    pub scenarios: Vec<ScenarioRun>,
    pub units: Vec<UnitSlot>,
    pub items: Vec<WorkItem>,
}

/// What a [`Unit`] is rendered from, and the unit while work items still need it.
pub struct UnitSlot {
    scenario: usize,
    catalog: Arc<Catalog>,
    instructions: Option<String>,
    mode: Mode,
    mode_label: String,
    max_requests: usize,
    templates: Arc<Templates>,
    protocol: ProtocolConfig,
    held: Mutex<Held>,
}

/// The rendered unit, kept while `uses` work items are still to take it.
#[derive(Default)]
struct Held {
    unit: Option<Arc<Unit>>,
    uses: usize,
}

impl UnitSlot {
    fn render(&self, counter: &Counter) -> Result<Unit, crate::strategy::TemplateError> {
        let composite = Composite::new(
            &self.catalog,
            self.instructions.as_deref(),
            self.mode.clone(),
            &self.templates,
            self.protocol,
        )
        .and_then(|c| c.check_templates().map(|_| c))?;
        Ok(Unit {
            scenario: self.scenario,
            catalog_size: self.catalog.addresses().len(),
            mode_label: self.mode_label.clone(),
            system_tokens: counter.count(composite.system()),
            composite: Arc::new(composite),
            max_requests: self.max_requests,
            tool_texts: Mutex::default(),
        })
    }

    /// The unit, rendered now if it is not held; held afterwards while work items are
    /// still to take it.
    pub fn get(&self, counter: &Counter) -> Arc<Unit> {
        self.take_with(counter, false)
    }

    /// The unit for one work item: as [`UnitSlot::get`], and one use fewer; the slot
    /// lets the unit go when no work item is left to take it (the episodes that took
    /// it keep their own reference).
    pub fn take(&self, counter: &Counter) -> Arc<Unit> {
        self.take_with(counter, true)
    }

    fn take_with(&self, counter: &Counter, used: bool) -> Arc<Unit> {
        let mut held = self.held.lock().expect("unit slot lock");
        let unit = match &held.unit {
            Some(u) => u.clone(),
            None => Arc::new(self.render(counter).expect(
                "the templates rendered while the plan was built (built-in, or every view checked)",
            )),
        };
        if used {
            held.uses = held.uses.saturating_sub(1);
        }
        held.unit = (held.uses > 0).then(|| unit.clone());
        unit
    }
}

impl Plan {
    /// Renders every scenario × mode, seeds every database, and lists the work items.
    /// A template that fails to render or a seed that fails is an error here, before
    /// anything runs.
    pub fn build(
        scenarios: &[Scenario],
        cfg: &RunConfig,
        counter: &Counter,
    ) -> Result<Plan, PlanError> {
        let mut runs = Vec::new();
        let mut units = Vec::new();
        let mut items = Vec::new();
        // (unit, whether it is kept, its scenario's name): the units rendered now.
        let mut eager: Vec<(usize, bool, String)> = Vec::new();
        for (s, sc) in scenarios.iter().enumerate() {
            let databases =
                Databases::build_with(&sc.catalog, cfg.protocol.sql).map_err(|source| {
                    PlanError::Database {
                        scenario: sc.name.clone(),
                        source,
                    }
                })?;
            runs.push(ScenarioRun {
                scenario: Arc::new(sc.clone()),
                databases: Arc::new(databases),
                live: (!sc.live.is_empty()).then(|| Arc::new(Live::new(sc.live.clone()))),
            });
            // Each distinct view (its own catalog, scope, instructions) of the
            // scenario's catalog, and its catalog: the whole one, shared, when a query
            // names no scope and has no catalog of its own.
            // A conversation whose turns add to the catalog has one view per stage:
            // what is hidden until a later turn adds it is in no context before.
            type View<'a> = (
                Option<*const Catalog>,
                &'a [Resource],
                Option<String>,
                Vec<Part>,
            );
            let mut views: Vec<View> = Vec::new();
            let mut own: Vec<Option<&Arc<Catalog>>> = Vec::new();
            // Per query: the view of its first turn, then (turn, view) where it changes.
            let view_of: Vec<(usize, Vec<(usize, usize)>)> = sc
                .queries
                .iter()
                .map(|q| {
                    let mut stages: Vec<(usize, usize)> = Vec::new();
                    for t in 0..q.n_turns() {
                        if t > 0 && q.turn_adds(t).is_empty() {
                            continue;
                        }
                        let v = (
                            q.catalog.as_ref().map(Arc::as_ptr),
                            q.scope.as_slice(),
                            q.instructions(&sc.agent),
                            q.hidden_at(t),
                        );
                        let at = views.iter().position(|x| *x == v).unwrap_or_else(|| {
                            views.push(v);
                            own.push(q.catalog.as_ref());
                            views.len() - 1
                        });
                        stages.push((t, at));
                    }
                    let first = stages.remove(0).1;
                    (first, stages)
                })
                .collect();
            let catalogs: Vec<Arc<Catalog>> = views
                .iter()
                .zip(&own)
                .map(|((_, scope, _, hidden), own)| {
                    let base = match (own, scope.is_empty()) {
                        (Some(c), _) => (*c).clone(),
                        (None, true) => sc.catalog.clone(),
                        (None, false) => Arc::new(sc.catalog.scoped(scope)),
                    };
                    if hidden.is_empty() {
                        base
                    } else {
                        Arc::new(base.without(hidden))
                    }
                })
                .collect();
            for requested in &cfg.modes {
                let mode = requested.with_overrides(&sc.agent.modes);
                let first_unit = units.len();
                for (v, ((_, _, instructions, _), catalog)) in
                    views.iter().zip(&catalogs).enumerate()
                {
                    let slot = UnitSlot {
                        scenario: s,
                        catalog: catalog.clone(),
                        instructions: instructions.clone(),
                        mode: mode.clone(),
                        mode_label: requested.label.clone(),
                        max_requests: sc
                            .agent
                            .max_requests
                            .map(|t| t as usize)
                            .unwrap_or(cfg.max_requests),
                        templates: cfg.templates.clone(),
                        protocol: cfg.protocol,
                        held: Mutex::default(),
                    };
                    // The first view always, and every view when the templates are
                    // the user's: rendered before anything runs, so a broken template
                    // is an error here. The first view is kept for its work items,
                    // unless the queries carry catalogs of their own (a sweep): then
                    // each view serves one query, its turn may be far off, and a
                    // sweep's first views of ten thousand tools would be held, one
                    // per size × mode, from here until then (rendering one again
                    // costs less than holding it).
                    if v == 0 || cfg.templates_dir.is_some() {
                        let keep = v == 0 && own[0].is_none();
                        eager.push((units.len(), keep, sc.name.clone()));
                    }
                    units.push(slot);
                }
                for (m, model) in cfg.models.iter().enumerate() {
                    for r in 0..cfg.repeat {
                        for (q, query) in sc.queries.iter().enumerate() {
                            items.push(WorkItem {
                                key: OutcomeKey {
                                    scenario: sc.name.clone(),
                                    query_id: query.id.clone(),
                                    mode: requested.label.clone(),
                                    model: model.clone(),
                                    repeat: r,
                                },
                                unit: first_unit + view_of[q].0,
                                stages: view_of[q]
                                    .1
                                    .iter()
                                    .map(|&(t, v)| (t, first_unit + v))
                                    .collect(),
                                query: q,
                                model: m,
                                repeat: r,
                            });
                        }
                    }
                }
            }
        }
        render_eagerly(&units, &eager, counter)?;
        let plan = Plan {
            scenarios: runs,
            units,
            items,
        };
        plan.expect_uses((0..plan.items.len()).collect::<Vec<_>>().as_slice());
        Ok(plan)
    }

    /// `todo` with the work items of each unit next to each other (every model and
    /// repeat of one view, in plan order otherwise), for a plan whose queries carry
    /// their own catalogs (a sweep): its units are then one per query × mode, and in
    /// plan order (model before query) every view of a mode would be held from the
    /// first model's pass until the last model's. Outcomes do not depend on the order
    /// items start in (they are written as they finish); runs that are not sweeps keep
    /// plan order, which a provider's cache across episodes sees.
    pub fn view_order(&self, todo: &mut [usize]) {
        todo.sort_by_key(|&i| self.items[i].unit);
    }

    /// Counts, per unit, the work items of `todo` that will take it, so that each unit
    /// is let go after its last one (a resume or a shard runs only some items).
    pub fn expect_uses(&self, todo: &[usize]) {
        let mut uses = vec![0; self.units.len()];
        for &i in todo {
            uses[self.items[i].unit] += 1;
            for &(_, u) in &self.items[i].stages {
                uses[u] += 1;
            }
        }
        for (slot, n) in self.units.iter().zip(uses) {
            let mut held = slot.held.lock().expect("unit slot lock");
            held.uses = n;
            if n == 0 {
                held.unit = None;
            }
        }
    }

    /// The unit work item `item` runs in (one use of it: see [`UnitSlot::take`]).
    pub fn unit(&self, item: usize, counter: &Counter) -> Arc<Unit> {
        self.units[self.items[item].unit].take(counter)
    }

    /// The units of a conversation's later stages: (turn, unit) where the catalog
    /// grows (one use of each).
    pub fn stages(&self, item: usize, counter: &Counter) -> Vec<(usize, Arc<Unit>)> {
        self.items[item]
            .stages
            .iter()
            .map(|&(t, u)| (t, self.units[u].take(counter)))
            .collect()
    }

    pub fn keys(&self) -> Vec<OutcomeKey> {
        self.items.iter().map(|i| i.key.clone()).collect()
    }

    /// The plan as `run.json` records it.
    pub fn record(&self) -> PlanRecord {
        PlanRecord::new(self.keys())
    }
}

/// Renders the units `eager` lists, on every core (they are independent, and a
/// large suite has hundreds), keeping those marked to keep; the first failure in
/// plan order is the error.
fn render_eagerly(
    units: &[UnitSlot],
    eager: &[(usize, bool, String)],
    counter: &Counter,
) -> Result<(), PlanError> {
    use rayon::prelude::*;
    // The first failure in plan order, whichever core meets it first.
    let failure = eager
        .par_iter()
        .enumerate()
        .filter_map(|(i, (u, keep, _))| match units[*u].render(counter) {
            Ok(unit) => {
                if *keep {
                    units[*u].held.lock().expect("unit slot lock").unit = Some(Arc::new(unit));
                }
                None
            }
            Err(e) => Some((i, e)),
        })
        .min_by_key(|(i, _)| *i);
    match failure {
        None => Ok(()),
        Some((i, source)) => {
            let (u, _, scenario) = &eager[i];
            Err(PlanError::Template {
                scenario: scenario.clone(),
                mode: units[*u].mode_label.clone(),
                source,
            })
        }
    }
}

/// The settings and input hashes `run.json` records for this configuration.
pub fn settings(cfg: &RunConfig, tokenizer: &str) -> Settings {
    Settings {
        scenario_paths: cfg.scenario_paths.clone(),
        modes: cfg
            .modes
            .iter()
            .map(|m| ModeEntry {
                label: m.label.clone(),
                spec: m.canonical_spec(),
            })
            .collect(),
        models: cfg.models.clone(),
        model_specs: Vec::new(),
        repeat: cfg.repeat,
        max_requests: cfg.max_requests,
        protocol: Some(cfg.protocol),
        tokenizer: tokenizer.to_string(),
        templates_dir: cfg.templates_dir.clone(),
        sweep: None,
        prompt_cache: None,
        filter: None,
        savings_against: None,
    }
}

/// Each scenario's files and their content hashes.
pub fn scenario_inputs(scenarios: &[Scenario]) -> Vec<ScenarioInputs> {
    scenarios
        .iter()
        .map(|s| ScenarioInputs {
            name: s.name.clone(),
            path: s.path.clone(),
            files: s.sources.clone(),
            live: Vec::new(),
        })
        .collect()
}
