//! Code files (`code-files`): the catalog as a typed API laid out as files, after
//! Anthropic's "code execution with MCP". `servers/<group>/<function>.ts` holds one
//! function's TypeScript declaration, `servers/<group>/index.ts` names each function
//! of the group in one line, `servers/index.ts` each group; the model lists folders
//! (`list_files`), reads the declarations it needs (`read_file`) and runs a program
//! with `run_code`, the executor code mode uses ([`super::code_api`]). Skills stay with
//! their own strategy (`read_skill`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};

use super::code_api::{CodeApi, CODE_ERRORS, PROGRAMS, RUN_CODE};
use super::code_mode::{group_stubs, run_code_tool};
use crate::catalog::Address;
use crate::scenario::ExpectedCall;
use crate::strategy::pool::first_sentence;
use crate::strategy::protocol::{
    arg_str, Env, EventKind, ProtocolError, Rendered, Resolution, State, Strategy,
};
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

/// The tool that lists a folder.
pub const LIST_FILES: &str = "list_files";
/// The tool that reads a file.
pub const READ_FILE: &str = "read_file";
/// The root of the tree.
pub const ROOT: &str = "servers";

/// A file read: an event.
pub const FILES_READ: EventKind = EventKind {
    name: "files_read",
    error: false,
    doc: "files of the API's tree read (code files)",
};

/// This strategy's own episode state: the groups whose function names the episode has
/// seen (their folder listed or their index read).
#[derive(Debug, Clone, Default)]
pub struct Listed(BTreeSet<String>);

pub struct CodeFiles {
    api: Arc<CodeApi>,
    rendered: Rendered,
}

/// A path as the tree knows it: no leading `/` or `./`, no trailing `/`.
fn normal(path: &str) -> String {
    let p = path.trim();
    let p = p.strip_prefix("./").unwrap_or(p);
    p.trim_matches('/').to_string()
}

/// What a path names.
enum Node<'a> {
    Root,
    RootIndex,
    Group(&'a str),
    GroupIndex(&'a str),
    Function(usize),
}

impl CodeFiles {
    pub fn new(api: Arc<CodeApi>, t: &Templates) -> Result<CodeFiles, TemplateError> {
        let section = t.render(
            "code_files.j2",
            json!({"groups": group_stubs(&api), "list": LIST_FILES, "read": READ_FILE, "run": RUN_CODE}),
        )?;
        let path_tool = |name: &str, template: &str| -> Result<ToolDef, TemplateError> {
            Ok(ToolDef {
                name: name.into(),
                description: t.render(template, json!({}))?,
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": format!("A path under {ROOT}/.")}
                    },
                    "required": ["path"]
                }),
            })
        };
        let tools = vec![
            path_tool(LIST_FILES, "list_files.j2")?,
            path_tool(READ_FILE, "read_file.j2")?,
            run_code_tool(&api, t)?,
        ];
        Ok(CodeFiles {
            rendered: Rendered { section, tools },
            api,
        })
    }

    fn node(&self, path: &str) -> Option<Node<'_>> {
        let p = normal(path);
        let rest = match p.as_str() {
            ROOT => return Some(Node::Root),
            _ => p.strip_prefix(ROOT)?.strip_prefix('/')?,
        };
        if rest == "index.ts" {
            return Some(Node::RootIndex);
        }
        let (group, file) = match rest.split_once('/') {
            Some((g, f)) => (g, Some(f)),
            None => (rest, None),
        };
        let (group, _) = self.api.groups.get_key_value(group)?;
        match file {
            None => Some(Node::Group(group)),
            Some("index.ts") => Some(Node::GroupIndex(group)),
            Some(f) => {
                let name = f.strip_suffix(".ts")?;
                self.api
                    .functions
                    .iter()
                    .position(|x| x.group == *group && x.name == name)
                    .map(Node::Function)
            }
        }
    }

    fn file_of(&self, i: usize) -> String {
        let f = &self.api.functions[i];
        format!("{ROOT}/{}/{}.ts", f.group, f.name)
    }

    fn list(&self, path: &str, state: &mut State) -> Resolution {
        let entries: Vec<String> = match self.node(path) {
            Some(Node::Root) => std::iter::once("index.ts".to_string())
                .chain(self.api.groups.keys().map(|g| format!("{g}/")))
                .collect(),
            Some(Node::Group(g)) => {
                state.own_mut::<Listed>().0.insert(g.to_string());
                std::iter::once("index.ts".to_string())
                    .chain(self.api.in_group(g).map(|f| format!("{}.ts", f.name)))
                    .collect()
            }
            Some(_) => {
                return Resolution::error(
                    ProtocolError::UnknownTarget,
                    format!("`{path}` is a file, not a folder; read it with {READ_FILE}"),
                )
            }
            None => return self.missing(path),
        };
        Resolution::fetched(format!("{}\n", entries.join("\n")), Vec::new())
    }

    fn read(&self, path: &str, state: &mut State) -> Resolution {
        let (content, addresses) = match self.node(path) {
            Some(Node::RootIndex) => {
                let lines: Vec<String> = self
                    .api
                    .groups
                    .iter()
                    .map(|(g, d)| {
                        format!("export * as {g} from \"./{g}\"; // {}", first_sentence(d))
                    })
                    .collect();
                (lines.join("\n"), Vec::new())
            }
            Some(Node::GroupIndex(g)) => {
                state.own_mut::<Listed>().0.insert(g.to_string());
                let lines: Vec<String> = self
                    .api
                    .in_group(g)
                    .map(|f| {
                        format!(
                            "export {{ {} }} from \"./{}\"; // {}",
                            f.name,
                            f.name,
                            first_sentence(&f.description)
                        )
                    })
                    .collect();
                (lines.join("\n"), Vec::new())
            }
            Some(Node::Function(i)) => {
                let f = &self.api.functions[i];
                (f.declaration.clone(), vec![f.address.clone()])
            }
            Some(Node::Root | Node::Group(_)) => {
                return Resolution::error(
                    ProtocolError::UnknownTarget,
                    format!("`{path}` is a folder; list it with {LIST_FILES}"),
                )
            }
            None => return self.missing(path),
        };
        let ends = if addresses.is_empty() {
            Vec::new()
        } else {
            vec![content.len()]
        };
        Resolution::fetched_at(format!("{content}\n"), addresses, ends).counted(FILES_READ)
    }

    fn missing(&self, path: &str) -> Resolution {
        Resolution::error(
            ProtocolError::UnknownTarget,
            format!("no file or folder `{path}`; list {ROOT}/ to see the groups"),
        )
    }
}

impl Strategy for CodeFiles {
    fn owns(&self, address: &Address) -> bool {
        self.api.owns(address)
    }

    fn order(&self) -> u8 {
        5
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn events(&self) -> &'static [EventKind] {
        &[FILES_READ, PROGRAMS, CODE_ERRORS]
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let key = if tool == RUN_CODE { "code" } else { "path" };
        let arg = match arg_str(args, key, tool) {
            Ok(a) => a,
            Err(r) => return r.malformed_if(tool == RUN_CODE),
        };
        match tool {
            LIST_FILES => self.list(arg, state),
            READ_FILE => self.read(arg, state),
            _ => self.api.run(arg, state, env),
        }
    }

    /// List the group's folder, read the function's file, run it.
    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        let i = self.api.index_of(&target.address)?;
        if !state.shown.contains(&target.address) {
            let group = &self.api.functions[i].group;
            let listed = state.own::<Listed>().is_some_and(|l| l.0.contains(group));
            if !listed {
                return Some((
                    LIST_FILES.into(),
                    json!({"path": format!("{ROOT}/{group}/")}),
                ));
            }
            return Some((READ_FILE.into(), json!({"path": self.file_of(i)})));
        }
        Some(self.api.run_call(&target.address, args))
    }

    fn program(
        &self,
        calls: &[(Address, Value)],
        results: &[Value],
        query: &str,
    ) -> Option<String> {
        Some(self.api.program(calls, results, query))
    }
}
