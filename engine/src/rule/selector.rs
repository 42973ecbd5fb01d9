//! Series selectors in PromQL's syntax: `metric{label="v", other=~"re"}`.
//!
//! SREs already write these every day; the matchers are `=`, `!=`, `=~` and
//! `!~`, and regexes are anchored, as in Prometheus.

use std::fmt;

use regex::Regex;

use crate::labels::Labels;

/// How a label is matched.
#[derive(Debug, Clone)]
pub enum MatchOp {
    /// `=`: equal (an empty value also matches a missing label).
    Eq(String),
    /// `!=`: not equal.
    Ne(String),
    /// `=~`: matches the anchored regex.
    Re(Regex),
    /// `!~`: does not match the anchored regex.
    NotRe(Regex),
}

/// One label matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// Label name.
    pub label: String,
    /// How it must match.
    pub op: MatchOp,
}

impl Matcher {
    fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(&self.label).unwrap_or("");
        match &self.op {
            MatchOp::Eq(v) => value == v,
            MatchOp::Ne(v) => value != v,
            MatchOp::Re(re) => re.is_match(value),
            MatchOp::NotRe(re) => !re.is_match(value),
        }
    }
}

/// A metric name with label matchers.
#[derive(Debug, Clone)]
pub struct Selector {
    /// The metric name.
    pub metric: String,
    /// Every matcher must hold.
    pub matchers: Vec<Matcher>,
    text: String,
}

/// A series selector is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

impl Selector {
    /// Whether a series with these labels is selected (the metric name is
    /// compared by the caller, which indexes selectors by metric).
    pub fn matches(&self, labels: &Labels) -> bool {
        self.matchers.iter().all(|m| m.matches(labels))
    }

    /// Parses `metric` or `metric{matcher, …}`.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        Self::parse_text(text).map_err(SelectorError)
    }

    fn parse_text(text: &str) -> Result<Selector, String> {
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        p.ws();
        let metric = p.ident().ok_or_else(|| format!("selector {text:?}: expected a metric name"))?;
        let mut matchers = Vec::new();
        p.ws();
        if p.eat(b'{') {
            loop {
                p.ws();
                if p.eat(b'}') {
                    break;
                }
                let label =
                    p.ident().ok_or_else(|| format!("selector {text:?}: expected a label name at offset {}", p.i))?;
                p.ws();
                let op = if p.eat_str("=~") {
                    "=~"
                } else if p.eat_str("!~") {
                    "!~"
                } else if p.eat_str("!=") {
                    "!="
                } else if p.eat(b'=') {
                    "="
                } else {
                    return Err(format!("selector {text:?}: expected =, !=, =~ or !~ after {label:?}"));
                };
                p.ws();
                let value =
                    p.quoted().ok_or_else(|| format!("selector {text:?}: expected a quoted value for {label:?}"))?;
                let regex = |v: &str| {
                    Regex::new(&format!("^(?:{v})$"))
                        .map_err(|e| format!("selector {text:?}: bad regex for {label:?}: {e}"))
                };
                let op = match op {
                    "=" => MatchOp::Eq(value),
                    "!=" => MatchOp::Ne(value),
                    "=~" => MatchOp::Re(regex(&value)?),
                    _ => MatchOp::NotRe(regex(&value)?),
                };
                matchers.push(Matcher { label, op });
                p.ws();
                if p.eat(b',') {
                    continue;
                }
                p.ws();
                if p.eat(b'}') {
                    break;
                }
                return Err(format!("selector {text:?}: expected ',' or '}}' at offset {}", p.i));
            }
        }
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("selector {text:?}: unexpected text at offset {}", p.i));
        }
        Ok(Selector { metric, matchers, text: text.trim().to_string() })
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, t: &str) -> bool {
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.i;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            let ok = c.is_ascii_alphabetic() || c == b'_' || c == b':' || (self.i > start && c.is_ascii_digit());
            if !ok {
                break;
            }
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn quoted(&mut self) -> Option<String> {
        if !self.eat(b'"') {
            return None;
        }
        let mut out = Vec::new();
        while self.i < self.s.len() {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' if self.i < self.s.len() => {
                    out.push(self.s[self.i]);
                    self.i += 1;
                }
                _ => out.push(c),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_four_matchers() {
        let s = Selector::parse(r#"gpu_xid{xid=~"48|79", node!="n9", gpu="0", job!~"test-.*"}"#).unwrap();
        assert_eq!(s.metric, "gpu_xid");
        assert_eq!(s.matchers.len(), 4);
        let hit = Labels::from_pairs([("xid", "79"), ("node", "n1"), ("gpu", "0"), ("job", "train")]);
        assert!(s.matches(&hit));
        let miss = Labels::from_pairs([("xid", "790"), ("node", "n1"), ("gpu", "0")]);
        assert!(!s.matches(&miss), "regexes are anchored");
    }

    #[test]
    fn a_bare_metric_selects_everything_of_it() {
        let s = Selector::parse("link_carrier_down_count").unwrap();
        assert!(s.matchers.is_empty());
        assert!(s.matches(&Labels::default()));
    }

    #[test]
    fn errors_say_what_was_expected() {
        assert!(Selector::parse(r#"m{a=}"#).unwrap_err().to_string().contains("expected a quoted value"));
        assert!(Selector::parse(r#"m{a="1" b="2"}"#).unwrap_err().to_string().contains("expected ',' or '}'"));
        assert!(Selector::parse(r#"m{a=~"("}"#).unwrap_err().to_string().contains("bad regex"));
        assert!(Selector::parse("{a=\"1\"}").unwrap_err().to_string().contains("expected a metric name"));
    }
}
