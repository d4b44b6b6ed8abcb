//! Connectors, legacy: one tool per action, `{connector}__{action}` (FIM One's
//! sanitised names), with the action's description (or `METHOD path` when it has none)
//! and its full parameter schema.

use super::legacy::Direct;
use crate::catalog::{Address, Catalog};

/// The legacy tools of every connector action, after the skills in registry order.
pub fn new(catalog: &Catalog) -> Direct {
    let defs = catalog.connectors.iter().flat_map(|c| {
        c.actions.iter().map(|a| {
            let description = if a.description.is_empty() {
                format!(
                    "{} {}",
                    a.method.as_deref().unwrap_or(""),
                    a.path.as_deref().unwrap_or("")
                )
                .trim()
                .to_string()
            } else {
                a.description.clone()
            };
            (
                Address::Connector(c.name.clone(), a.name.clone()),
                description,
                a.parameters.clone(),
            )
        })
    });
    Direct::new(catalog, 1, |a| matches!(a, Address::Connector(..)), defs)
}
