//! Addresses: the canonical name of one callable thing (`skill:<name>`,
//! `connector:<conn>/<action>`, `database:<db>/query`, `mcp:<server>/<tool>`,
//! `builtin:<tool>`) and of a resource, parsed, printed and serialized.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The canonical name of one callable thing, independent of strategy.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Address {
    Skill(String),
    Connector(String, String),
    /// `database:<db>/query`
    Database(String),
    Mcp(String, String),
    Builtin(String),
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Skill(n) => write!(f, "skill:{n}"),
            Address::Connector(c, a) => write!(f, "connector:{c}/{a}"),
            Address::Database(d) => write!(f, "database:{d}/query"),
            Address::Mcp(s, t) => write!(f, "mcp:{s}/{t}"),
            Address::Builtin(n) => write!(f, "builtin:{n}"),
        }
    }
}

impl FromStr for Address {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not an address; use skill:<name>, connector:<connector>/<action>, \
                 database:<db>/query, mcp:<server>/<tool> or builtin:<tool>"
            )
        };
        let (scheme, rest) = s.split_once(':').ok_or_else(bad)?;
        let pair = |rest: &str| -> Result<(String, String), String> {
            let (a, b) = rest.split_once('/').ok_or_else(bad)?;
            if a.is_empty() || b.is_empty() {
                return Err(bad());
            }
            Ok((a.to_string(), b.to_string()))
        };
        if rest.is_empty() {
            return Err(bad());
        }
        match scheme {
            "skill" => Ok(Address::Skill(rest.to_string())),
            "builtin" => Ok(Address::Builtin(rest.to_string())),
            "connector" => pair(rest).map(|(c, a)| Address::Connector(c, a)),
            "mcp" => pair(rest).map(|(s, t)| Address::Mcp(s, t)),
            "database" => match pair(rest)? {
                (db, q) if q == "query" => Ok(Address::Database(db)),
                (db, other) => Err(format!(
                    "`{s}`: a database address is database:{db}/query, not /{other}"
                )),
            },
            _ => Err(bad()),
        }
    }
}

impl Serialize for Address {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One resource of a catalog, by kind and name — what a query's `scope` names:
/// `skill:<name>`, `connector:<name>`, `database:<name>`, `mcp:<server>` or
/// `builtin:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Skill(String),
    Connector(String),
    Database(String),
    Mcp(String),
    Builtin(String),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Skill(n) => write!(f, "skill:{n}"),
            Resource::Connector(n) => write!(f, "connector:{n}"),
            Resource::Database(n) => write!(f, "database:{n}"),
            Resource::Mcp(n) => write!(f, "mcp:{n}"),
            Resource::Builtin(n) => write!(f, "builtin:{n}"),
        }
    }
}

impl FromStr for Resource {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not a resource; use skill:<name>, connector:<name>, database:<name>, \
                 mcp:<server> or builtin:<name>"
            )
        };
        let (scheme, name) = s.split_once(':').ok_or_else(bad)?;
        if name.is_empty() {
            return Err(bad());
        }
        let name = name.to_string();
        Ok(match scheme {
            "skill" => Resource::Skill(name),
            "connector" => Resource::Connector(name),
            "database" => Resource::Database(name),
            "mcp" => Resource::Mcp(name),
            "builtin" => Resource::Builtin(name),
            _ => return Err(bad()),
        })
    }
}

impl Serialize for Resource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a conversation's turn adds to the catalog (`adds:`): a whole resource
/// (`mcp:calendar`, `connector:jira`, `database:hr`, `skill:<name>`, `builtin:<name>`)
/// or one tool or action of one (`mcp:calendar/create_event`,
/// `connector:jira/create_issue`), as after a server's `tools/list_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    Whole(Resource),
    One(Address),
}

impl Part {
    /// Whether the part holds this address.
    pub fn covers(&self, a: &Address) -> bool {
        match self {
            Part::Whole(r) => a.resource() == *r,
            Part::One(x) => x == a,
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Whole(r) => r.fmt(f),
            Part::One(a) => a.fmt(f),
        }
    }
}

impl FromStr for Part {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let one =
            matches!(s.split_once(':'), Some(("mcp" | "connector", rest)) if rest.contains('/'));
        if one {
            s.parse().map(Part::One)
        } else {
            s.parse().map(Part::Whole).map_err(|_| {
                format!(
                    "`{s}` is not a resource or a tool: use mcp:<server>, connector:<name>, database:<name>, skill:<name>, builtin:<name>, or one tool: mcp:<server>/<tool>, connector:<name>/<action>"
                )
            })
        }
    }
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Address {
    /// The resource this address belongs to.
    pub fn resource(&self) -> Resource {
        match self {
            Address::Skill(n) => Resource::Skill(n.clone()),
            Address::Connector(c, _) => Resource::Connector(c.clone()),
            Address::Database(d) => Resource::Database(d.clone()),
            Address::Mcp(s, _) => Resource::Mcp(s.clone()),
            Address::Builtin(n) => Resource::Builtin(n.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        for s in [
            "skill:Refund Processing",
            "connector:erp/get_order",
            "database:hr/query",
            "mcp:github/create_issue",
            "builtin:calculator",
        ] {
            let a: Address = s.parse().unwrap();
            assert_eq!(a.to_string(), s);
        }
    }

    #[test]
    fn parts_are_resources_or_single_tools() {
        let p: Part = "mcp:calendar".parse().unwrap();
        assert_eq!(p, Part::Whole(Resource::Mcp("calendar".into())));
        let one: Part = "mcp:calendar/create_event".parse().unwrap();
        let create = Address::Mcp("calendar".into(), "create_event".into());
        assert_eq!(one, Part::One(create.clone()));
        assert!(p.covers(&create) && one.covers(&create));
        assert!(!one.covers(&Address::Mcp("calendar".into(), "list".into())));
        assert_eq!(one.to_string(), "mcp:calendar/create_event");
        assert!("calendar".parse::<Part>().is_err());
        assert!("database:hr".parse::<Part>().is_ok());
    }

    #[test]
    fn bad_addresses_are_refused() {
        for s in [
            "erp/get_order",
            "connector:erp",
            "database:hr/select",
            "mcp:/x",
            "skill:",
        ] {
            assert!(s.parse::<Address>().is_err(), "{s} should not parse");
        }
    }
}
