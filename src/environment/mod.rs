//! The world the agent acts on: fixture responses for executed calls
//! ([`fixtures`](mod@fixtures)), live MCP servers answering them instead ([`live`]), and one embedded SQLite database per catalog database,
//! built from its seed SQL, made read-only and bounded ([`sqlite`], with its memory
//! guard in `heap`), whose rows a judge compares ([`rows`]).

pub mod fixtures;
mod heap;
pub mod live;
pub mod rows;
pub mod sqlite;

pub use fixtures::{answer_source, fixture_response, has_fixture, AnswerSource};
pub use rows::{normalize_cell, same_rows, QueryResult};
pub use sqlite::{
    Databases, DbError, QueryError, SqlLimits, JUDGE_BYTE_LIMIT, JUDGE_ROW_LIMIT, ROW_LIMIT,
};
