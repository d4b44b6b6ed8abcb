//! Databases, progressive: one `database` tool whose description has a stub per
//! database (FIM One's sanitised name, description, table count and the first 10 table
//! names); subcommands `list_tables` (indented JSON with column counts), `discover
//! [table]` (one text line per column: type, PK, NOT NULL, description) and `query
//! <sql>`. A database counts as shown once any of its schemas was discovered.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Database};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::protocol::{
    meta_args, no_container, valid, Env, ProtocolError, Rendered, Resolution, State, Strategy,
};
use crate::strategy::results::pretty;
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

pub const DATABASE: &str = "database";
/// Table names listed in a stub.
pub const STUB_TABLES: usize = 10;

pub struct DatabasesProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
    /// The name each database is shown by, in catalog order.
    names: Vec<String>,
}

impl DatabasesProgressive {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let names = catalog.database_stub_names();
        let stubs: Vec<Value> = catalog
            .databases
            .iter()
            .zip(&names)
            .map(|(d, name)| {
                json!({
                    "name": name,
                    "description": or_name(&d.description, &d.name),
                    "table_count": d.tables.len(),
                    "preview": preview(d, STUB_TABLES),
                })
            })
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        let tool = ToolDef {
            name: DATABASE.into(),
            description: t.render("database.j2", json!({"databases": stubs}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "subcommand": {"type": "string", "enum": ["list_tables", "discover", "query"],
                        "description": "list_tables: the tables; discover: their columns; query: run SQL."},
                    "database": {"type": "string", "description": "Name of the database.", "enum": sorted},
                    "table": {"type": "string", "description": "A table to discover (optional, discover only); omit it to see all tables."},
                    "sql": {"type": "string", "description": "SQL to run (required for query)."}
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
            names,
        })
    }

    fn by_name(&self, name: &str) -> Option<&Database> {
        let i = self.names.iter().position(|n| n == name)?;
        self.catalog.databases.get(i)
    }

    fn name_of(&self, db: &str) -> Option<&str> {
        let i = self.catalog.databases.iter().position(|d| d.name == db)?;
        self.names.get(i).map(String::as_str)
    }
}

/// A description, or the name when there is none.
pub fn or_name<'a>(description: &'a str, name: &'a str) -> &'a str {
    match description.trim() {
        "" => name,
        d => d,
    }
}

/// The first `n` table names, and ` ... (N total)` when there are more.
pub fn preview(d: &Database, n: usize) -> String {
    let names: Vec<&str> = d.tables.iter().take(n).map(|t| t.name.as_str()).collect();
    let mut s = names.join(", ");
    if d.tables.len() > n {
        s.push_str(&format!(" ... ({} total)", d.tables.len()));
    }
    s
}

/// `[{table_name, description, column_count}]` as indented JSON (empty fields left out).
pub fn list_tables(d: &Database) -> String {
    let tables: Vec<Value> = d
        .tables
        .iter()
        .map(|t| {
            let mut o = serde_json::Map::new();
            o.insert("table_name".into(), json!(t.name));
            if !t.description.is_empty() {
                o.insert("description".into(), json!(t.description));
            }
            if !t.columns.is_empty() {
                o.insert("column_count".into(), json!(t.columns.len()));
            }
            Value::Object(o)
        })
        .collect();
    pretty(&Value::Array(tables))
}

/// The schema of one table or of all, as text: a header, then per table its name and
/// description and one line per column (`name TYPE[ PK][ NOT NULL][ /* description */]`).
/// `None` when the table does not exist.
pub fn describe(d: &Database, shown_as: &str, table: Option<&str>) -> Option<String> {
    let tables: Vec<_> = d
        .tables
        .iter()
        .filter(|t| table.is_none_or(|n| t.name == n))
        .collect();
    if tables.is_empty() {
        return None;
    }
    let mut lines = vec![
        format!("Database: {shown_as}"),
        format!("Tables ({}):", tables.len()),
        String::new(),
    ];
    for t in tables {
        let mut head = format!("  {}", t.name);
        if !t.description.is_empty() {
            head.push_str(&format!(" -- {}", t.description));
        }
        lines.push(head);
        if t.columns.is_empty() {
            lines.push("    (no column information)".into());
        } else {
            lines.push("    Columns:".into());
        }
        for c in &t.columns {
            let mut l = format!("      {} {}", c.name, c.ty);
            if c.primary_key {
                l.push_str(" PK");
            }
            if !c.nullable {
                l.push_str(" NOT NULL");
            }
            if !c.description.is_empty() {
                l.push_str(&format!(" /* {} */", c.description));
            }
            lines.push(l);
        }
        lines.push(String::new());
    }
    Some(lines.join("\n"))
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
    // owns, order, render and shown_up_front look alike in the three progressive
    // meta-tools but say different things: which kind, and where FIM One registers it.
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Database(_))
    }

    fn order(&self) -> u8 {
        2
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let (sub, name) = match meta_args(args, "database", tool) {
            Ok(x) => x,
            Err(r) => return r,
        };
        let Some(db) = self.by_name(name) else {
            // A `query` of a database that does not exist is a call made; listing or
            // discovering one is a look.
            return no_container(
                "database",
                name,
                valid("databases", &self.names),
                sub == "query",
            );
        };
        match sub {
            "list_tables" => Resolution::fetched(list_tables(db), Vec::new()),
            "discover" if db.tables.is_empty() => Resolution::fetched(
                format!("Database '{name}' has no visible tables."),
                Vec::new(),
            ),
            "discover" => {
                let table = args
                    .get("table")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                match describe(db, name, table) {
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
        let Address::Database(db_name) = &target.address else {
            return None;
        };
        let d = self.name_of(db_name)?;
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
            .database(db_name)
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
