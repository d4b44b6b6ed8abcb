//! Tool calls written as text instead of made: what open models served without a
//! tool-call parser (or with the wrong one) answer when they mean to call.
//!
//! An answer with no native call is a text call when it holds one of these forms and
//! the form names a tool the model was offered:
//!
//! | form | who writes it | recognised |
//! |---|---|---|
//! | `functions.NAME` then `:`, `(`, `{`, `<` or the end of the line | OpenAI's harmony format read back as text (gpt-oss, models behind llama.cpp's server without a parser) | at the start of a line, or after `to=` |
//! | `<tool_call>{"name": …}</tool_call>` | Hermes, Qwen 2.5 / 3 | anywhere |
//! | `<function=NAME>…</function>` | Llama 3.1 custom tools, Qwen3-Coder | anywhere |
//! | `<\|python_tag\|>` then a JSON call or `NAME(…)` / `NAME.call(…)` | Llama 3.1 / 3.2 | anywhere |
//! | `[TOOL_CALLS]` then `[{"name": …}]` or `NAME[ARGS]{…}` | Mistral | anywhere |
//! | `NAME(arg=…)`, several in `[…]` or on lines | BFCL's prompt format, Python-minded models | the whole answer (or the whole of one fenced block that is the whole answer) |
//! | `{"name": …}` or `{"function": {"name": …}}`, or an array of them | bare JSON | the whole answer (or the whole of one fenced block that is the whole answer) |
//!
//! The tag forms are recognised anywhere because prose never holds their special
//! tokens; the call-syntax and JSON forms only when they are the whole answer, so that
//! prose, an explanation or code the user asked for that mentions a tool's name is
//! not a call.

/// The form a text call was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `functions.NAME:` (harmony's recipient, read back as text).
    Functions,
    /// `<tool_call>…</tool_call>` (Hermes, Qwen).
    ToolCallTag,
    /// `<function=NAME>` (Llama 3.1, Qwen3-Coder).
    FunctionTag,
    /// `<|python_tag|>` (Llama 3.1 / 3.2).
    PythonTag,
    /// `[TOOL_CALLS]` (Mistral).
    MistralTag,
    /// `NAME(arg=…)` (BFCL's prompt format).
    PythonCall,
    /// A bare JSON object or array naming the tool.
    Json,
}

/// Whether `text` is a tool call written out instead of made (see the module's table).
pub fn is_text_call(text: &str, offered: &[&str]) -> bool {
    text_call(text, offered).is_some()
}

/// The form of the text call `text` holds, naming one of `offered`; `None` when it
/// holds none.
pub fn text_call(text: &str, offered: &[&str]) -> Option<Form> {
    let known = |n: &str| offered.contains(&n);
    if functions_form(text, &known) {
        return Some(Form::Functions);
    }
    if let Some(i) = text.find("<tool_call>") {
        let rest = &text[i + "<tool_call>".len()..];
        let inner = rest.split("</tool_call>").next().unwrap_or(rest).trim();
        if json_call(inner, &known) || function_tag(inner, &known) {
            return Some(Form::ToolCallTag);
        }
    }
    if function_tag(text, &known) {
        return Some(Form::FunctionTag);
    }
    if let Some(i) = text.find("<|python_tag|>") {
        let rest = text[i + "<|python_tag|>".len()..].trim();
        let rest = rest.split("<|eom_id|>").next().unwrap_or(rest);
        let rest = rest.split("<|eot_id|>").next().unwrap_or(rest).trim();
        if json_call(rest, &known) || python_calls(rest, &known) {
            return Some(Form::PythonTag);
        }
    }
    if let Some(i) = text.find("[TOOL_CALLS]") {
        let rest = text[i + "[TOOL_CALLS]".len()..].trim();
        if json_call(rest, &known) || mistral_args(rest, &known) {
            return Some(Form::MistralTag);
        }
    }
    let whole = unfenced(text.trim());
    if python_calls(whole, &known) {
        return Some(Form::PythonCall);
    }
    if json_call(whole, &known) {
        return Some(Form::Json);
    }
    None
}

/// The text inside a fenced block when the block is the whole text; else the text.
fn unfenced(t: &str) -> &str {
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return t;
    };
    // The info string (`json`, `python`) up to the first line break.
    match body.split_once('\n') {
        Some((info, code)) if !info.contains(['{', '(', '[']) => code.trim(),
        _ => body.trim(),
    }
}

/// A name as tools are named: letters, digits, `_`, `-` and `.`.
fn name_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(s.len());
    s[..end].trim_end_matches('.')
}

/// `functions.NAME` at the start of a line (or after `to=`), followed by `:`, `(`,
/// `{`, `<`, white space or the end of the line.
fn functions_form(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    let after = |rest: &str| -> bool {
        let name = name_at(rest);
        if name.is_empty() || !known(name) {
            return false;
        }
        let tail = &rest[name.len()..];
        tail.is_empty() || tail.starts_with([':', '(', '{', '<', ' ', '\t', '\n', '\r'])
    };
    let lines = text.lines().any(|l| {
        l.trim_start()
            .strip_prefix("functions.")
            .is_some_and(&after)
    });
    lines
        || text
            .match_indices("to=functions.")
            .any(|(i, m)| after(&text[i + m.len()..]))
}

/// `<function=NAME>` naming an offered tool.
fn function_tag(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    text.match_indices("<function=").any(|(i, m)| {
        let rest = &text[i + m.len()..];
        rest.split_once('>')
            .is_some_and(|(name, _)| known(name.trim().trim_matches('"')))
    })
}

/// `NAME[ARGS]{…}` or `NAME[CALL_ID]…[ARGS]{…}` (Mistral's later tokenizers).
fn mistral_args(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    let name = name_at(text);
    !name.is_empty() && known(name) && text[name.len()..].trim_start().starts_with('[')
}

/// A JSON object naming an offered tool (`name`, or `function.name`), or an array
/// whose items all are objects and one of which does.
fn json_call(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    use serde_json::Value;
    let names = |v: &Value| -> bool {
        let name = v
            .get("name")
            .or_else(|| v.get("function").and_then(|f| f.get("name")))
            .and_then(Value::as_str);
        name.is_some_and(known)
    };
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(v @ Value::Object(_)) => names(&v),
        Ok(Value::Array(a)) => a.iter().all(Value::is_object) && a.iter().any(names),
        _ => false,
    }
}

/// The whole text is one or more Python-style calls, `NAME(…)` with keyword
/// arguments (or none), separated by commas or line breaks and optionally wrapped in
/// `[…]`; at least one names an offered tool and none names anything else.
fn python_calls(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    let mut t = text.trim();
    if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        t = inner.trim();
    }
    if t.is_empty() {
        return false;
    }
    loop {
        let name = name_at(t);
        if name.is_empty() {
            return false;
        }
        // `NAME.call(…)` is Llama's built-in tool form.
        let base = name.strip_suffix(".call").unwrap_or(name);
        if !known(base) {
            return false;
        }
        let rest = &t[name.len()..];
        let Some(args) = rest.strip_prefix('(') else {
            return false;
        };
        let Some(close) = closing_paren(args) else {
            return false;
        };
        if !keyword_args(&args[..close]) {
            return false;
        }
        t = args[close + 1..].trim_start();
        t = t.strip_prefix(',').unwrap_or(t).trim_start();
        if t.is_empty() {
            return true;
        }
    }
}

/// The byte offset of the `)` that closes a call whose arguments start `s`, skipping
/// brackets and quoted strings.
fn closing_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' | ']' | '}' => depth = depth.checked_sub(1)?,
            _ => {}
        }
    }
    None
}

/// Arguments written `key=value, …` (or none): each top-level item starts with an
/// identifier and `=`. Positional arguments and prose are not a tool call's.
fn keyword_args(s: &str) -> bool {
    let s = s.trim();
    if s.is_empty() {
        return true;
    }
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    items.iter().all(|item| {
        let item = item.trim();
        item.is_empty() && items.len() > 1 || {
            let key = item.split('=').next().unwrap_or("").trim();
            !key.is_empty()
                && item.contains('=')
                && !item.starts_with('=')
                && key.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !key.starts_with(|c: char| c.is_ascii_digit())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFFERED: &[&str] = &["read_skill", "mcp-git__git_log", "get_weather", "mcp"];

    fn form(text: &str) -> Option<Form> {
        text_call(text, OFFERED)
    }

    #[test]
    fn harmony_recipients_read_back_as_text() {
        // What a small open model behind llama.cpp's server answered, verbatim in shape.
        assert_eq!(form("functions.read_skill:"), Some(Form::Functions));
        assert_eq!(
            form("functions.mcp-git__git_log: {\"repo_path\": \".\"}"),
            Some(Form::Functions)
        );
        assert_eq!(
            form("Let me look.\nfunctions.get_weather({\"city\": \"Paris\"})"),
            Some(Form::Functions)
        );
        assert_eq!(
            form("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}"),
            Some(Form::Functions)
        );
        // Not offered, or not at the start of a line: not a call.
        assert_eq!(form("functions.delete_everything:"), None);
        assert_eq!(form("Use functions.read_skill to load an SOP."), None);
    }

    #[test]
    fn hermes_and_qwen_tool_call_blocks() {
        assert_eq!(
            form("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            Some(Form::ToolCallTag)
        );
        assert_eq!(
            form("I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"),
            Some(Form::ToolCallTag)
        );
        assert_eq!(form("<tool_call>{\"name\": \"nope\"}</tool_call>"), None);
    }

    #[test]
    fn llama_function_tags_and_python_tag() {
        assert_eq!(
            form("<function=get_weather>{\"city\": \"Paris\"}</function>"),
            Some(Form::FunctionTag)
        );
        assert_eq!(
            form("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eom_id|>"),
            Some(Form::PythonTag)
        );
        assert_eq!(
            form("<|python_tag|>get_weather.call(city=\"Paris\")"),
            Some(Form::PythonTag)
        );
        assert_eq!(form("<function=rm_rf>{}</function>"), None);
    }

    #[test]
    fn mistral_tool_calls() {
        assert_eq!(
            form(
                "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"
            ),
            Some(Form::MistralTag)
        );
        assert_eq!(
            form("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"),
            Some(Form::MistralTag)
        );
        assert_eq!(form("[TOOL_CALLS]other[ARGS]{}"), None);
    }

    #[test]
    fn python_call_syntax_as_bfcl_prompts_ask_for_it() {
        assert_eq!(
            form("[get_weather(city='Paris', unit=\"c\"), read_skill(name='Refunds')]"),
            Some(Form::PythonCall)
        );
        assert_eq!(
            form("get_weather(city=\"Paris, France\")"),
            Some(Form::PythonCall)
        );
        assert_eq!(
            form("```python\nget_weather(city='Paris')\n```"),
            Some(Form::PythonCall)
        );
        assert_eq!(form("read_skill()"), Some(Form::PythonCall));
        // One name not offered, positional arguments, or prose around it: not a call.
        assert_eq!(form("[get_weather(city='Paris'), launch(x=1)]"), None);
        assert_eq!(form("get_weather('Paris')"), None);
        assert_eq!(
            form("You could call get_weather(city='Paris') yourself."),
            None
        );
    }

    #[test]
    fn bare_json() {
        assert_eq!(
            form("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
            Some(Form::Json)
        );
        assert_eq!(
            form("```json\n{\"function\": {\"name\": \"read_skill\", \"arguments\": \"{}\"}}\n```"),
            Some(Form::Json)
        );
        assert_eq!(
            form("[{\"name\": \"get_weather\"}, {\"name\": \"mcp\"}]"),
            Some(Form::Json)
        );
        assert_eq!(form("{\"name\": \"something_else\"}"), None);
        assert_eq!(form("{\"city\": \"Paris\"}"), None);
    }

    #[test]
    fn prose_that_mentions_a_tool_is_not_a_call() {
        for text in [
            "The order total is 84.50.",
            "I used get_weather earlier: it is sunny in Paris.",
            "The `read_skill` tool loads an SOP; the mcp tool reaches the servers.",
            "To see history, run git log (the mcp-git__git_log tool does the same).",
            "Here is the code you asked for:\n```python\nprint(get_weather(city='Paris'))\n```",
            "get_weather",
            "mcp",
            "",
        ] {
            assert_eq!(form(text), None, "{text:?}");
        }
    }
}
