//! The Prometheus text exposition format (0.0.4, and the OpenMetrics text
//! that is close to it): `# HELP`, `# TYPE`, samples with escaped label
//! values, optional timestamps, `+Inf`/`-Inf`/`NaN`, `# EOF`.

use std::collections::HashMap;

/// A metric family's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Cumulative.
    Counter,
    /// A level.
    Gauge,
    /// Buckets, count and sum.
    Histogram,
    /// Quantiles, count and sum.
    Summary,
    /// No `# TYPE` line, or `untyped`/`unknown`.
    Untyped,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSample {
    /// The sample's metric name (`node_cpu_seconds_total`, `x_bucket`).
    pub name: String,
    /// Its labels, in the order written.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
    /// Its timestamp in ms, if written.
    pub timestamp_ms: Option<i64>,
    /// The type of its family.
    pub kind: MetricType,
}

impl ParsedSample {
    /// Whether the sample counts up: a counter, or a histogram's or
    /// summary's `_bucket`/`_count`. Sums and quantiles are levels.
    pub fn is_cumulative(&self) -> bool {
        match self.kind {
            MetricType::Counter => true,
            MetricType::Histogram | MetricType::Summary => {
                self.name.ends_with("_bucket") || self.name.ends_with("_count")
            }
            MetricType::Gauge | MetricType::Untyped => false,
        }
    }
}

/// A line that is not exposition text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// The most samples taken from one scrape: a node exporter gives a few
/// thousand, a busy DCGM exporter tens of thousands; more is a target gone
/// wrong, refused before it becomes memory.
pub const MAX_SAMPLES: usize = 200_000;

/// The most labels on one sample.
const MAX_LABELS: usize = 64;

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

/// The family a sample belongs to: itself if typed, else its name without
/// a suffix that OpenMetrics and histograms add.
fn family_type(types: &HashMap<String, MetricType>, name: &str) -> MetricType {
    if let Some(t) = types.get(name) {
        return *t;
    }
    for suffix in ["_total", "_bucket", "_count", "_sum", "_created", "_info"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if let Some(t) = types.get(base) {
                return *t;
            }
        }
    }
    MetricType::Untyped
}

/// Parses a whole exposition. Any malformed line fails the whole scrape (as
/// Prometheus does), naming the line.
pub fn parse(text: &str) -> Result<Vec<ParsedSample>, ParseError> {
    let mut types: HashMap<String, MetricType> = HashMap::new();
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let err = |what: String| ParseError { line: line_no, what };
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim_start();
            if comment == "EOF" {
                break;
            }
            let mut words = comment.splitn(3, char::is_whitespace);
            if words.next() == Some("TYPE") {
                let name = words.next().ok_or_else(|| err("TYPE without a metric name".into()))?;
                let kind = match words.next().map(str::trim) {
                    Some("counter") => MetricType::Counter,
                    Some("gauge") => MetricType::Gauge,
                    Some("histogram") | Some("gaugehistogram") => MetricType::Histogram,
                    Some("summary") => MetricType::Summary,
                    Some("untyped") | Some("unknown") | Some("info") | Some("stateset") => MetricType::Untyped,
                    other => return Err(err(format!("TYPE {name}: unknown type {other:?}"))),
                };
                types.insert(name.to_string(), kind);
            }
            // HELP and other comments carry nothing the engine uses.
            continue;
        }
        if out.len() >= MAX_SAMPLES {
            return Err(err(format!("more than {MAX_SAMPLES} samples")));
        }
        let mut sample = parse_sample(line).map_err(err)?;
        sample.kind = family_type(&types, &sample.name);
        out.push(sample);
    }
    Ok(out)
}

fn parse_sample(line: &str) -> Result<ParsedSample, String> {
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    if !name.starts_with(is_name_start) {
        return Err(format!("not a sample: {:?}", truncate(line)));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = parse_labels(after, &mut labels)?;
    }
    let mut fields = rest.split_whitespace();
    let value_text = fields.next().ok_or_else(|| format!("{name}: no value"))?;
    let value = parse_value(value_text).ok_or_else(|| format!("{name}: {value_text:?} is not a number"))?;
    let timestamp_ms = match fields.next() {
        None => None,
        // OpenMetrics `# {exemplar}` after the value: ignored.
        Some("#") => None,
        Some(t) => Some(
            t.parse::<i64>()
                .or_else(|_| t.parse::<f64>().map(|s| (s * 1000.0) as i64))
                .map_err(|_| format!("{name}: {t:?} is not a timestamp"))?,
        ),
    };
    if let Some(extra) = fields.next() {
        if extra != "#" {
            return Err(format!("{name}: unexpected {extra:?} after the timestamp"));
        }
    }
    Ok(ParsedSample { name: name.to_string(), labels, value, timestamp_ms, kind: MetricType::Untyped })
}

/// Parses `a="x",b="y"}` (after the `{`), returning what follows the `}`.
fn parse_labels<'a>(mut s: &'a str, labels: &mut Vec<(String, String)>) -> Result<&'a str, String> {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok(rest);
        }
        if labels.len() >= MAX_LABELS {
            return Err(format!("more than {MAX_LABELS} labels"));
        }
        let end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
        let name = &s[..end];
        if name.is_empty() || !name.starts_with(is_name_start) {
            return Err(format!("bad label name at {:?}", truncate(s)));
        }
        s = s[end..].trim_start();
        s = s.strip_prefix('=').ok_or_else(|| format!("label {name}: no '='"))?.trim_start();
        s = s.strip_prefix('"').ok_or_else(|| format!("label {name}: value not quoted"))?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err(format!("label {name}: unterminated value")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, c)) => {
                        value.push('\\');
                        value.push(c);
                    }
                    None => return Err(format!("label {name}: unterminated value")),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((name.to_string(), value));
        s = s[close + 1..].trim_start();
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        } else if !s.starts_with('}') {
            return Err(format!("label {name}: expected ',' or '}}'"));
        }
    }
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 12345.67
node_cpu_seconds_total{cpu="0",mode="user",} 89.5 1700000000000
# TYPE temp gauge
temp{path="C:\\DIR\\",msg="say \"hi\"\nbye"} -3.5e1
temp{x="a"} NaN
# TYPE http_latency histogram
http_latency_bucket{le="+Inf"} 10
http_latency_sum 1.25
http_latency_count 10
# TYPE ops counter
ops_total 7
untyped_thing +Inf
# EOF
after_eof 1
"#;

    #[test]
    fn parses_types_labels_escapes_timestamps_and_specials() {
        let s = parse(TEXT).unwrap();
        assert_eq!(s.len(), 9, "{s:#?}");
        assert_eq!(s[0].name, "node_cpu_seconds_total");
        assert_eq!(s[0].labels, vec![("cpu".into(), "0".into()), ("mode".into(), "idle".into())]);
        assert_eq!(s[0].kind, MetricType::Counter);
        assert!(s[0].is_cumulative());
        assert_eq!(s[1].timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(s[2].labels[0].1, "C:\\DIR\\");
        assert_eq!(s[2].labels[1].1, "say \"hi\"\nbye");
        assert_eq!(s[2].value, -35.0);
        assert_eq!(s[2].kind, MetricType::Gauge);
        assert!(s[3].value.is_nan());
        assert_eq!((s[4].kind, s[4].value, s[4].is_cumulative()), (MetricType::Histogram, 10.0, true));
        assert!(!s[5].is_cumulative(), "a histogram's sum is a level");
        assert!(s[6].is_cumulative());
        assert_eq!((s[7].name.as_str(), s[7].kind), ("ops_total", MetricType::Counter), "OpenMetrics family name");
        assert_eq!((s[8].kind, s[8].value), (MetricType::Untyped, f64::INFINITY));
    }

    #[test]
    fn garbage_names_its_line() {
        assert_eq!(parse("ok 1\n<html>").unwrap_err().line, 2);
        assert!(parse("m{a=\"x} 1").unwrap_err().what.contains("unterminated"));
        assert!(parse("m{a=x} 1").unwrap_err().what.contains("not quoted"));
        assert!(parse("m 1 2 3").is_err());
        assert!(parse("m abc").unwrap_err().what.contains("not a number"));
        assert!(parse("# TYPE m sideways").is_err());
    }
}
