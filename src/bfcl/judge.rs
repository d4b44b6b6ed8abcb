//! Result files judged whole: each line by its entry — a single-turn one by
//! [`super::results::judge`], a multi-turn one by executing it on the scenario's live
//! servers ([`super::multi_judge::judge_multi`]).

use std::collections::BTreeMap;

use super::multi_judge::{judge_multi, JudgeError};
use super::results::{judge, ResultLine, Verdict};
use crate::environment::Databases;
use crate::scenario::Scenario;

/// Judges result lines against every converted scenario: each line by its `id`; a
/// multi-turn one (its scenario has live servers, `live[s]`) by executing it
/// ([`super::multi_judge`]). Returns the verdicts in the order of the lines and the
/// ids no scenario holds.
pub fn judge_all(
    scenarios: &[Scenario],
    lines: &[ResultLine],
    underscore_to_dot: bool,
    live: &[Option<std::sync::Arc<crate::environment::live::Live>>],
) -> Result<(Vec<Verdict>, Vec<String>), JudgeError> {
    let mut index: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (s, sc) in scenarios.iter().enumerate() {
        for (q, query) in sc.queries.iter().enumerate() {
            index.insert(query.id.as_str(), (s, q));
        }
    }
    let dbs: Vec<Databases> = scenarios
        .iter()
        .map(|sc| Databases::build(&sc.catalog))
        .collect::<Result<_, _>>()
        .map_err(|e| JudgeError::Usage(e.to_string()))?;
    let mut verdicts = Vec::new();
    let mut unknown = Vec::new();
    for l in lines {
        match index.get(l.id.as_str()) {
            Some(&(s, q))
                if scenarios[s].queries[q].is_conversation() || !scenarios[s].live.is_empty() =>
            {
                let live = live.get(s).and_then(Option::as_ref).ok_or_else(|| {
                    JudgeError::Usage(format!(
                        "{}: a multi-turn entry is judged by running it on its live servers, which this scoring was not given",
                        l.id
                    ))
                })?;
                verdicts.push(judge_multi(
                    &scenarios[s],
                    &scenarios[s].queries[q],
                    live,
                    l,
                )?);
            }
            Some(&(s, q)) => verdicts.push(judge(
                &scenarios[s],
                &scenarios[s].queries[q],
                &dbs[s],
                l,
                underscore_to_dot,
            )),
            None => unknown.push(l.id.clone()),
        }
    }
    Ok((verdicts, unknown))
}
