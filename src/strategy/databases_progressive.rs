//! Databases, progressive: one `database` tool with a stub per database (table count
//! and up to 10 table names); subcommands `list_tables`, `discover [table]` and
//! `query <sql>`. A database counts as shown once any of its schemas was discovered.

use std::sync::Arc;

use serde_json::{json, Value};

use super::templates::TemplateError;
use super::{
    arg_str, execute, valid, Env, ProtocolError, Rendered, Resolution, State, Strategy, Templates,
};
use crate::catalog::{Address, Catalog, Database, Kind};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub const DATABASE: &str = "database";
/// Table names listed in a stub.
pub const STUB_TABLES: usize = 10;

pub struct DatabasesProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
}

impl DatabasesProgressive {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let stubs: Vec<Value> = catalog
            .databases
            .iter()
            .map(|d| {
                let names: Vec<&str> = d.tables.iter().take(STUB_TABLES).map(|t| t.name.as_str()).collect();
                json!({
                    "name": d.name, "description": d.description.trim(), "table_count": d.tables.len(),
                    "tables": names, "more": more(d.tables.len())
                })
            })
            .collect();
        let names: Vec<&str> = catalog.databases.iter().map(|d| d.name.as_str()).collect();
        let tool = ToolDef {
            name: DATABASE.into(),
            description: t.render("database.j2", json!({"databases": stubs}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "subcommand": {"type": "string", "enum": ["list_tables", "discover", "query"]},
                    "database": {"type": "string", "enum": names},
                    "table": {"type": "string", "description": "One table to discover (discover only; omit for all)."},
                    "sql": {"type": "string", "description": "A read-only SQL query (query only)."}
                },
                "required": ["subcommand", "database"]
            }),
        };
        Ok(DatabasesProgressive {
            catalog: catalog.clone(),
            rendered: Rendered {
                section: String::new(),
                tools: vec![tool],
            },
        })
    }
}

/// `, ... and N more` when a stub lists only the first [`STUB_TABLES`] tables.
fn more(n: usize) -> String {
    if n > STUB_TABLES {
        format!(", ... and {} more", n - STUB_TABLES)
    } else {
        String::new()
    }
}

/// `{database, tables: [{name, description}]}`.
pub fn list_tables(d: &Database) -> String {
    let tables: Vec<Value> = d
        .tables
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description}))
        .collect();
    json!({"database": d.name, "tables": tables}).to_string()
}

/// `{database, tables: [{name, description, columns}]}` for one table or all;
/// `None` when the table does not exist.
pub fn describe(d: &Database, table: Option<&str>) -> Option<String> {
    let tables: Vec<Value> = d
        .tables
        .iter()
        .filter(|t| table.is_none_or(|n| t.name == n))
        .map(|t| json!({"name": t.name, "description": t.description, "columns": t.columns}))
        .collect();
    if tables.is_empty() {
        return None;
    }
    Some(json!({"database": d.name, "tables": tables}).to_string())
}

/// The tables of `d` whose names occur in `sql` as whole words (case-insensitive).
pub fn tables_named(d: &Database, sql: &str) -> Vec<String> {
    let words: Vec<String> = sql
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    d.tables
        .iter()
        .filter(|t| words.contains(&t.name.to_lowercase()))
        .map(|t| t.name.clone())
        .collect()
}

/// The error for a table name the database does not have.
pub fn unknown_table(d: &Database, table: &str) -> Resolution {
    Resolution::error(
        ProtocolError::UnknownTarget,
        format!(
            "database `{}` has no table `{table}`; {}",
            d.name,
            valid("tables", d.tables.iter().map(|t| &t.name))
        ),
    )
}

impl Strategy for DatabasesProgressive {
    fn kind(&self) -> Option<Kind> {
        Some(Kind::Databases)
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let (sub, name) = match (
            arg_str(args, "subcommand", tool),
            arg_str(args, "database", tool),
        ) {
            (Ok(s), Ok(n)) => (s, n),
            (Err(r), _) | (_, Err(r)) => return r,
        };
        let Some(db) = self.catalog.database(name) else {
            return Resolution::error(
                ProtocolError::UnknownTarget,
                format!(
                    "no database `{name}`; {}",
                    valid("databases", self.catalog.databases.iter().map(|d| &d.name))
                ),
            );
        };
        match sub {
            "list_tables" => Resolution::fetched(list_tables(db), Vec::new()),
            "discover" => {
                let table = args
                    .get("table")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                match describe(db, table) {
                    Some(content) => {
                        Resolution::fetched(content, vec![Address::Database(db.name.clone())])
                    }
                    None => unknown_table(db, table.unwrap_or_default()),
                }
            }
            // The query itself is the executed call: its arguments are judged against
            // the query schema exactly as legacy's `{db}__query` (a missing `sql` is a
            // schema violation of an executed call, not a refused meta-call).
            "query" => {
                let mut a = serde_json::Map::new();
                if let Some(sql) = args.get("sql") {
                    a.insert("sql".into(), sql.clone());
                }
                execute(
                    Address::Database(db.name.clone()),
                    &Value::Object(a),
                    state,
                    env,
                )
            }
            other => Resolution::error(
                ProtocolError::BadSubcommand,
                format!(
                    "unknown subcommand `{other}`; valid subcommands: list_tables, discover, query"
                ),
            ),
        }
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        let Address::Database(d) = &target.address else {
            return None;
        };
        if state.shown.contains(&target.address) {
            let sql = args.get("sql").cloned().unwrap_or(Value::Null);
            return Some((
                DATABASE.into(),
                json!({"subcommand": "query", "database": d, "sql": sql}),
            ));
        }
        // Discover only what the query needs: the one table its SQL names, else all.
        let sql = args.get("sql").and_then(Value::as_str).unwrap_or("");
        let named = self
            .catalog
            .database(d)
            .map(|db| tables_named(db, sql))
            .unwrap_or_default();
        Some(match named.as_slice() {
            [one] => (
                DATABASE.into(),
                json!({"subcommand": "discover", "database": d, "table": one}),
            ),
            _ => (
                DATABASE.into(),
                json!({"subcommand": "discover", "database": d}),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Table;

    #[test]
    fn tables_named_matches_whole_words_only() {
        let t = |n: &str| Table {
            name: n.into(),
            description: String::new(),
            columns: Vec::new(),
        };
        let d = Database {
            name: "a".into(),
            description: String::new(),
            tables: vec![t("users"), t("user_events"), t("orders")],
            seed_sql: None,
        };
        assert_eq!(
            tables_named(&d, "SELECT * FROM Users u JOIN orders o ON o.uid = u.id"),
            ["users", "orders"]
        );
        assert_eq!(
            tables_named(&d, "SELECT count(*) FROM user_events"),
            ["user_events"]
        );
        assert!(tables_named(&d, "SELECT 1").is_empty());
    }
}
