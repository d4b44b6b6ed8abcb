//! Skills, progressive: one stub line per skill in the system prompt (descriptions
//! cut to 120 characters, `...` included, as FIM One cuts them) and a
//! `read_skill(name)` tool that returns a skill's full text.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::strategy::protocol::{
    arg_str, valid, Env, ProtocolError, Rendered, Resolution, State, Strategy,
};
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

pub const READ_SKILL: &str = "read_skill";

/// `text` (trimmed) cut to `max` characters in all: the first `max - 3` and `...`.
pub fn stub(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(3)).collect();
        format!("{cut}...")
    }
}

pub struct SkillsProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
}

impl SkillsProgressive {
    pub fn new(
        catalog: &Arc<Catalog>,
        t: &Templates,
        stub_chars: usize,
    ) -> Result<Self, TemplateError> {
        let skills: Vec<Value> = catalog
            .skills
            .iter()
            .map(|s| json!({"name": s.name, "short": stub(&s.description, stub_chars)}))
            .collect();
        let section = t.render("skills_progressive.j2", json!({"skills": skills}))?;
        let tool = ToolDef {
            name: READ_SKILL.into(),
            description: t.render("read_skill.j2", json!({}))?,
            parameters: json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Which skill, by its name."}},
                "required": ["name"]
            }),
        };
        Ok(SkillsProgressive {
            catalog: catalog.clone(),
            rendered: Rendered {
                section,
                tools: vec![tool],
            },
        })
    }
}

impl Strategy for SkillsProgressive {
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Skill(_))
    }

    fn order(&self) -> u8 {
        3
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, _state: &mut State, _env: &Env) -> Resolution {
        let name = match arg_str(args, "name", tool) {
            Ok(n) => n,
            Err(r) => return r,
        };
        match self.catalog.skill(name) {
            Some(s) => Resolution::fetched(s.content.clone(), vec![Address::Skill(s.name.clone())]),
            None => Resolution::error(
                ProtocolError::UnknownTarget,
                format!(
                    "no skill `{name}`; {}",
                    valid("names", self.catalog.skills.iter().map(|s| &s.name))
                ),
            ),
        }
    }

    fn route(
        &self,
        target: &ExpectedCall,
        _args: &Value,
        state: &State,
    ) -> Option<(String, Value)> {
        let Address::Skill(name) = &target.address else {
            return None;
        };
        (!state.loaded_skills.contains(name))
            .then(|| (READ_SKILL.to_string(), json!({"name": name})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_are_cut_to_the_limit_ellipsis_included() {
        assert_eq!(stub(" abc ", 5), "abc");
        assert_eq!(stub("abcdefgh", 6), "abc...");
        let long = "é".repeat(130);
        assert_eq!(stub(&long, 120).chars().count(), 120);
        assert!(stub(&long, 120).ends_with("é..."));
    }
}
