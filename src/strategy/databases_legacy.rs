//! Databases, legacy: three tools per database, `{db}__list_tables`,
//! `{db}__describe_table` and `{db}__query`, all in the prompt from the start.

use std::sync::Arc;

use std::collections::HashMap;

use serde_json::{json, Value};

use super::databases_progressive::{describe, list_tables, unknown_table};
use super::templates::TemplateError;
use super::{arg_str, execute, Env, Rendered, Resolution, State, Strategy, Templates};
use crate::catalog::{legacy_name, query_schema, Address, Catalog, Kind};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

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
}

impl DatabasesLegacy {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        for d in &catalog.databases {
            let tables: Vec<&str> = d.tables.iter().map(|t| t.name.as_str()).collect();
            let cx = json!({"name": d.name, "description": d.description.trim(), "tables": tables});
            let defs = [
                (
                    Op::ListTables,
                    "list_tables",
                    "database_list_tables.j2",
                    json!({"type": "object", "properties": {}}),
                ),
                (
                    Op::Describe,
                    "describe_table",
                    "database_describe_table.j2",
                    json!({"type": "object", "properties": {"table": {"type": "string", "enum": tables}}, "required": ["table"]}),
                ),
                (Op::Query, "query", "database_query.j2", query_schema()),
            ];
            for (op, suffix, template, parameters) in defs {
                let name = legacy_name(&d.name, suffix);
                by_tool.insert(name.clone(), (d.name.clone(), op));
                tools.push(ToolDef {
                    name,
                    description: t.render(template, &cx)?,
                    parameters,
                });
            }
        }
        Ok(DatabasesLegacy {
            catalog: catalog.clone(),
            rendered: Rendered {
                section: String::new(),
                tools,
            },
            by_tool,
        })
    }
}

impl Strategy for DatabasesLegacy {
    fn kind(&self) -> Option<Kind> {
        Some(Kind::Databases)
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

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
                let table = match arg_str(args, "table", tool) {
                    Ok(t) => t,
                    Err(r) => return r,
                };
                match describe(db, Some(table)) {
                    Some(c) => Resolution::fetched(c, vec![Address::Database(db.name.clone())]),
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
        Some((legacy_name(d, "query"), json!({"sql": sql})))
    }
}
