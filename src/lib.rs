//! discbench: measures how LLM agents should be shown large tool catalogs.
//!
//! A scenario (catalog + queries + expectations, [`scenario`]) is disclosed to a model
//! under a [`strategy::Mode`]; the [`runner`] drives the agent loop, [`tokens`] counts
//! every layer of the context, [`score`] judges the calls on canonical addresses
//! ([`catalog::Address`]), and each scored [`record::Outcome`] is one JSON line of the
//! versioned run record; [`analysis`] aggregates and compares runs, [`report`]
//! renders them.

pub mod analysis;
pub mod args;
pub mod catalog;
pub mod cli;
pub mod disclosure;
pub mod environment;
pub mod error;
pub mod exit;
pub mod hash;
pub mod model;
pub mod record;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod score;
pub mod strategy;
pub mod tokens;
pub mod wire;
