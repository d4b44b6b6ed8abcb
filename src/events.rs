//! The vocabulary of protocol events: what a call was refused for, and the events a
//! strategy defines for itself.
//!
//! [`ProtocolError`] holds the refusals every mode can give (a name that does not
//! exist, a subcommand that does not exist, arguments that do not fit, a tool the
//! selection step did not load, a tool held back that no search surfaced) and, as
//! [`ProtocolError::Defined`], the refusals a strategy defines (the MCP Progressive
//! Disclosure extension's `MISSING_TOOL_SELECTION` and `TOOL_DESCRIPTION_REQUIRED`).
//! Events that are not refusals (a search, a resource read) are [`Event`]s a strategy
//! attaches to the call's answer. Either way a strategy names its counter with an
//! [`EventKind`] in its own file; the record stores the counter by that name and the
//! reports show it by that name, so the scorer and the record know no strategy.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A counter a strategy defines: its name (as records and reports show it), whether
/// it counts protocol errors, and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKind {
    pub name: &'static str,
    /// A refusal (counted among the protocol errors), or an event that is not one.
    pub error: bool,
    pub doc: &'static str,
}

impl EventKind {
    /// The event, for a call's answer or refusal.
    pub const fn event(&self) -> Event {
        Event(self.name)
    }
}

/// One occurrence's name: the counter it adds one to.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Event(&'static str);

impl Event {
    pub fn name(self) -> &'static str {
        self.0
    }

    /// The event of this name, as read back from a record: each distinct name is kept
    /// once for the life of the process (there are a handful).
    pub fn named(name: &str) -> Event {
        static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES
            .get_or_init(Default::default)
            .lock()
            .expect("event names");
        if let Some(n) = names.get(name) {
            return Event(n);
        }
        let n: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.insert(n);
        Event(n)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Event::named(&s))
    }
}

/// A protocol error: the call was not understood or not allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// A tool, connector, action, server, database or skill name not in the catalog.
    UnknownTarget,
    /// A meta-tool subcommand that does not exist.
    BadSubcommand,
    /// Arguments that are not JSON, or miss what the (meta-)tool requires.
    SchemaViolation,
    /// A tool that exists but is not loaded (selection step).
    NotLoaded,
    /// A tool held back behind tool search or retrieval that no search surfaced.
    NotSurfaced,
    /// `allowed=on`: a tool whose definition was sent but that may not be called yet.
    NotAllowed,
    /// A refusal a strategy defines, counted under its name.
    Defined(Event),
}

impl ProtocolError {
    /// The refusals every mode can give, by name.
    const COMMON: [(ProtocolError, &'static str); 6] = [
        (ProtocolError::UnknownTarget, "unknown_target"),
        (ProtocolError::BadSubcommand, "bad_subcommand"),
        (ProtocolError::SchemaViolation, "schema_violation"),
        (ProtocolError::NotLoaded, "not_loaded"),
        (ProtocolError::NotSurfaced, "not_surfaced"),
        (ProtocolError::NotAllowed, "not_allowed"),
    ];

    /// Its counter's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolError::Defined(e) => e.name(),
            common => {
                Self::COMMON
                    .iter()
                    .find(|(e, _)| *e == common)
                    .expect("every common refusal is named")
                    .1
            }
        }
    }

    /// The refusal of this name: a common one, else one a strategy defines.
    pub fn named(name: &str) -> ProtocolError {
        Self::COMMON
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(e, _)| *e)
            .unwrap_or_else(|| ProtocolError::Defined(Event::named(name)))
    }
}

impl From<EventKind> for ProtocolError {
    fn from(k: EventKind) -> ProtocolError {
        ProtocolError::Defined(k.event())
    }
}

impl Serialize for ProtocolError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolError {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProtocolError, D::Error> {
        let s = String::deserialize(d)?;
        Ok(ProtocolError::named(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_back_by_name() {
        for (e, name) in ProtocolError::COMMON {
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<ProtocolError>(&json).unwrap(), e);
        }
        const MINE: EventKind = EventKind {
            name: "description_required",
            error: true,
            doc: "",
        };
        let e = ProtocolError::from(MINE);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, "\"description_required\"");
        let back: ProtocolError = serde_json::from_str(&json).unwrap();
        assert_eq!(back, e, "a defined refusal reads back as the same event");
        assert_eq!(back.as_str(), "description_required");
    }
}
