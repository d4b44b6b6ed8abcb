//! `discbench tokens`: the static ledger of each scenario under each mode — system
//! prompt and tool definitions as rendered, before any model acts — and, with
//! `--show`, the exact texts, so anyone can recount them with another tokenizer.

use std::sync::Arc;

use super::args::TokensArgs;
use super::config;
use super::failure::Failure;
use crate::exit;
use crate::scenario::Scenario;
use crate::strategy::mode::Mode;
use crate::strategy::{Composite, ProtocolConfig, Templates};
use crate::tokens::Counter;

pub fn tokens(a: TokensArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let p = config::prepare(&a.common)?;
    let names = match a.names.as_str() {
        "discbench" => None,
        other => Some(crate::names::rule_of(other).ok_or_else(|| {
            Failure::Usage(format!(
                "--names {other}: discbench (as rendered), openai, anthropic or gemini"
            ))
        })?),
    };
    let text = tokens_report(
        &p.scenarios,
        &p.modes,
        &p.counter,
        &p.templates,
        p.protocol,
        a.show,
        names,
    )
    .map_err(|e| Failure::Usage(e.to_string()))?;
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::Infra(e.into()))?;
    Ok(exit::OK)
}

/// The static ledger: per scenario and mode, the system prompt and the tool
/// definitions as rendered, before any model acts (and before any selection step).
pub fn tokens_report(
    scenarios: &[Scenario],
    modes: &[Mode],
    counter: &Counter,
    templates: &Arc<Templates>,
    protocol: ProtocolConfig,
    show: bool,
    names: Option<crate::names::NameRule>,
) -> Result<String, crate::strategy::TemplateError> {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "tokenizer: {}", counter.encoding().as_str());
    let _ = writeln!(
        s,
        "tool names: {}",
        match names {
            None => "as discbench renders them (FIM One's; what mock models see)".to_string(),
            Some(r) => format!(
                "as sent to {} (names it refuses mapped; see --names)",
                r.provider
            ),
        }
    );
    let _ = writeln!(
        s,
        "{:<24} {:<16} {:>6} {:>8} {:>10} {:>8}  selection",
        "scenario", "mode", "tools", "system", "tool_defs", "total"
    );
    // Under Gemini's names: what its schema subset may not honour, tool by tool.
    let gemini = names.is_some_and(|r| r.provider == crate::names::GEMINI.provider);
    let mut notes: std::collections::BTreeMap<(String, String), Vec<String>> = Default::default();
    for sc in scenarios {
        if sc.queries.iter().any(|q| !q.scope.is_empty()) {
            let _ = writeln!(
                s,
                "({}: its queries have their own scope; the rows below render the whole \
                 catalog — each query's first request is in a run's outcomes)",
                sc.name
            );
        }
        for m in modes {
            let mode = m.with_overrides(&sc.agent.modes);
            let comp = Composite::new(
                &sc.catalog,
                sc.agent.instructions.as_deref(),
                mode,
                templates,
                protocol,
            )?;
            let sys = counter.count(comp.system());
            // What the first request shows: tool search and retrieval hold tools back
            // (retrieval adds the top k for each query on top of these).
            let first = comp.visible_tools(&comp.new_state());
            // Under a provider's rule, the names it would be sent.
            let first: std::sync::Arc<[crate::wire::ToolDef]> = match names.and_then(|r| {
                crate::names::NameMap::of(
                    &crate::wire::Context {
                        tools: first.clone(),
                        ..Default::default()
                    },
                    &r,
                )
            }) {
                Some(map) => first
                    .iter()
                    .map(|t| crate::wire::ToolDef {
                        name: map.wire(&t.name).to_string(),
                        ..t.clone()
                    })
                    .collect(),
                None => first,
            };
            if gemini {
                for t in comp.all_tools().iter() {
                    let n = crate::model::gemini::schema_notes(t);
                    if !n.is_empty() {
                        let name = crate::names::GEMINI.wire_name(&t.name).into_owned();
                        notes.insert((sc.name.clone(), name), n);
                    }
                }
            }
            let held = comp.all_tools().len() - first.len();
            let defs = counter.tools(&first);
            let _ = writeln!(
                s,
                "{:<24} {:<16} {:>6} {:>8} {:>10} {:>8}  {}",
                sc.name,
                m.label,
                first.len(),
                sys,
                defs,
                sys + defs,
                if comp.selection_applies() {
                    "runs".to_string()
                } else if held > 0 {
                    format!("- ({held} tools held back for search or retrieval)")
                } else {
                    "-".to_string()
                }
            );
            if show {
                let _ = writeln!(s, "--- system prompt ({sys} tokens) ---\n{}", comp.system());
                for t in first.iter() {
                    let _ = writeln!(
                        s,
                        "--- tool {} ({} tokens) ---\n{}",
                        t.name,
                        counter.tool(t),
                        t.wire_json()
                    );
                }
                let _ = writeln!(s, "--- end of {} / {} ---", sc.name, m.label);
            }
        }
    }
    if gemini {
        if notes.is_empty() {
            let _ = writeln!(
                s,
                "gemini: every schema keeps to the JSON Schema keywords Gemini documents"
            );
        } else {
            let _ = writeln!(
                s,
                "gemini: {} tools send schemas Gemini may not honour in full (sent as written, \
                 in parametersJsonSchema; nothing is dropped):",
                notes.len()
            );
            for ((scenario, tool), n) in &notes {
                let _ = writeln!(s, "  {scenario} / {tool}: {}", n.join("; "));
            }
        }
    }
    Ok(s)
}
