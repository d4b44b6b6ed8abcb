//! Prompt texts: the Jinja templates shipped in `templates/`, embedded in the binary
//! and overridable file by file from a directory (`--templates DIR`), so researchers
//! can test other wordings without rebuilding.

use std::path::Path;

use minijinja::Environment;
use serde::Serialize;

/// The template files, by name, with their built-in text.
pub const BUILTIN: [(&str, &str); 29] = [
    ("system.j2", include_str!("../../templates/system.j2")),
    (
        "default_instructions.txt",
        include_str!("../../templates/default_instructions.txt"),
    ),
    (
        "skills_progressive.j2",
        include_str!("../../templates/skills_progressive.j2"),
    ),
    (
        "skills_inline.j2",
        include_str!("../../templates/skills_inline.j2"),
    ),
    (
        "read_skill.j2",
        include_str!("../../templates/read_skill.j2"),
    ),
    ("connector.j2", include_str!("../../templates/connector.j2")),
    ("database.j2", include_str!("../../templates/database.j2")),
    (
        "database_list_tables.j2",
        include_str!("../../templates/database_list_tables.j2"),
    ),
    (
        "database_describe_table.j2",
        include_str!("../../templates/database_describe_table.j2"),
    ),
    (
        "database_query.j2",
        include_str!("../../templates/database_query.j2"),
    ),
    ("mcp.j2", include_str!("../../templates/mcp.j2")),
    (
        "request_tools.j2",
        include_str!("../../templates/request_tools.j2"),
    ),
    ("selection.j2", include_str!("../../templates/selection.j2")),
    (
        "selection_system.j2",
        include_str!("../../templates/selection_system.j2"),
    ),
    (
        "select_tools.j2",
        include_str!("../../templates/select_tools.j2"),
    ),
    (
        "selection_reformat.j2",
        include_str!("../../templates/selection_reformat.j2"),
    ),
    (
        "mcp_resource_system.j2",
        include_str!("../../templates/mcp_resource_system.j2"),
    ),
    (
        "read_resource.j2",
        include_str!("../../templates/read_resource.j2"),
    ),
    (
        "resource_missing.j2",
        include_str!("../../templates/resource_missing.j2"),
    ),
    (
        "resource_required.j2",
        include_str!("../../templates/resource_required.j2"),
    ),
    (
        "tool_search.j2",
        include_str!("../../templates/tool_search.j2"),
    ),
    (
        "tool_search_result.j2",
        include_str!("../../templates/tool_search_result.j2"),
    ),
    ("code_mode.j2", include_str!("../../templates/code_mode.j2")),
    (
        "code_files.j2",
        include_str!("../../templates/code_files.j2"),
    ),
    (
        "search_api.j2",
        include_str!("../../templates/search_api.j2"),
    ),
    (
        "search_api_result.j2",
        include_str!("../../templates/search_api_result.j2"),
    ),
    ("run_code.j2", include_str!("../../templates/run_code.j2")),
    (
        "list_files.j2",
        include_str!("../../templates/list_files.j2"),
    ),
    ("read_file.j2", include_str!("../../templates/read_file.j2")),
];

/// Built-in template sets, by name: files laid over the built-in templates, named by a
/// mode (`templates=NAME`) or a run (`--templates NAME`). `fim-frame` wraps the system
/// prompt in a frame of FIM One's structure and length; the `mcp-pd-*` sets are the
/// wordings the MCP Progressive Disclosure guide (v2.1) reports failing, to compare
/// with its recommended one (the built-in `read_resource.j2` and
/// `mcp_resource_system.j2`).
pub const SETS: [(&str, &[(&str, &str)]); 5] = [
    (
        "fim-frame",
        &[(
            "system.j2",
            include_str!("../../templates/sets/fim-frame/system.j2"),
        )],
    ),
    (
        "mcp-pd-brief",
        &[
            (
                "read_resource.j2",
                include_str!("../../templates/sets/mcp-pd-brief/read_resource.j2"),
            ),
            (
                "mcp_resource_system.j2",
                include_str!("../../templates/sets/mcp-pd-brief/mcp_resource_system.j2"),
            ),
        ],
    ),
    (
        "mcp-pd-verbose",
        &[
            (
                "read_resource.j2",
                include_str!("../../templates/sets/mcp-pd-verbose/read_resource.j2"),
            ),
            (
                "mcp_resource_system.j2",
                include_str!("../../templates/sets/mcp-pd-verbose/mcp_resource_system.j2"),
            ),
        ],
    ),
    (
        "mcp-pd-no-example",
        &[
            (
                "read_resource.j2",
                include_str!("../../templates/sets/mcp-pd-no-example/read_resource.j2"),
            ),
            (
                "mcp_resource_system.j2",
                include_str!("../../templates/sets/mcp-pd-no-example/mcp_resource_system.j2"),
            ),
        ],
    ),
    (
        "mcp-pd-no-prohibition",
        &[
            (
                "read_resource.j2",
                include_str!("../../templates/sets/mcp-pd-no-prohibition/read_resource.j2"),
            ),
            (
                "mcp_resource_system.j2",
                include_str!("../../templates/sets/mcp-pd-no-prohibition/mcp_resource_system.j2"),
            ),
        ],
    ),
];

/// A template set that cannot be loaded, or a template that cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("template syntax: {0}")]
    Syntax(String),
    #[error("{}: cannot read template directory: {message}", dir.display())]
    Directory {
        dir: std::path::PathBuf,
        message: String,
    },
    #[error("{}: `{name}` is not a template name (known: {})", dir.display(), BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))]
    UnknownName {
        dir: std::path::PathBuf,
        name: String,
    },
    #[error("`{0}` is neither a template directory nor a built-in template set (known: {known})", known = SETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))]
    UnknownSet(String),
    #[error("{}: {message}", path.display())]
    Read {
        path: std::path::PathBuf,
        message: String,
    },
    /// A template that does not compile or render (a misspelt variable).
    #[error("template {name}: {message}")]
    Render { name: String, message: String },
}

/// The loaded templates.
pub struct Templates {
    env: Environment<'static>,
    /// The effective source of each template, by name (to lay a set over).
    sources: Vec<(String, String)>,
    /// Content hash of each template's effective text, by name (for `run.json`).
    hashes: std::collections::BTreeMap<String, String>,
}

impl Templates {
    /// The built-in templates.
    pub fn builtin() -> Templates {
        Templates::with_overrides(None).expect("built-in templates compile")
    }

    /// Built-in templates, with any file of the same name in `dir` taking their place.
    /// A file in `dir` that is not a known template name is an error (a typo would
    /// otherwise be silently ignored).
    pub fn with_overrides(dir: Option<&Path>) -> Result<Templates, TemplateError> {
        let mut sources: Vec<(String, String)> = BUILTIN
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        if let Some(dir) = dir {
            let entries = std::fs::read_dir(dir).map_err(|e| TemplateError::Directory {
                dir: dir.to_path_buf(),
                message: e.to_string(),
            })?;
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(slot) = sources.iter_mut().find(|(n, _)| *n == name) else {
                    return Err(TemplateError::UnknownName {
                        dir: dir.to_path_buf(),
                        name,
                    });
                };
                slot.1 = std::fs::read_to_string(e.path()).map_err(|err| TemplateError::Read {
                    path: e.path(),
                    message: err.to_string(),
                })?;
            }
        }
        Templates::compile(sources)
    }

    /// The templates of `--templates VALUE`: a directory of overrides, or the name of
    /// a built-in set laid over the built-in templates.
    pub fn from_arg(value: &Path) -> Result<Templates, TemplateError> {
        if value.is_dir() {
            return Templates::with_overrides(Some(value));
        }
        let name = value.to_string_lossy();
        if SETS.iter().any(|(n, _)| *n == name) {
            return Templates::builtin().with_set(&name);
        }
        Err(TemplateError::UnknownSet(name.into_owned()))
    }

    /// The effective source of one template.
    pub fn source(&self, name: &str) -> Option<&str> {
        self.sources
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.as_str())
    }

    /// These templates with the given sources in place of known ones (`serve` words
    /// what a client is told for a client).
    pub fn with_sources(&self, files: &[(&str, &str)]) -> Result<Templates, TemplateError> {
        let mut sources = self.sources.clone();
        for (file, text) in files {
            if let Some(slot) = sources.iter_mut().find(|(n, _)| n == file) {
                slot.1 = text.to_string();
            }
        }
        Templates::compile(sources)
    }

    /// These templates with a built-in set laid over them.
    pub fn with_set(&self, name: &str) -> Result<Templates, TemplateError> {
        let (_, files) = SETS
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| TemplateError::UnknownSet(name.to_string()))?;
        let mut sources = self.sources.clone();
        for (file, text) in files.iter() {
            if let Some(slot) = sources.iter_mut().find(|(n, _)| n == file) {
                slot.1 = text.to_string();
            }
        }
        Templates::compile(sources)
    }

    fn compile(sources: Vec<(String, String)>) -> Result<Templates, TemplateError> {
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .build()
                .map_err(|e| TemplateError::Syntax(e.to_string()))?,
        );
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        let mut hashes = std::collections::BTreeMap::new();
        for (name, src) in &sources {
            hashes.insert(name.clone(), crate::hash::content_hash(src.as_bytes()));
            env.add_template_owned(name.clone(), src.clone())
                .map_err(|e| TemplateError::Render {
                    name: name.clone(),
                    message: e.to_string(),
                })?;
        }
        Ok(Templates {
            env,
            sources,
            hashes,
        })
    }

    /// Renders a template; the result is trimmed of surrounding whitespace.
    pub fn render<S: Serialize>(&self, name: &str, ctx: S) -> Result<String, TemplateError> {
        let failed = |message: String| TemplateError::Render {
            name: name.to_string(),
            message,
        };
        let t = self
            .env
            .get_template(name)
            .map_err(|e| failed(e.to_string()))?;
        t.render(minijinja::value::Serde(ctx))
            .map(|s| s.trim().to_string())
            .map_err(|e| failed(format!("{e:#}")))
    }

    /// The content hash of each template's effective text, by file name.
    pub fn hashes(&self) -> &std::collections::BTreeMap<String, String> {
        &self.hashes
    }

    /// The default agent instructions.
    pub fn default_instructions(&self) -> Result<String, TemplateError> {
        self.render("default_instructions.txt", ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_one_file_and_reject_unknown_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("read_skill.j2"), "Read a skill.").unwrap();
        let t = Templates::with_overrides(Some(dir.path())).unwrap();
        assert_eq!(t.render("read_skill.j2", ()).unwrap(), "Read a skill.");
        std::fs::write(dir.path().join("readskill.j2"), "x").unwrap();
        let e = Templates::with_overrides(Some(dir.path())).err().unwrap();
        assert!(e.to_string().contains("not a template name"), "{e}");
    }
}
