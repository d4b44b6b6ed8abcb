//! Process exit codes: the one place they are defined (DESIGN §10).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | a regression or a threshold failed; `validate --fixtures` found fixture gaps |
//! | 2 | bad input or usage (invalid scenario, unknown flag value, missing file) |
//! | 3 | infrastructure failure (I/O while writing results, an API that never answered) |

/// Everything went as asked.
pub const OK: i32 = 0;
/// A comparison found a regression, a threshold was missed, or `validate --fixtures`
/// found calls its fixtures would answer about another entity.
pub const REGRESSION: i32 = 1;
/// The input or the command line was wrong; nothing was run or written.
pub const BAD_INPUT: i32 = 2;
/// The machine or a remote service failed (disk, network, API).
pub const INFRA: i32 = 3;
