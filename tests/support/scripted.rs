//! A model that plays from scripts, for tests that drive a protocol call by call.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use discbench::model::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
use discbench::record::{Outcome, OutcomeKey};
use discbench::runner::{self, Plan, RunConfig};
use discbench::scenario::Scenario;
use discbench::strategy::{Mode, ProtocolConfig};
use discbench::tokens::{Counter, Encoding};
use discbench::wire::{Context, Response};

/// A model that answers from two scripts, one for the selection step and one for
/// agent turns ("Done." when a script runs out), and keeps every request it was sent.
#[derive(Clone, Default)]
pub struct Scripted {
    pub select: Vec<Response>,
    pub act: Vec<Response>,
    /// Whether it has a JSON mode.
    pub json: bool,
    pub seen: Arc<Mutex<Vec<(bool, Context)>>>,
}

struct ScriptedSession {
    select: VecDeque<Response>,
    act: VecDeque<Response>,
    seen: Arc<Mutex<Vec<(bool, Context)>>>,
}

impl Backend for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn json_mode(&self) -> bool {
        self.json
    }
    fn open(&self, _key: &OutcomeKey, _truth: Option<GroundTruth>) -> Box<dyn Session> {
        Box::new(ScriptedSession {
            select: self.select.clone().into(),
            act: self.act.clone().into(),
            seen: self.seen.clone(),
        })
    }
}

#[async_trait::async_trait]
impl Session for ScriptedSession {
    async fn respond(&mut self, r: &Request<'_>) -> Result<Answer, ModelError> {
        let select = matches!(r.purpose, Purpose::Select { .. });
        self.seen.lock().unwrap().push((select, r.context.clone()));
        let next = if select {
            self.select.pop_front()
        } else {
            self.act.pop_front()
        };
        Ok(next.unwrap_or_else(|| Response::say("Done.")).into())
    }
}

/// One query of `sc` under `mode` with `backend` (six turns at most).
pub fn run_query(
    sc: &Scenario,
    mode: &str,
    cfg: ProtocolConfig,
    backend: &dyn Backend,
    query: &str,
) -> Outcome {
    let counter = Counter::new(Encoding::O200kBase);
    let rc = RunConfig {
        max_requests: 6,
        protocol: cfg,
        ..RunConfig::new(
            "fidelity",
            vec![Mode::parse(mode).unwrap()],
            vec![backend.name().into()],
        )
    };
    let plan = Plan::build(std::slice::from_ref(sc), &rc, &counter).unwrap();
    let item = plan
        .items
        .iter()
        .position(|it| sc.queries[it.query].id == query)
        .expect("the query exists");
    runner::run_one(&plan, item, backend, &counter)
}
