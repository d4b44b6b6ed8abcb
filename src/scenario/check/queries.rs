//! The queries' checks: ids, texts, scopes, and expectations (steps, alternatives,
//! arguments, `before`, `allow`, `forbid`) against the catalog.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::catalog::{Address, Catalog, Part, Resource};
use crate::scenario::expect::{Allowed, Compare, Expect, ExpectedCall, Judge, ReferenceCall, Step};
use crate::scenario::raw::{RawExpect, RawQuery};
use crate::scenario::types::{Query, Turn};

use super::checker::Checker;

impl Checker {
    pub(crate) fn queries(&mut self, file: &Path, raw: Vec<RawQuery>, cat: &Catalog) -> Vec<Query> {
        let mut ids = HashSet::new();
        let mut out = Vec::new();
        for (i, q) in raw.into_iter().enumerate() {
            let p = format!("queries[{i}]");
            if q.id.trim().is_empty() {
                self.err(file, &format!("{p}.id"), "must not be empty");
            } else if !ids.insert(q.id.clone()) {
                self.err_at(
                    file,
                    &format!("{p}.id"),
                    &format!("id: {}", q.id),
                    2,
                    format!("duplicate query id `{}`", q.id),
                );
            }
            // A single query (`text`, `expect`) or a conversation (`turns`), never both.
            let mut turns: Vec<(String, String, RawExpect, Vec<String>)> = Vec::new();
            // Where the query stands (its id is unique in the file).
            let here = format!("id: {}", q.id);
            match (q.text, q.expect, q.turns) {
                (Some(text), Some(e), None) => {
                    turns.push((format!("{p}.text"), text, e, Vec::new()));
                }
                (None, None, Some(raw)) => {
                    if raw.is_empty() {
                        self.err_at(
                            file,
                            &format!("{p}.turns"),
                            &here,
                            1,
                            "a conversation needs at least one turn",
                        );
                        continue;
                    }
                    for (t, turn) in raw.into_iter().enumerate() {
                        turns.push((
                            format!("{p}.turns[{t}].text"),
                            turn.text,
                            turn.expect,
                            turn.adds,
                        ));
                    }
                }
                (_, _, Some(_)) => {
                    self.err_at(
                        file,
                        &format!("{p}.turns"),
                        &here,
                        1,
                        "a query is a single turn (`text` and `expect`) or a conversation (`turns`), not both",
                    );
                    continue;
                }
                (None, _, None) => {
                    self.err_at(
                        file,
                        &format!("{p}.text"),
                        &here,
                        1,
                        "missing: a query needs `text` and `expect`, or `turns`",
                    );
                    continue;
                }
                (Some(_), None, None) => {
                    self.err_at(
                        file,
                        &format!("{p}.expect"),
                        &here,
                        1,
                        "missing: what the query must do",
                    );
                    continue;
                }
            }
            let mut built: Vec<(String, Expect, Vec<Part>)> = Vec::new();
            for (t, (text_path, text, e, adds)) in turns.into_iter().enumerate() {
                if text.trim().is_empty() {
                    self.err(file, &text_path, "must not be empty");
                }
                let tp = text_path.trim_end_matches(".text").to_string();
                let expect = self.expectation(file, &format!("{tp}.expect"), e, cat);
                let mut parts = Vec::new();
                for (j, a) in adds.iter().enumerate() {
                    let at = format!("{tp}.adds[{j}]");
                    if t == 0 {
                        self.err_at(
                            file,
                            &at,
                            &here,
                            1,
                            "nothing comes before the first turn: what it has is the catalog",
                        );
                        continue;
                    }
                    match a.parse::<Part>() {
                        Err(e) => self.err_at(file, &at, a, 1, e),
                        Ok(part) => parts.push(part),
                    }
                }
                built.push((text, expect, parts));
            }
            let mut scope: Vec<Resource> = Vec::new();
            for (j, s) in q.scope.iter().flatten().enumerate() {
                let at = format!("{p}.scope[{j}]");
                match s.parse::<Resource>() {
                    Err(e) => self.err_at(file, &at, s, 1, e),
                    Ok(r) if !cat.has_resource(&r) => {
                        self.err_at(file, &at, s, 1, format!("`{r}` is not in the catalog"))
                    }
                    Ok(r) if scope.contains(&r) => {
                        self.err(file, &at, format!("`{r}` is named twice"))
                    }
                    Ok(r) => scope.push(r),
                }
            }
            if q.scope.as_ref().is_some_and(Vec::is_empty) {
                self.err(
                    file,
                    &format!("{p}.scope"),
                    "an empty scope gives the agent nothing; leave it out for the whole catalog",
                );
            }
            if !scope.is_empty() {
                let outside = built
                    .iter()
                    .flat_map(|(_, e, _)| {
                        e.calls
                            .iter()
                            .flat_map(|s| s.alternatives.iter().map(|c| &c.address))
                            .chain(e.allow.iter().map(|a| &a.address))
                    })
                    .find(|a| !scope.contains(&a.resource()));
                if let Some(a) = outside {
                    let a = a.to_string();
                    self.err_at(
                        file,
                        &format!("{p}.scope"),
                        &a,
                        1,
                        format!("`{a}` is expected or allowed, but outside this query's scope"),
                    );
                }
            }
            if q.instructions.as_ref().is_some_and(|s| s.trim().is_empty()) {
                self.err(file, &format!("{p}.instructions"), "must not be empty");
            }
            let judge = match q.judge.as_deref() {
                None | Some("general") => Judge::General,
                Some("bfcl") => Judge::Bfcl,
                Some(other) => {
                    self.err(
                        file,
                        &format!("{p}.judge"),
                        format!("`{other}` is not a judge; use general or bfcl"),
                    );
                    Judge::General
                }
            };
            self.conversation(file, &p, &here, &built, cat);
            let mut built = built.into_iter();
            let (text, expect, _) = built.next().expect("at least one turn");
            out.push(Query {
                id: q.id,
                text,
                expect,
                later: built
                    .map(|(text, expect, adds)| Turn { text, expect, adds })
                    .collect(),
                scope,
                instructions: q.instructions,
                catalog: None,
                tags: q.tags,
                judge,
            });
        }
        out
    }

    /// One expectation (a query's, or a conversation turn's) checked against the
    /// catalog; `ep` is its field path.
    pub(crate) fn expectation(
        &mut self,
        file: &Path,
        ep: &str,
        e: RawExpect,
        cat: &Catalog,
    ) -> Expect {
        let mut steps: Vec<Step> = Vec::new();
        if e.calls.is_none() && e.reference.is_none() {
            self.err(
                file,
                ep,
                "missing `calls`: what the turn must call (`calls: []` for none), or a `reference` to judge it by state",
            );
        }
        for (j, c) in e.calls.iter().flatten().enumerate() {
            if let Some(step) = self.step(file, &format!("{ep}.calls[{j}]"), c, cat) {
                steps.push(step);
            }
        }
        let mut ids: HashMap<String, usize> = HashMap::new();
        for (j, st) in steps.iter().enumerate() {
            if let Some(id) = &st.id {
                if ids.insert(id.clone(), j).is_some() {
                    self.err(
                        file,
                        &format!("{ep}.calls"),
                        format!("two steps have the id `{id}`"),
                    );
                }
            }
        }
        let mut before = Vec::new();
        for (j, pair) in e.before.iter().enumerate() {
            let at = format!("{ep}.before[{j}]");
            let [a, b] = pair.as_slice() else {
                self.err(file, &at, "a `before` entry is a pair of step ids: [a, b]");
                continue;
            };
            match (ids.get(a), ids.get(b)) {
                (Some(ia), Some(ib)) if ia < ib => before.push((a.clone(), b.clone())),
                (Some(_), Some(_)) => self.err(
                    file,
                    &at,
                    format!("list step `{a}` before step `{b}`: steps are listed in an order that honours `before`"),
                ),
                _ => {
                    let missing = if ids.contains_key(a) { b } else { a };
                    self.err(file, &at, format!("no step has the id `{missing}`"));
                }
            }
        }
        let mut allow = Vec::new();
        for (j, v) in e.allow.iter().enumerate() {
            let at = format!("{ep}.allow[{j}]");
            match v {
                Value::String(s) => {
                    if let Some(address) = self.address(file, &at, s, cat) {
                        allow.push(Allowed {
                            address,
                            args: BTreeMap::new(),
                        });
                    }
                }
                Value::Object(o) => {
                    if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "address" | "args")) {
                        self.err(
                            file,
                            &format!("{at}.{k}"),
                            "unknown field; an allowed call has address and args",
                        );
                        continue;
                    }
                    let Some(s) = o.get("address").and_then(Value::as_str) else {
                        self.err(file, &at, "an allowed call needs `address`");
                        continue;
                    };
                    let Some(address) = self.address(file, &format!("{at}.address"), s, cat) else {
                        continue;
                    };
                    let args = match o.get("args") {
                        None | Some(Value::Null) => BTreeMap::new(),
                        Some(Value::Object(m)) => {
                            match self.accepted_args(file, &format!("{at}.args"), &address, m, cat)
                            {
                                Some(a) => a,
                                None => continue,
                            }
                        }
                        Some(_) => {
                            self.err(
                                file,
                                &format!("{at}.args"),
                                "args maps each parameter to its accepted values",
                            );
                            continue;
                        }
                    };
                    allow.push(Allowed { address, args });
                }
                _ => self.err(
                    file,
                    &at,
                    "an allowed call is an address string or {address, args}",
                ),
            }
        }
        let mut forbid = Vec::new();
        for (j, f) in e.forbid.iter().enumerate() {
            if let Some(a) = self.address(file, &format!("{ep}.forbid[{j}]"), f, cat) {
                if steps.iter().any(|st| st.admits(&a)) {
                    self.err(
                        file,
                        &format!("{ep}.forbid[{j}]"),
                        format!("`{a}` is both expected and forbidden"),
                    );
                }
                if allow.iter().any(|al| al.address == a) {
                    self.err(
                        file,
                        &format!("{ep}.forbid[{j}]"),
                        format!("`{a}` is both allowed and forbidden"),
                    );
                }
                forbid.push(a);
            }
        }
        let reference = e.reference.as_ref().map(|r| {
            r.iter()
                .enumerate()
                .filter_map(|(j, v)| {
                    self.reference_call(file, &format!("{ep}.reference[{j}]"), v, cat)
                })
                .collect()
        });
        Expect {
            calls: steps,
            allow,
            order: e.order,
            before,
            forbid,
            exhaustive: e.exhaustive,
            reference,
        }
    }

    /// One reference call: `{address, args}`, the arguments as the server receives
    /// them (checked against the tool's schema).
    fn reference_call(
        &mut self,
        file: &Path,
        at: &str,
        v: &Value,
        cat: &Catalog,
    ) -> Option<ReferenceCall> {
        let Some(o) = v.as_object() else {
            self.err(file, at, "a reference call is {address, args}");
            return None;
        };
        if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "address" | "args")) {
            self.err(
                file,
                &format!("{at}.{k}"),
                "unknown field; a reference call has address and args",
            );
            return None;
        }
        let Some(s) = o.get("address").and_then(Value::as_str) else {
            self.err(file, at, "a reference call needs `address`");
            return None;
        };
        let address = self.address(file, &format!("{at}.address"), s, cat)?;
        if !matches!(address, crate::catalog::Address::Mcp(..)) {
            self.err(
                file,
                &format!("{at}.address"),
                format!("`{address}` is not an MCP tool: reference calls run on live MCP servers"),
            );
            return None;
        }
        let args = match o.get("args") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                self.err(file, &format!("{at}.args"), "the arguments, as an object");
                return None;
            }
        };
        Some(ReferenceCall { address, args })
    }

    /// A conversation's rules: each `adds` names what the catalog holds and what is not
    /// available yet at its turn (added by no earlier turn), and every address a turn
    /// expects or allows is available at that turn (added by no later one).
    fn conversation(
        &mut self,
        file: &Path,
        p: &str,
        here: &str,
        turns: &[(String, Expect, Vec<Part>)],
        cat: &Catalog,
    ) {
        let all = cat.addresses();
        let mut added: Vec<Part> = Vec::new();
        for (t, (_, _, adds)) in turns.iter().enumerate() {
            for (j, part) in adds.iter().enumerate() {
                let at = format!("{p}.turns[{t}].adds[{j}]");
                let what = part.to_string();
                let holds = match part {
                    Part::Whole(r) => cat.has_resource(r),
                    Part::One(a) => all.contains(a),
                };
                if !holds {
                    self.err_at(
                        file,
                        &at,
                        &what,
                        1,
                        format!("`{part}` is not in the catalog"),
                    );
                } else if added.iter().any(|x| match (x, part) {
                    (x, Part::One(a)) => x.covers(a),
                    (Part::Whole(r), Part::Whole(s)) => r == s,
                    (Part::One(_), Part::Whole(_)) => false,
                }) || adds[..j].contains(part)
                {
                    self.err_at(
                        file,
                        &at,
                        here,
                        1,
                        format!("`{part}` is available already: an earlier turn added it"),
                    );
                }
            }
            added.extend(adds.iter().cloned());
        }
        for (t, (_, e, _)) in turns.iter().enumerate() {
            let later: Vec<&Part> = turns[t + 1..].iter().flat_map(|(_, _, a)| a).collect();
            let unavailable = e
                .calls
                .iter()
                .flat_map(|s| s.alternatives.iter().map(|c| &c.address))
                .chain(e.allow.iter().map(|a| &a.address))
                .find(|a| later.iter().any(|part| part.covers(a)));
            if let Some(a) = unavailable {
                let a = a.to_string();
                self.err_at(
                    file,
                    &format!("{p}.turns[{t}].expect"),
                    &a,
                    1,
                    format!("`{a}` is expected or allowed at turn {}, but a later turn adds it: it is not available yet", t + 1),
                );
            }
        }
    }

    /// One required step: an address string, an expected call object, or
    /// `{id?, any_of: [...], count?}`.
    pub(crate) fn step(
        &mut self,
        file: &Path,
        path: &str,
        v: &Value,
        cat: &Catalog,
    ) -> Option<Step> {
        let Value::Object(o) = v else {
            return self.expected_call(file, path, v, cat).map(Step::one);
        };
        let id = match o.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => {
                self.err(
                    file,
                    &format!("{path}.id"),
                    "a step id is a non-empty string",
                );
                return None;
            }
        };
        let count = match o.get("count") {
            None | Some(Value::Null) => 1,
            Some(c) => match c.as_u64() {
                Some(n) if n >= 1 => n as usize,
                _ => {
                    self.err(
                        file,
                        &format!("{path}.count"),
                        "count is a whole number of at least 1",
                    );
                    return None;
                }
            },
        };
        let alternatives = if let Some(alts) = o.get("any_of") {
            if let Some(k) = o
                .keys()
                .find(|k| !matches!(k.as_str(), "id" | "any_of" | "count"))
            {
                self.err(
                    file,
                    &format!("{path}.{k}"),
                    "a step with any_of has id, any_of and count; put arguments on each alternative",
                );
                return None;
            }
            let Some(alts) = alts.as_array().filter(|a| !a.is_empty()) else {
                self.err(
                    file,
                    &format!("{path}.any_of"),
                    "any_of lists at least one call",
                );
                return None;
            };
            let mut v = Vec::new();
            for (k, a) in alts.iter().enumerate() {
                v.push(self.expected_call(file, &format!("{path}.any_of[{k}]"), a, cat)?);
            }
            v
        } else {
            let mut call = o.clone();
            call.remove("id");
            call.remove("count");
            vec![self.expected_call(file, path, &Value::Object(call), cat)?]
        };
        let skills = alternatives
            .iter()
            .filter(|c| matches!(c.address, Address::Skill(_)))
            .count();
        if skills > 0 && skills < alternatives.len() {
            self.err(file, path, "a step's alternatives are all skills or none");
            return None;
        }
        if skills > 0 && count > 1 {
            self.err(
                file,
                &format!("{path}.count"),
                "a skill is read once; count must be 1",
            );
            return None;
        }
        Some(Step {
            id,
            alternatives,
            count,
        })
    }

    /// `args`/`when`: each parameter of `address` mapped to its accepted values.
    pub(crate) fn accepted_args(
        &mut self,
        file: &Path,
        path: &str,
        address: &Address,
        m: &serde_json::Map<String, Value>,
        cat: &Catalog,
    ) -> Option<BTreeMap<String, Vec<Value>>> {
        let schema = cat.schema_of(address);
        let props = schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object);
        let mut args = BTreeMap::new();
        let mut ok = true;
        for (k, val) in m {
            if !props.is_some_and(|p| p.contains_key(k)) {
                let known: Vec<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                self.err(
                    file,
                    &format!("{path}.{k}"),
                    format!(
                        "`{address}` has no parameter `{k}` (it has: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                );
                ok = false;
                continue;
            }
            let accepted = match val {
                Value::Array(a) if a.is_empty() => {
                    self.err(
                        file,
                        &format!("{path}.{k}"),
                        "the list of accepted values is empty",
                    );
                    ok = false;
                    continue;
                }
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            args.insert(k.clone(), accepted);
        }
        ok.then_some(args)
    }

    pub(crate) fn address(
        &mut self,
        file: &Path,
        path: &str,
        s: &str,
        cat: &Catalog,
    ) -> Option<Address> {
        match s.parse::<Address>() {
            Err(e) => {
                self.err_at(file, path, s, 1, e);
                None
            }
            Ok(a) if cat.lookup(&a).is_none() => {
                let hint = suggest(&a, cat);
                self.err_at(
                    file,
                    path,
                    s,
                    1,
                    format!("`{a}` is not in the catalog{hint}"),
                );
                None
            }
            Ok(a) => Some(a),
        }
    }

    pub(crate) fn expected_call(
        &mut self,
        file: &Path,
        path: &str,
        v: &Value,
        cat: &Catalog,
    ) -> Option<ExpectedCall> {
        match v {
            Value::String(s) => {
                let address = self.address(file, path, s, cat)?;
                Some(ExpectedCall::to(address))
            }
            Value::Object(o) => {
                const KEYS: [&str; 6] = [
                    "address",
                    "args",
                    "sql",
                    "ordered",
                    "extra_columns",
                    "compare",
                ];
                for k in o.keys() {
                    if !KEYS.contains(&k.as_str()) {
                        self.err(
                            file,
                            &format!("{path}.{k}"),
                            "unknown field; an expected call has address, args, sql, ordered, extra_columns and compare (and a step id, count or any_of)",
                        );
                        return None;
                    }
                }
                let Some(s) = o.get("address").and_then(Value::as_str) else {
                    self.err(file, path, "an expected call needs `address`");
                    return None;
                };
                let address = self.address(file, &format!("{path}.address"), s, cat)?;
                let args = match o.get("args") {
                    None | Some(Value::Null) => BTreeMap::new(),
                    Some(Value::Object(m)) => {
                        self.accepted_args(file, &format!("{path}.args"), &address, m, cat)?
                    }
                    Some(_) => {
                        self.err(
                            file,
                            &format!("{path}.args"),
                            "args maps each parameter to its accepted values",
                        );
                        return None;
                    }
                };
                let is_db = matches!(address, Address::Database(_));
                let sql = match o.get("sql") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) if is_db => Some(s.clone()),
                    Some(Value::String(_)) => {
                        self.err(
                            file,
                            &format!("{path}.sql"),
                            "sql is only for database:<db>/query expectations",
                        );
                        return None;
                    }
                    Some(_) => {
                        self.err(file, &format!("{path}.sql"), "sql must be a string");
                        return None;
                    }
                };
                let mut flag = |k: &str| -> Option<bool> {
                    match o.get(k) {
                        None | Some(Value::Null) => Some(false),
                        Some(Value::Bool(b)) if sql.is_some() => Some(*b),
                        Some(Value::Bool(_)) => {
                            self.err(
                                file,
                                &format!("{path}.{k}"),
                                format!("{k} is only for expectations with sql"),
                            );
                            None
                        }
                        Some(_) => {
                            self.err(
                                file,
                                &format!("{path}.{k}"),
                                format!("{k} is true or false"),
                            );
                            None
                        }
                    }
                };
                let ordered = flag("ordered")?;
                let extra_columns = flag("extra_columns")?;
                let mut compare = BTreeMap::new();
                let mut bfcl = false;
                match o.get("compare") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if s == "bfcl" => bfcl = true,
                    Some(Value::Object(m)) => {
                        let props = cat.schema_of(&address);
                        for (k, v) in m {
                            let known = props
                                .as_ref()
                                .and_then(|s| s.get("properties"))
                                .and_then(Value::as_object)
                                .is_some_and(|p| p.contains_key(k));
                            let mode = match v.as_str() {
                                Some("exact") => Compare::Exact,
                                Some("standard") => Compare::Standard,
                                _ => {
                                    self.err(
                                        file,
                                        &format!("{path}.compare.{k}"),
                                        "use exact or standard",
                                    );
                                    return None;
                                }
                            };
                            if !known {
                                self.err(
                                    file,
                                    &format!("{path}.compare.{k}"),
                                    format!("`{address}` has no parameter `{k}`"),
                                );
                                return None;
                            }
                            compare.insert(k.clone(), mode);
                        }
                    }
                    Some(_) => {
                        self.err(
                            file,
                            &format!("{path}.compare"),
                            "compare maps parameters to exact or standard, or is `bfcl` (the whole call judged as BFCL's checker judges it)",
                        );
                        return None;
                    }
                }
                if matches!(address, Address::Skill(_)) && !args.is_empty() {
                    self.err(file, &format!("{path}.args"), "a skill takes no arguments");
                }
                Some(ExpectedCall {
                    address,
                    args,
                    sql,
                    ordered,
                    extra_columns,
                    compare,
                    bfcl,
                })
            }
            _ => {
                self.err(
                    file,
                    path,
                    "an expected call is an address string or {address, args, sql}",
                );
                None
            }
        }
    }
}

/// ` (did you mean …?)` for an address whose container exists.
fn suggest(a: &Address, cat: &Catalog) -> String {
    let names: Vec<String> = match a {
        Address::Connector(c, _) => cat
            .connector(c)
            .map(|c| c.actions.iter().map(|x| x.name.clone()).collect())
            .unwrap_or_default(),
        Address::Mcp(s, _) => cat
            .mcp_server(s)
            .map(|s| s.tools.iter().map(|x| x.name.clone()).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if names.is_empty() {
        String::new()
    } else {
        let mut names = names;
        names.truncate(12);
        format!(" (it has: {})", names.join(", "))
    }
}
