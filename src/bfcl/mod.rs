//! The Berkeley Function Calling Leaderboard (BFCL): its single-turn data converted
//! into discbench scenarios ([`convert`]), and model outputs in BFCL's result format
//! judged by discbench's own scoring on those scenarios ([`results`]); its multi-turn
//! categories converted into conversations judged by state on live servers
//! ([`multi_turn`], with BFCL's call strings read by [`pycall`]), and multi-turn
//! outputs judged by executing them there, by BFCL's rules ([`multi_judge`]).
//!
//! Each BFCL entry becomes one MCP server named by the entry's id whose tools are the
//! entry's functions under their own names (dots kept), and one query whose `scope` is
//! that server, so the entry's functions are all its agent is given and every address
//! (`mcp:<id>/<function>`) is BFCL's name. Answers become `compare: bfcl` expectations
//! (BFCL's checker rule for rule, [`crate::args::bfcl_check_call`]) that are
//! `exhaustive` (BFCL counts the calls); irrelevance entries expect no call.

pub mod convert;
pub mod judge;
pub mod multi_judge;
pub mod multi_turn;
pub mod pycall;
pub mod results;
