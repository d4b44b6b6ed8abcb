//! Reports: what a run shows its reader. Today the terminal summary table
//! ([`table`]); the other exports read `outcomes.jsonl` back.

pub mod table;
