//! Databases, legacy: three tools per database, `{db}__list_tables`,
//! `{db}__describe_table(table_name)` and `{db}__query(sql)`, all in the prompt from the
//! start. As in FIM One, the query tool's description carries the database's schema
//! (up to 30 tables × 20 columns), so the model can write SQL without describing first
//! and legacy mode pays for the schema up front.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::databases_progressive::{list_tables, preview, unknown_table};
use crate::catalog::{query_schema, Address, Catalog, Database, Table};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::protocol::{arg_str, Env, Rendered, Resolution, State, Strategy};
use crate::strategy::results::pretty;
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

/// Tables and columns per table in the query tool's schema.
pub const SCHEMA_TABLES: usize = 30;
pub const SCHEMA_COLUMNS: usize = 20;
/// Table names in the list and describe descriptions.
const LIST_PREVIEW: usize = 20;
const DESCRIBE_TABLES: usize = 30;
/// FIM One's default query timeout, stated in the query tool's description.
const TIMEOUT_S: u32 = 30;

#[derive(Clone, Copy)]
enum Op {
    ListTables,
    Describe,
    Query,
}

pub struct DatabasesLegacy {
    catalog: Arc<Catalog>,
    rendered: Rendered,
    by_tool: HashMap<String, (String, Op)>,
    query_tool: HashMap<String, String>,
}

/// One line per table: `  name(col TYPE[ PK][ /* description */], …)[ -- description]`,
/// the first [`SCHEMA_COLUMNS`] columns of the first [`SCHEMA_TABLES`] tables.
pub fn schema_hint(d: &Database) -> String {
    let table_line = |t: &Table| {
        let mut l = format!("  {}", t.name);
        if !t.columns.is_empty() {
            let mut cols: Vec<String> = t
                .columns
                .iter()
                .take(SCHEMA_COLUMNS)
                .map(|c| {
                    let mut s = format!("{} {}", c.name, c.ty);
                    if c.primary_key {
                        s.push_str(" PK");
                    }
                    if !c.description.is_empty() {
                        s.push_str(&format!(" /* {} */", c.description));
                    }
                    s
                })
                .collect();
            if t.columns.len() > SCHEMA_COLUMNS {
                cols.push(format!("... ({} total)", t.columns.len()));
            }
            l.push_str(&format!("({})", cols.join(", ")));
        }
        if !t.description.is_empty() {
            l.push_str(&format!(" -- {}", t.description));
        }
        l
    };
    if d.tables.is_empty() {
        return "  (no schema available)".into();
    }
    let mut lines: Vec<String> = d
        .tables
        .iter()
        .take(SCHEMA_TABLES)
        .map(table_line)
        .collect();
    if d.tables.len() > SCHEMA_TABLES {
        lines.push(format!(
            "  ... ({} tables in all; list_tables shows every one)",
            d.tables.len()
        ));
    }
    lines.join("\n")
}

/// `describe_table`'s answer: indented JSON with the table's columns.
fn describe_json(t: &Table) -> String {
    let columns: Vec<Value> = t
        .columns
        .iter()
        .map(|c| {
            let mut o = serde_json::Map::new();
            o.insert("column_name".into(), json!(c.name));
            o.insert("data_type".into(), json!(c.ty));
            if c.primary_key {
                o.insert("is_primary_key".into(), json!(true));
            }
            if !c.nullable {
                o.insert("is_nullable".into(), json!(false));
            }
            if !c.description.is_empty() {
                o.insert("description".into(), json!(c.description));
            }
            Value::Object(o)
        })
        .collect();
    let mut o = serde_json::Map::new();
    o.insert("table_name".into(), json!(t.name));
    o.insert("columns".into(), Value::Array(columns));
    if !t.description.is_empty() {
        o.insert("table_description".into(), json!(t.description));
    }
    pretty(&Value::Object(o))
}

impl DatabasesLegacy {
    pub fn new(
        catalog: &Arc<Catalog>,
        t: &Templates,
        row_limit: usize,
    ) -> Result<Self, TemplateError> {
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        let mut query_tool = HashMap::new();
        let names = catalog.legacy_tool_names();
        for d in &catalog.databases {
            let mut sorted: Vec<&str> = d.tables.iter().map(|t| t.name.as_str()).collect();
            sorted.sort();
            sorted.truncate(DESCRIBE_TABLES);
            let cx = json!({
                "name": d.name,
                "table_count": d.tables.len(),
                "preview": preview(d, LIST_PREVIEW),
                "tables": sorted.join(", "),
                "max_rows": row_limit,
                "timeout": TIMEOUT_S,
                "schema": schema_hint(d),
            });
            let defs = [
                (
                    Op::ListTables,
                    "list_tables",
                    "database_list_tables.j2",
                    json!({"type": "object", "properties": {}, "required": []}),
                ),
                (
                    Op::Describe,
                    "describe_table",
                    "database_describe_table.j2",
                    json!({"type": "object", "properties": {"table_name": {"type": "string", "description": "The table to describe."}}, "required": ["table_name"]}),
                ),
                (Op::Query, "query", "database_query.j2", query_schema()),
            ];
            for (op, suffix, template, parameters) in defs {
                let name = names[&format!("database:{}/{suffix}", d.name)].clone();
                by_tool.insert(name.clone(), (d.name.clone(), op));
                if suffix == "query" {
                    query_tool.insert(d.name.clone(), name.clone());
                }
                tools.push(ToolDef {
                    name,
                    description: t.render(template, &cx)?,
                    parameters,
                });
            }
        }
        Ok(DatabasesLegacy {
            catalog: catalog.clone(),
            rendered: Rendered::tools(tools),
            by_tool,
            query_tool,
        })
    }
}

impl Strategy for DatabasesLegacy {
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Database(_))
    }

    fn order(&self) -> u8 {
        2
    }

    fn address_of(&self, tool: &str) -> Option<Address> {
        self.by_tool
            .get(tool)
            .map(|(db, _)| Address::Database(db.clone()))
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    /// The query tools carry every schema (within the 30 × 20 limit), so the databases
    /// are shown from the start.
    fn shown_up_front(&self) -> Vec<Address> {
        self.catalog
            .databases
            .iter()
            .map(|d| Address::Database(d.name.clone()))
            .collect()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let (db_name, op) = &self.by_tool[tool];
        let db = self
            .catalog
            .database(db_name)
            .expect("tool built from the catalog");
        match op {
            Op::ListTables => Resolution::fetched(list_tables(db), Vec::new()),
            Op::Describe => {
                let table = match arg_str(args, "table_name", tool) {
                    Ok(t) => t,
                    Err(r) => return r,
                };
                match db.tables.iter().find(|t| t.name == table) {
                    Some(t) => Resolution::fetched(
                        describe_json(t),
                        vec![Address::Database(db.name.clone())],
                    ),
                    None => unknown_table(db, table),
                }
            }
            Op::Query => execute(Address::Database(db.name.clone()), args, state, env),
        }
    }

    fn route(
        &self,
        target: &ExpectedCall,
        args: &Value,
        _state: &State,
    ) -> Option<(String, Value)> {
        let Address::Database(d) = &target.address else {
            return None;
        };
        let sql = args.get("sql").cloned().unwrap_or(Value::Null);
        Some((self.query_tool.get(d)?.clone(), json!({"sql": sql})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Column;

    fn col(name: &str, pk: bool, description: &str) -> Column {
        Column {
            name: name.into(),
            ty: "INTEGER".into(),
            nullable: !pk,
            primary_key: pk,
            description: description.into(),
        }
    }

    #[test]
    fn the_schema_hint_caps_tables_and_columns() {
        let wide = Table {
            name: "wide".into(),
            description: "Many columns.".into(),
            columns: (0..25).map(|i| col(&format!("c{i}"), i == 0, "")).collect(),
        };
        let mut tables = vec![wide];
        tables.extend((0..31).map(|i| Table {
            name: format!("t{i}"),
            description: String::new(),
            columns: vec![col("id", true, "Row id.")],
        }));
        let d = Database {
            name: "big".into(),
            description: String::new(),
            tables,
            seed_sql: None,
        };
        let hint = schema_hint(&d);
        let lines: Vec<&str> = hint.lines().collect();
        assert_eq!(lines.len(), 31, "30 tables and the note");
        assert!(lines[0].starts_with("  wide(c0 INTEGER PK, c1 INTEGER, "));
        assert!(lines[0].ends_with(", c19 INTEGER, ... (25 total)) -- Many columns."));
        assert_eq!(lines[1], "  t0(id INTEGER PK /* Row id. */)");
        assert!(lines[30].contains("32 tables"));
    }

    #[test]
    fn describe_table_lists_flags_only_when_set() {
        let t = Table {
            name: "people".into(),
            description: "Employees.".into(),
            columns: vec![col("id", true, ""), col("name", false, "Full name.")],
        };
        let v: Value = serde_json::from_str(&describe_json(&t)).unwrap();
        assert_eq!(
            v,
            json!({"table_name": "people", "columns": [
                {"column_name": "id", "data_type": "INTEGER", "is_primary_key": true, "is_nullable": false},
                {"column_name": "name", "data_type": "INTEGER", "description": "Full name."}
            ], "table_description": "Employees."})
        );
    }
}
