//! BFCL's ground-truth call strings (`mv(source='a.pdf', destination='temp')`) read
//! as a function name, its positional arguments and its keyword arguments, each a
//! JSON value: Python literals only — strings (single or double quotes, with
//! backslash escapes), integers, floats (an integral float stays a float:
//! `20000.0`), `True`/`False`/`None`, lists, tuples (as lists) and dicts with string
//! keys — which is all BFCL's multi-turn answers hold.

use serde_json::{Map, Number, Value};

/// One call: name, positional arguments, keyword arguments in order.
#[derive(Debug, Clone, PartialEq)]
pub struct PyCall {
    pub name: String,
    pub positional: Vec<Value>,
    pub keywords: Vec<(String, Value)>,
}

/// Parses one call expression; the error says where and what.
pub fn parse_call(text: &str) -> Result<PyCall, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        text,
    };
    p.ws();
    let name = p.ident().ok_or_else(|| p.err("a function name"))?;
    p.ws();
    p.eat(b'(').ok_or_else(|| p.err("`(`"))?;
    let mut positional = Vec::new();
    let mut keywords: Vec<(String, Value)> = Vec::new();
    loop {
        p.ws();
        if p.eat(b')').is_some() {
            break;
        }
        // A keyword argument is an identifier followed by `=` (not `==`).
        let save = p.i;
        let kw = p.ident().and_then(|k| {
            p.ws();
            (p.peek() == Some(b'=') && p.s.get(p.i + 1) != Some(&b'=')).then(|| {
                p.i += 1;
                k
            })
        });
        if kw.is_none() {
            p.i = save;
        }
        let v = p.value()?;
        match kw {
            Some(k) => {
                if keywords.iter().any(|(n, _)| *n == k) {
                    return Err(format!("`{text}`: the keyword `{k}` is given twice"));
                }
                keywords.push((k, v));
            }
            None if keywords.is_empty() => positional.push(v),
            None => {
                return Err(format!(
                    "`{text}`: a positional argument after a keyword one"
                ))
            }
        }
        p.ws();
        if p.eat(b',').is_some() {
            continue;
        }
        p.ws();
        p.eat(b')').ok_or_else(|| p.err("`,` or `)`"))?;
        break;
    }
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("the end of the call"));
    }
    Ok(PyCall {
        name,
        positional,
        keywords,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn err(&self, wanted: &str) -> String {
        format!("`{}`: expected {wanted} at offset {}", self.text, self.i)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.i;
        if !self
            .peek()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        {
            return None;
        }
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            self.i += 1;
        }
        Some(self.text[start..self.i].to_string())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(Value::String),
            Some(b'[') => self.seq(b'[', b']'),
            Some(b'(') => self.seq(b'(', b')'),
            Some(b'{') => self.dict(),
            Some(b'-' | b'+' | b'0'..=b'9' | b'.') => self.number(),
            Some(_) => match self.ident().as_deref() {
                Some("True") => Ok(Value::Bool(true)),
                Some("False") => Ok(Value::Bool(false)),
                Some("None") => Ok(Value::Null),
                _ => Err(self.err("a literal (string, number, True, False, None, list, dict)")),
            },
            None => Err(self.err("a value")),
        }
    }

    fn seq(&mut self, open: u8, close: u8) -> Result<Value, String> {
        self.eat(open);
        let mut out = Vec::new();
        loop {
            self.ws();
            if self.eat(close).is_some() {
                return Ok(Value::Array(out));
            }
            out.push(self.value()?);
            self.ws();
            if self.eat(b',').is_none() {
                self.ws();
                self.eat(close)
                    .ok_or_else(|| self.err("`,` or the end of the list"))?;
                return Ok(Value::Array(out));
            }
        }
    }

    fn dict(&mut self) -> Result<Value, String> {
        self.eat(b'{');
        let mut out = Map::new();
        loop {
            self.ws();
            if self.eat(b'}').is_some() {
                return Ok(Value::Object(out));
            }
            let k = match self.value()? {
                Value::String(k) => k,
                _ => return Err(self.err("a string key")),
            };
            self.ws();
            self.eat(b':').ok_or_else(|| self.err("`:`"))?;
            let v = self.value()?;
            out.insert(k, v);
            self.ws();
            if self.eat(b',').is_none() {
                self.ws();
                self.eat(b'}').ok_or_else(|| self.err("`,` or `}`"))?;
                return Ok(Value::Object(out));
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let q = self.peek().expect("a quote");
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(b) = self.peek() else {
                return Err(self.err("the end of the string"));
            };
            if b == q {
                self.i += 1;
                return Ok(out);
            }
            if b == b'\\' {
                self.i += 1;
                let e = self.peek().ok_or_else(|| self.err("an escape"))?;
                self.i += 1;
                let hex = |n: usize, p: &mut Self| -> Result<char, String> {
                    let c = p
                        .text
                        .get(p.i..p.i + n)
                        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32)
                        .ok_or_else(|| p.err(&format!("{n} hex digits")))?;
                    p.i += n;
                    Ok(c)
                };
                match e {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'a' => out.push('\u{7}'),
                    b'b' => out.push('\u{8}'),
                    b'f' => out.push('\u{c}'),
                    b'v' => out.push('\u{b}'),
                    // A backslash before a newline continues the line.
                    b'\n' => {}
                    b'\\' | b'\'' | b'"' => out.push(e as char),
                    b'x' => out.push(hex(2, self)?),
                    b'u' => out.push(hex(4, self)?),
                    b'U' => out.push(hex(8, self)?),
                    b'0'..=b'7' => {
                        // Up to three octal digits, the first one read already.
                        let mut v = u32::from(e - b'0');
                        for _ in 0..2 {
                            match self.peek() {
                                Some(d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    self.i += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push(char::from_u32(v).ok_or_else(|| self.err("an octal escape"))?);
                    }
                    b'N' => return Err(self.err("a string without named escapes")),
                    // Python keeps an unknown escape as written: the backslash and the
                    // whole character after it.
                    _ => {
                        self.i -= 1;
                        let c = self.text[self.i..].chars().next().expect("in bounds");
                        out.push('\\');
                        out.push(c);
                        self.i += c.len_utf8();
                    }
                }
                continue;
            }
            // A whole UTF-8 character.
            let c = self.text[self.i..].chars().next().expect("in bounds");
            out.push(c);
            self.i += c.len_utf8();
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.i += 1;
        }
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'_'))
            || (matches!(self.peek(), Some(b'-' | b'+'))
                && matches!(self.s.get(self.i - 1), Some(b'e' | b'E')))
        {
            self.i += 1;
        }
        let t: String = self.text[start..self.i]
            .chars()
            .filter(|c| *c != '_')
            .collect();
        let float = t.contains(['.', 'e', 'E']);
        if !float {
            if let Ok(n) = t.parse::<i64>() {
                return Ok(Value::Number(n.into()));
            }
        }
        t.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| self.err("a number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_bfcl_call_strings() {
        let c = parse_call("mv(source='final_report.pdf', destination='temp')").unwrap();
        assert_eq!(c.name, "mv");
        assert!(c.positional.is_empty());
        assert_eq!(
            c.keywords,
            [
                ("source".to_string(), json!("final_report.pdf")),
                ("destination".to_string(), json!("temp"))
            ]
        );
        let c = parse_call("sort('final_report.pdf')").unwrap();
        assert_eq!(c.positional, [json!("final_report.pdf")]);
        let c = parse_call("ls(a=True)").unwrap();
        assert_eq!(c.keywords[0].1, json!(true));
        let c = parse_call("pwd()").unwrap();
        assert!(c.positional.is_empty() && c.keywords.is_empty());
        let c = parse_call(
            "edit_ticket(ticket_id=2, updates={'status':'Urgent', 'priority':5}, x=[1.5, 2], y=20000.0, z=None)",
        )
        .unwrap();
        assert_eq!(c.keywords[1].1, json!({"status": "Urgent", "priority": 5}));
        assert_eq!(c.keywords[2].1, json!([1.5, 2]));
        // An integral float stays a float, as Python passes it on.
        assert_eq!(c.keywords[3].1.to_string(), "20000.0");
        assert_eq!(c.keywords[4].1, Value::Null);
        let c = parse_call(r#"echo(content="It's \"done\"\n", file_name='a\'b.txt')"#).unwrap();
        assert_eq!(c.keywords[0].1, json!("It's \"done\"\n"));
        assert_eq!(c.keywords[1].1, json!("a'b.txt"));
        let c = parse_call(r"f(a='\x41\101\u00e9\q\é')").unwrap();
        assert_eq!(c.keywords[0].1, json!("AAé\\q\\é"));
        assert!(parse_call(r"f(a='\u+041')").is_err());
        let c = parse_call("f(x=-3, y=1e3, t=(1, 2))").unwrap();
        assert_eq!(c.keywords[0].1, json!(-3));
        assert_eq!(c.keywords[2].1, json!([1, 2]));
    }

    #[test]
    fn refuses_what_is_not_a_literal_call() {
        for bad in [
            "mv(",
            "mv(a=b)",
            "mv(a=1, 2)",
            "mv(a=1, a=2)",
            "1(x)",
            "f(x=1) g()",
            "f(x='open)",
        ] {
            assert!(parse_call(bad).is_err(), "{bad}");
        }
    }
}
