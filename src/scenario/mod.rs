//! Scenarios (DESIGN §4): [`load`] turns a YAML or JSON file into a [`Scenario`] whose
//! catalog is resolved (includes, `content_file`, `seed_sql` read) and checked:
//! unknown fields, duplicate names, dangling references, expectations naming addresses
//! not in the catalog, and invalid JSON Schemas are all [`crate::error::InputError`]s
//! naming the file, the line where known, and the field path. Every problem in a file
//! is reported, not only the first.
//!
//! [`types`] holds the resolved types, [`load`](mod@load) the parsing and includes,
//! [`check`] the validation, [`expect`] the expectation language, [`gaps`] the
//! calls whose fixtures would answer about another entity.

mod check;
pub mod expect;
pub mod filter;
pub mod gaps;
pub mod load;
mod raw;
pub mod sweep;
pub mod types;

pub use crate::catalog::RESERVED_TOOL_NAMES;
pub use expect::{Allowed, Compare, Expect, ExpectedCall, Judge, Order, ReferenceCall, Step};
pub use filter::QueryFilter;
pub use load::{expand, kind_name, load, load_all, load_all_noting, validate_file};
pub use types::{target, Agent, FileKind, Query, Scenario};
