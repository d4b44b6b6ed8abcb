//! Executing a call on the environment: arguments checked against the tool's schema,
//! SQL run on the scenario's SQLite, a live MCP server's answer or fixture responses returned (and cut as FIM One
//! cuts connector and MCP results).

use serde_json::{json, Value};

pub use crate::args::schema_errors;
use crate::catalog::Address;
use crate::environment::{fixture_response, QueryResult};

use super::protocol::{Effect, Env, Resolution, State};
use super::results;

/// Executes a call on the environment: validates its arguments, runs SQL for database
/// queries (answered as indented JSON with `columns`, `rows`, `row_count`,
/// `execution_time_ms`, and `truncated` with a note past the row limit), returns the
/// fixture response otherwise — for connectors and MCP tools truncated as FIM One
/// truncates their results.
pub fn execute(address: Address, args: &Value, state: &State, env: &Env) -> Resolution {
    let schema_errors = env
        .catalog
        .schema_of(&address)
        .map(|s| schema_errors(&s, args))
        .unwrap_or_default();
    let blind = !state.shown.contains(&address);
    let (content, sql_result) = if let Address::Database(db) = &address {
        let sql = args.get("sql").and_then(Value::as_str).unwrap_or("");
        let r = env.databases.query_limited(db, sql, env.config.row_limit);
        let content = match &r {
            Ok(q) => query_answer(q),
            Err(e) => json!({"error": e.0}).to_string(),
        };
        (content, Some(r))
    } else if let Some((server, tool, live)) = live_target(&address, env) {
        // A live server answers whatever the arguments: it judges them itself, as
        // it would for any client.
        let answer = live.call(server, tool, args).unwrap_or_else(|| {
            json!({"error": "the live server failed (an infrastructure error)"}).to_string()
        });
        (results::truncate(&answer, &env.config.results.mcp), None)
    } else if !schema_errors.is_empty() {
        (
            json!({"error": format!("invalid arguments: {}", schema_errors.join("; "))})
                .to_string(),
            None,
        )
    } else {
        let answer = fixture_response(env.catalog, &address, args).to_string();
        let answer = match address {
            Address::Connector(..) => results::truncate(&answer, &env.config.results.connector),
            Address::Mcp(..) => results::truncate(&answer, &env.config.results.mcp),
            _ => answer,
        };
        (answer, None)
    };
    Resolution {
        content,
        effect: Effect::Executed {
            address,
            args: args.clone(),
            schema_errors,
            blind,
            sql_result,
        },
    }
}

/// The live server that answers calls to `address`, if one does.
fn live_target<'e>(
    address: &'e Address,
    env: &Env<'e>,
) -> Option<(
    &'e str,
    &'e str,
    &'e dyn crate::environment::live::LiveCalls,
)> {
    match (address, env.live) {
        (Address::Mcp(server, tool), Some(live)) if live.serves(server) => {
            Some((server, tool, live))
        }
        _ => None,
    }
}

/// A query result as the model reads it. The time is written as 0.0 so that token
/// counts repeat from run to run (a measured time would be a few digits).
fn query_answer(q: &QueryResult) -> String {
    let mut o = serde_json::Map::new();
    o.insert("columns".into(), json!(q.columns));
    o.insert("rows".into(), json!(q.rows));
    o.insert("row_count".into(), json!(q.rows.len()));
    o.insert("execution_time_ms".into(), json!(0.0));
    if q.truncated {
        o.insert("truncated".into(), json!(true));
        o.insert(
            "note".into(),
            // Fewer when the answer reached its byte limit first.
            json!(format!("Only the first {} rows are shown", q.rows.len())),
        );
    }
    results::pretty(&Value::Object(o))
}
