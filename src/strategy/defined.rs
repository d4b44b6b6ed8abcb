//! Every event a strategy defines, in the order the reports list them: the one list
//! the aggregation and the reports read to know a counter's name and whether it counts
//! as a protocol error. A new strategy declares its [`EventKind`]s in its own file and
//! adds them here; `tests::every_strategys_events_are_listed` checks both ways.

use super::code::code_api::{CODE_ERRORS, PROGRAMS};
use super::code::code_files::FILES_READ;
use super::code::code_mode::API_SEARCHES;
use super::mcp_pd::mcp_resource::{DESCRIPTION_REQUIRED, MISSING_TOOL_SELECTION, RESOURCE_READS};
use super::pool::{NATIVE_MALFORMED, SEARCHES};
use super::protocol::EventKind;

/// Every defined event, in report order.
pub const DEFINED: [EventKind; 9] = [
    MISSING_TOOL_SELECTION,
    DESCRIPTION_REQUIRED,
    SEARCHES,
    RESOURCE_READS,
    NATIVE_MALFORMED,
    PROGRAMS,
    CODE_ERRORS,
    API_SEARCHES,
    FILES_READ,
];

/// The defined event of this name.
pub fn defined(name: &str) -> Option<&'static EventKind> {
    DEFINED.iter().find(|k| k.name == name)
}

/// Whether the counter of this name is a defined protocol error.
pub fn is_error(name: &str) -> bool {
    defined(name).is_some_and(|k| k.error)
}
