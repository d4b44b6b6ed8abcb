//! Validation of a loaded scenario ([`Checker`]): the catalog, the queries and their
//! expectations, and reference SQL, each in its own file.

mod catalog;
mod checker;
mod queries;
mod sql;

pub(crate) use checker::{Checker, Kind2};
