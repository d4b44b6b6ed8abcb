//! Text helpers every report shares: the one escape for XML and HTML,
//! percentages, and how an expected step reads.

use serde_json::Value;

/// Escapes text for XML content (and HTML). Line breaks and tabs stay as they are;
/// characters XML does not allow (other C0 controls, U+FFFE, U+FFFF) are dropped.
pub fn esc(s: &str) -> String {
    escape(s, false)
}

/// Escapes text for an XML attribute value: as [`esc`], and `\n`, `\r`, `\t` become
/// character references, which attribute-value normalisation leaves intact.
pub fn esc_attr(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, attr: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' if attr => o.push_str("&#10;"),
            '\r' if attr => o.push_str("&#13;"),
            '\t' if attr => o.push_str("&#9;"),
            '\u{FFFE}' | '\u{FFFF}' => {}
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => o.push(c),
        }
    }
    o
}

/// How an expected step reads (failure messages, the drill-down): its address, or
/// its alternatives joined by `|`.
pub fn step_text(x: &Value) -> String {
    let addr = |v: &Value| {
        v.get("address")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Some(alts) = x.get("any_of").and_then(Value::as_array) {
        alts.iter().map(addr).collect::<Vec<_>>().join("|")
    } else if let Some(call) = x.get("call") {
        addr(call)
    } else {
        addr(x)
    }
}

/// `12.3%`.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_keep_line_breaks_as_references() {
        assert_eq!(esc_attr("a\nb\r\tc\"&"), "a&#10;b&#13;&#9;c&quot;&amp;");
        assert_eq!(esc("a\nb\tc"), "a\nb\tc");
        assert_eq!(esc("x\u{FFFE}y\u{FFFF}z\u{1}"), "xyz");
        assert_eq!(esc_attr("\u{FFFF}"), "");
    }
}
