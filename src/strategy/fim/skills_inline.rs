//! Skills, inline: the full text of every skill in the system prompt; no tool.

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::strategy::protocol::{Env, Rendered, Resolution, State, Strategy};
use crate::strategy::templates::{TemplateError, Templates};

pub struct SkillsInline {
    names: Vec<String>,
    rendered: Rendered,
}

impl SkillsInline {
    pub fn new(catalog: &Catalog, t: &Templates) -> Result<Self, TemplateError> {
        let skills: Vec<Value> = catalog
            .skills
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "content": s.content.trim()}))
            .collect();
        let section = t.render("skills_inline.j2", json!({"skills": skills}))?;
        Ok(SkillsInline {
            names: catalog.skills.iter().map(|s| s.name.clone()).collect(),
            rendered: Rendered {
                section,
                tools: Vec::new(),
            },
        })
    }
}

impl Strategy for SkillsInline {
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
        self.names
            .iter()
            .map(|n| Address::Skill(n.clone()))
            .collect()
    }

    fn resolve(&self, tool: &str, _args: &Value, _state: &mut State, _env: &Env) -> Resolution {
        unreachable!("inline skills own no tool, so `{tool}` is never routed here")
    }

    fn route(
        &self,
        _target: &ExpectedCall,
        _args: &Value,
        _state: &State,
    ) -> Option<(String, Value)> {
        None
    }
}
