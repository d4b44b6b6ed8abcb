//! What tool answers look like once the seed system (FIM One) has shaped them:
//! indented JSON as Python's `json.dumps(indent=2)` writes it, the truncation of
//! connector and MCP results (a size cap; long top-level arrays cut to their first
//! items), and the per-query budget on all tool results together.

use serde_json::Value;

use super::config::Cut;

/// `v` as `json.dumps(v, indent=2, ensure_ascii=False)` writes it: two-space indents,
/// `": "` between key and value, every element on its own line, keys in their order.
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON values serialize")
}

/// A Python list of strings as `repr` shows it: `['a', 'b']` (a string holding `'`
/// and no `"` in double quotes).
pub fn py_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{s}\"")
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

fn first_keys(items: &[Value]) -> Option<String> {
    match items.first() {
        Some(Value::Object(o)) if !o.is_empty() => {
            Some(py_list(&o.keys().cloned().collect::<Vec<_>>()))
        }
        _ => None,
    }
}

/// `lines` joined by line breaks, and the byte offset in the result where each block
/// ends: block `i` is `lines[..marks[i]]` (a definition-per-block answer such as
/// `discover`'s, whose parts the result budget may cut).
pub fn join_marked(lines: &[String], marks: &[usize]) -> (String, Vec<usize>) {
    let text = lines.join("\n");
    let mut ends = Vec::with_capacity(marks.len());
    let (mut k, mut at) = (0, 0);
    for &m in marks {
        while k < m {
            at += lines[k].len() + usize::from(k > 0);
            k += 1;
        }
        ends.push(at);
    }
    (text, ends)
}

/// Answers that depend only on the catalog (`discover` of one container), made the
/// first time one is asked for and copied out after: a unit's queries and models ask
/// for the same few again and again, and formatting each schema anew took 4% of the
/// suite's time.
pub struct Answers(Vec<std::sync::OnceLock<(String, Vec<usize>)>>);

impl Answers {
    /// Room for `n` answers, by the container's position in its catalog.
    pub fn new(n: usize) -> Answers {
        Answers((0..n).map(|_| std::sync::OnceLock::new()).collect())
    }

    /// Answer `i`, made by `make` if it is not made yet.
    pub fn get(
        &self,
        i: usize,
        make: impl FnOnce() -> (String, Vec<usize>),
    ) -> (String, Vec<usize>) {
        self.0[i].get_or_init(make).clone()
    }
}

fn prefix(s: &str, chars: usize) -> &str {
    match s.char_indices().nth(chars) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A connector or MCP result as FIM One truncates it: a top-level JSON array longer
/// than `max_items` keeps its first items (re-indented) with a note of how many there
/// were; any other result longer than `max_chars` characters is cut there with a note
/// of its length (and of the keys it holds, when it is JSON). Other results pass.
pub fn truncate(content: &str, limits: &Cut) -> String {
    let len = content.chars().count();
    let parsed: Option<Value> = serde_json::from_str(content).ok();
    if let Some(Value::Array(items)) = &parsed {
        if items.len() > limits.max_items {
            let kept = Value::Array(items[..limits.max_items].to_vec());
            let keys = first_keys(items)
                .map(|k| format!("Each item has keys: {k}. "))
                .unwrap_or_default();
            return format!(
                "{}\n\n[{} of {} items shown. {keys}Ask with narrower parameters to see others.]",
                pretty(&kept),
                limits.max_items,
                items.len()
            );
        }
    }
    if len <= limits.max_chars {
        return content.to_string();
    }
    let note = match &parsed {
        Some(Value::Array(items)) => first_keys(items)
            .map(|k| format!(". Item keys: {k}."))
            .unwrap_or_default(),
        Some(Value::Object(o)) => format!(
            ". Top-level keys: {}",
            py_list(&o.keys().cloned().collect::<Vec<_>>())
        ),
        _ => String::new(),
    };
    format!(
        "{}\n\n[Cut: {len} characters in all{note}]",
        prefix(content, limits.max_chars)
    )
}

/// The per-query budget on tool results: tokens estimated as characters / 4; a result
/// that would pass the budget is cut to what is left, with a note (so once it is spent,
/// a result is the note alone). Applies to every tool answer, errors included.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    budget: usize,
    used: usize,
}

impl Budget {
    /// `budget` estimated tokens; 0 = no budget.
    pub fn new(budget: usize) -> Budget {
        Budget { budget, used: 0 }
    }

    pub fn apply(&mut self, content: String) -> String {
        self.apply_kept(content).0
    }

    /// As [`Budget::apply`], and how many bytes of `content` the answer kept when it
    /// was cut (`None` when it was not).
    pub fn apply_kept(&mut self, content: String) -> (String, Option<usize>) {
        if self.budget == 0 {
            return (content, None);
        }
        let mut kept = None;
        let mut est = content.chars().count() / 4;
        let mut out = content;
        if self.used + est > self.budget {
            let keep = self.budget.saturating_sub(self.used).saturating_mul(4);
            let head = prefix(&out, keep);
            kept = Some(head.len());
            out = format!(
                "{head}\n\n[Cut: the tool results of this request are over their budget ({}/{} tokens used)]",
                self.used,
                self.budget
            );
            est = out.chars().count() / 4;
        }
        self.used += est;
        (out, kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(max_chars: usize, max_items: usize) -> Cut {
        Cut {
            max_chars,
            max_items,
        }
    }

    #[test]
    fn marked_blocks_end_where_their_lines_end() {
        let lines: Vec<String> = ["head", "", "  a:", "    x", "", "  b:", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (text, ends) = join_marked(&lines, &[5, 7]);
        assert_eq!(text, lines.join("\n"));
        assert_eq!(&text[..ends[0]], "head\n\n  a:\n    x\n");
        assert_eq!(ends[1], text.len());
    }

    #[test]
    fn the_budget_says_how_much_of_a_cut_answer_it_kept() {
        let mut b = Budget::new(10);
        let (out, kept) = b.apply_kept("é".repeat(30));
        assert_eq!(kept, None);
        assert_eq!(out.chars().count(), 30);
        let (out, kept) = b.apply_kept("x".repeat(100));
        // 7 tokens used of 10: 3 left, 12 characters.
        assert_eq!(kept, Some(12));
        assert!(out.starts_with(&"x".repeat(12)) && out.contains("[Cut:"));
    }

    #[test]
    fn pretty_is_pythons_indent_2() {
        assert_eq!(
            pretty(&json!({"b": [1, {}], "a": "é"})),
            "{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": \"é\"\n}"
        );
        assert_eq!(py_list(&["id".into(), "it's".into()]), "['id', \"it's\"]");
    }

    #[test]
    fn long_arrays_keep_their_first_items() {
        let rows: Vec<Value> = (0..12).map(|i| json!({"id": i, "name": "x"})).collect();
        let out = truncate(&Value::Array(rows).to_string(), &limits(50_000, 10));
        let (kept, note) = out.split_once("\n\n[").unwrap();
        let kept: Vec<Value> = serde_json::from_str(kept).unwrap();
        assert_eq!(kept.len(), 10);
        assert!(note.starts_with("10 of 12 items shown. Each item has keys: ['id', 'name']."));
        // Short arrays and objects pass unchanged, compact as they came.
        let short = json!([1, 2]).to_string();
        assert_eq!(truncate(&short, &limits(50_000, 10)), short);
    }

    #[test]
    fn long_text_is_cut_at_the_character_cap() {
        let big = json!({"blob": "y".repeat(100)}).to_string();
        let out = truncate(&big, &limits(20, 10));
        assert!(out.starts_with(&big[..20]));
        assert!(out.ends_with(&format!(
            "[Cut: {} characters in all. Top-level keys: ['blob']]",
            big.len()
        )));
        let text = "é".repeat(30);
        assert_eq!(
            truncate(&text, &limits(10, 10)),
            format!("{}\n\n[Cut: 30 characters in all]", "é".repeat(10))
        );
    }

    #[test]
    fn the_budget_cuts_then_leaves_only_the_note() {
        let mut b = Budget::new(10);
        assert_eq!(b.apply("a".repeat(20)), "a".repeat(20)); // 5 tokens
        let second = b.apply("b".repeat(40)); // 10 more would pass 10
        assert!(second.starts_with(&"b".repeat(20)), "{second}");
        assert!(second.contains("(5/10 tokens used)"));
        assert!(!second.starts_with(&"b".repeat(21)));
        let third = b.apply("c".repeat(8));
        assert!(third.starts_with("\n\n[Cut:"), "{third}");
        let mut none = Budget::new(0);
        assert_eq!(none.apply("z".repeat(1_000_000)).len(), 1_000_000);
    }
}
