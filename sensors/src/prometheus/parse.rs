//! The Prometheus text exposition format (0.0.4, and the OpenMetrics text
//! that is close to it): `# HELP`, `# TYPE`, samples with escaped label
//! values, optional timestamps, `+Inf`/`-Inf`/`NaN`, `# EOF`.
//!
//! [`Reader`] walks a page without copying it: each [`SampleRef`] borrows
//! its name, its series text and its labels from the page, and label values
//! are unescaped only when asked for ([`RawLabels::iter`]). A caller that
//! knows which series comes next (exporters print their series in the same
//! order on every scrape) names it ([`Expected`]): when the line starts with
//! exactly that series text, its labels are not scanned again. [`parse`]
//! gives owned [`ParsedSample`]s, for tests and tools.

use std::borrow::Cow;
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

/// Whether a sample of `name` in a family of type `kind` counts up: a
/// counter, or a histogram's or summary's `_bucket`/`_count`. Sums and
/// quantiles are levels.
fn cumulative(kind: MetricType, name: &str) -> bool {
    match kind {
        MetricType::Counter => true,
        MetricType::Histogram | MetricType::Summary => name.ends_with("_bucket") || name.ends_with("_count"),
        MetricType::Gauge | MetricType::Untyped => false,
    }
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
        cumulative(self.kind, &self.name)
    }
}

/// One sample line, borrowed from the page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleRef<'a> {
    /// The series as written: the name and, if any, the label block with
    /// its braces (`m{a="x",b="y"}`). Two lines with the same series text
    /// are the same series.
    pub series: &'a str,
    /// The metric name (`node_cpu_seconds_total`, `x_bucket`).
    pub name: &'a str,
    /// The labels, as written.
    pub labels: RawLabels<'a>,
    /// The value.
    pub value: f64,
    /// The timestamp in ms, if written.
    pub timestamp_ms: Option<i64>,
    /// The type of its family.
    pub kind: MetricType,
    /// Whether the line's series is the one the caller said to expect.
    pub expected: bool,
}

impl SampleRef<'_> {
    /// Whether the sample counts up (see [`ParsedSample::is_cumulative`]).
    pub fn is_cumulative(&self) -> bool {
        cumulative(self.kind, self.name)
    }

    /// The owned form.
    pub fn to_owned(&self) -> ParsedSample {
        ParsedSample {
            name: self.name.to_string(),
            labels: self.labels.iter().map(|(k, v)| (k.to_string(), v.into_owned())).collect(),
            value: self.value,
            timestamp_ms: self.timestamp_ms,
            kind: self.kind,
        }
    }
}

/// The inside of a label block (between the braces) as written, checked
/// when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawLabels<'a>(&'a str);

impl<'a> RawLabels<'a> {
    /// The labels of a series text as [`SampleRef::series`] gives it
    /// (`m{a="x"}`), whose name is `name_len` bytes long; `None` if it is
    /// not one.
    pub fn of_series(series: &'a str, name_len: usize) -> Option<RawLabels<'a>> {
        match series.get(name_len..)? {
            "" => Some(RawLabels("")),
            block => {
                let after = block.strip_prefix('{')?;
                // Checked again: cheap next to a registration, and a caller
                // cannot hand in text that was never read.
                let close = check_labels(after).ok()?;
                (close + 1 == after.len()).then(|| RawLabels(&after[..close]))
            }
        }
    }

    /// The labels in the order written, values unescaped (`\\`, `\"`,
    /// `\n`); borrowed when a value has no escape.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, Cow<'a, str>)> {
        let mut rest = self.0;
        std::iter::from_fn(move || match next_label(rest) {
            Ok(Some((name, raw, after))) => {
                rest = after;
                Some((name, unescape(raw)))
            }
            _ => None,
        })
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

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

/// Powers of ten that are exact in an `f64`.
const POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/// A plain decimal (`-12`, `3.25`) of at most 15 digits: the digits make an
/// exact integer below 2^53 and the power of ten is exact, so one division
/// is correctly rounded, the same `f64` as `str::parse` gives. `None` for
/// anything else (exponents, specials, more digits, garbage).
fn plain_decimal(text: &[u8]) -> Option<f64> {
    let (negative, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let mut mantissa: u64 = 0;
    let mut count = 0usize;
    let mut point: Option<usize> = None;
    for (i, &b) in digits.iter().enumerate() {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(b - b'0');
                count += 1;
            }
            b'.' if point.is_none() => point = Some(i),
            _ => return None,
        }
    }
    if count == 0 || count > 15 {
        return None;
    }
    let scale = point.map_or(0, |p| digits.len() - 1 - p);
    let value = mantissa as f64 / POW10[scale];
    Some(if negative { -value } else { value })
}

/// The plain decimal (see [`plain_decimal`]) at `bytes[i..]`, ended by a
/// blank, the end of the line or of the page: its value and where it ends.
/// `None` for anything else, left to the general path.
fn number_at(bytes: &[u8], mut i: usize) -> Option<(f64, usize)> {
    let negative = match bytes.get(i)? {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut mantissa: u64 = 0;
    let mut count = 0usize;
    let mut scale: Option<usize> = None;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
                count += 1;
                if let Some(s) = scale.as_mut() {
                    *s += 1;
                }
            }
            b'.' if scale.is_none() => scale = Some(0),
            b' ' | b'\t' | b'\r' | b'\n' => break,
            _ => return None,
        }
        i += 1;
    }
    if count == 0 || count > 15 {
        return None;
    }
    let value = mantissa as f64 / POW10[scale.unwrap_or(0)];
    Some((if negative { -value } else { value }, i))
}

fn parse_value(text: &str) -> Option<f64> {
    if let Some(v) = plain_decimal(text.as_bytes()) {
        return Some(v);
    }
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

/// The family a sample belongs to: itself if typed, else its name without
/// a suffix that OpenMetrics and histograms add.
fn family_type(types: &HashMap<&str, MetricType>, name: &str) -> MetricType {
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
    let mut reader = Reader::new(text);
    let mut out = Vec::new();
    while let Some(sample) = reader.next_sample(None) {
        out.push(sample?.to_owned());
    }
    Ok(out)
}

/// The series a caller expects on the next sample line: its series text
/// (as [`SampleRef::series`] gave it on an earlier read) and the length of
/// its name.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'k> {
    /// The series text.
    pub series: &'k [u8],
    /// The length of its metric name, in bytes.
    pub name_len: usize,
}

/// Reads a page's samples one at a time, borrowing from it.
#[derive(Debug)]
pub struct Reader<'a> {
    text: &'a str,
    /// Where the next line starts.
    pos: usize,
    /// The number of the last line read.
    line: usize,
    types: HashMap<&'a str, MetricType>,
    /// The last sample's name and its family's type: consecutive samples
    /// are mostly of one metric.
    family: Option<(&'a str, MetricType)>,
    samples: usize,
    done: bool,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a str) -> Reader<'a> {
        Reader { text, pos: 0, line: 0, types: HashMap::new(), family: None, samples: 0, done: false }
    }

    /// The next sample, `None` at the end of the page (or `# EOF`). After an
    /// error the caller stops: the page is not exposition text. `expected`
    /// (if any) is checked against the line first; [`SampleRef::expected`]
    /// says whether the line was that series.
    pub fn next_sample(&mut self, expected: Option<Expected<'_>>) -> Option<Result<SampleRef<'a>, ParseError>> {
        loop {
            if self.done || self.pos >= self.text.len() {
                return None;
            }
            if let Some(e) = expected {
                if let Some(sample) = self.read_expected(e) {
                    return Some(sample);
                }
            }
            let text = self.text;
            let rest = &text[self.pos..];
            let (raw, next) = match rest.find('\n') {
                Some(i) => (&rest[..i], self.pos + i + 1),
                None => (rest, text.len()),
            };
            self.pos = next;
            self.line += 1;
            let line_no = self.line;
            let err = |what: String| ParseError { line: line_no, what };
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                match self.comment(comment.trim_start()) {
                    Ok(true) => continue,
                    Ok(false) => {
                        self.done = true;
                        return None;
                    }
                    Err(what) => return Some(Err(err(what))),
                }
            }
            if self.samples >= MAX_SAMPLES {
                return Some(Err(err(format!("more than {MAX_SAMPLES} samples"))));
            }
            self.samples += 1;
            let mut sample = match parse_sample(line) {
                Ok(s) => s,
                Err(what) => return Some(Err(err(what))),
            };
            sample.kind = self.kind_of(sample.name);
            sample.expected = expected.is_some_and(|e| e.series == sample.series.as_bytes());
            return Some(Ok(sample));
        }
    }

    /// A comment line (after the `#`): `Ok(false)` at `# EOF`.
    fn comment(&mut self, comment: &'a str) -> Result<bool, String> {
        if comment == "EOF" {
            return Ok(false);
        }
        let mut words = comment.splitn(3, char::is_whitespace);
        if words.next() == Some("TYPE") {
            let name = words.next().ok_or_else(|| "TYPE without a metric name".to_string())?;
            let kind = match words.next().map(str::trim) {
                Some("counter") => MetricType::Counter,
                Some("gauge") => MetricType::Gauge,
                Some("histogram") | Some("gaugehistogram") => MetricType::Histogram,
                Some("summary") => MetricType::Summary,
                Some("untyped") | Some("unknown") | Some("info") | Some("stateset") => MetricType::Untyped,
                other => return Err(format!("TYPE {name}: unknown type {other:?}")),
            };
            self.types.insert(name, kind);
            self.family = None;
        }
        // HELP and other comments carry nothing the engine uses.
        Ok(true)
    }

    fn kind_of(&mut self, name: &'a str) -> MetricType {
        match self.family {
            Some((last, kind)) if last == name => kind,
            _ => {
                let kind = family_type(&self.types, name);
                self.family = Some((name, kind));
                kind
            }
        }
    }

    /// The line at `pos` if it is the series `e` followed by blanks, a
    /// plain value, perhaps an integer timestamp, and the end of the line.
    /// `None` leaves the line to the general path, which reads anything
    /// else (or reports it).
    fn read_expected(&mut self, e: Expected<'_>) -> Option<Result<SampleRef<'a>, ParseError>> {
        let text = self.text;
        let bytes = text.as_bytes();
        let start = self.pos;
        let end = start + e.series.len();
        if bytes.get(start..end)? != e.series || !matches!(bytes.get(end)?, b' ' | b'\t') {
            return None;
        }
        let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\r');
        let mut i = end;
        while i < bytes.len() && blank(bytes[i]) {
            i += 1;
        }
        let (value, after) = number_at(bytes, i)?;
        i = after;
        while i < bytes.len() && blank(bytes[i]) {
            i += 1;
        }
        let mut timestamp_ms = None;
        if i < bytes.len() && bytes[i] != b'\n' {
            let from = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i == from || i - from > 18 {
                return None;
            }
            timestamp_ms = Some(bytes[from..i].iter().fold(0i64, |t, d| t * 10 + i64::from(d - b'0')));
            while i < bytes.len() && blank(bytes[i]) {
                i += 1;
            }
            if i < bytes.len() && bytes[i] != b'\n' {
                return None;
            }
        }
        if self.samples >= MAX_SAMPLES {
            return None;
        }
        self.samples += 1;
        self.line += 1;
        self.pos = (i + 1).min(bytes.len());
        let series = &text[start..end];
        let name = &series[..e.name_len];
        let labels = if e.name_len == series.len() { "" } else { &series[e.name_len + 1..series.len() - 1] };
        let kind = self.kind_of(name);
        Some(Ok(SampleRef { series, name, labels: RawLabels(labels), value, timestamp_ms, kind, expected: true }))
    }
}

fn parse_sample(line: &str) -> Result<SampleRef<'_>, String> {
    let name_end = line.bytes().position(|b| !is_name_byte(b)).unwrap_or(line.len());
    let name = &line[..name_end];
    if !name.starts_with(is_name_start) {
        return Err(format!("not a sample: {:?}", truncate(line)));
    }
    let mut rest = &line[name_end..];
    let mut labels = RawLabels("");
    let mut series = name;
    if let Some(after) = rest.strip_prefix('{') {
        let close = check_labels(after)?;
        labels = RawLabels(&after[..close]);
        series = &line[..name_end + 1 + close + 1];
        rest = &after[close + 1..];
    }
    let mut fields = rest.split_whitespace();
    let value_text = fields.next().ok_or_else(|| format!("{name}: no value"))?;
    let value = parse_value(value_text).ok_or_else(|| format!("{name}: {value_text:?} is not a number"))?;
    let timestamp_ms = match fields.next() {
        None => None,
        // OpenMetrics `# {exemplar} value [timestamp]` after the value:
        // ignored, like everything after it.
        Some("#") => {
            return Ok(SampleRef {
                series,
                name,
                labels,
                value,
                timestamp_ms: None,
                kind: MetricType::Untyped,
                expected: false,
            })
        }
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
    Ok(SampleRef { series, name, labels, value, timestamp_ms, kind: MetricType::Untyped, expected: false })
}

/// One label at the start of `s` (inside a label block, after `{` or a
/// `,`): its name, its value as written (between the quotes) and what
/// follows it (past a `,`); `None` at the closing `}`.
type Label<'a> = Option<(&'a str, &'a str, &'a str)>;

fn next_label(s: &str) -> Result<Label<'_>, String> {
    let s = s.trim_start();
    if s.is_empty() || s.starts_with('}') {
        return Ok(None);
    }
    let end = s.bytes().position(|b| !is_name_byte(b)).unwrap_or(s.len());
    let name = &s[..end];
    if name.is_empty() || !name.starts_with(is_name_start) {
        return Err(format!("bad label name at {:?}", truncate(s)));
    }
    let s = s[end..].trim_start();
    let s = s.strip_prefix('=').ok_or_else(|| format!("label {name}: no '='"))?.trim_start();
    let s = s.strip_prefix('"').ok_or_else(|| format!("label {name}: value not quoted"))?;
    let bytes = s.as_bytes();
    let mut i = 0;
    let close = loop {
        match bytes[i..].iter().position(|&b| b == b'"' || b == b'\\') {
            None => return Err(format!("label {name}: unterminated value")),
            Some(j) if bytes[i + j] == b'"' => break i + j,
            // A backslash and the character it escapes; a backslash
            // before a multi-byte character escapes its first byte, and
            // the rest are not quotes or backslashes.
            Some(j) if i + j + 1 < bytes.len() => i += j + 2,
            Some(_) => return Err(format!("label {name}: unterminated value")),
        }
    };
    let value = &s[..close];
    let after = s[close + 1..].trim_start();
    let after = if let Some(rest) = after.strip_prefix(',') {
        rest
    } else if after.is_empty() || after.starts_with('}') {
        // The end of the block, or of its inside (`RawLabels`).
        after
    } else {
        return Err(format!("label {name}: expected ',' or '}}'"));
    };
    Ok(Some((name, value, after)))
}

/// Checks the label block `a="x",b="y"}` (after the `{`), returning the
/// offset of its closing `}`.
fn check_labels(block: &str) -> Result<usize, String> {
    let mut rest = block;
    let mut count = 0;
    loop {
        let trimmed = rest.trim_start();
        if let Some(stripped) = trimmed.strip_prefix('}') {
            return Ok(block.len() - stripped.len() - 1);
        }
        if count >= MAX_LABELS {
            return Err(format!("more than {MAX_LABELS} labels"));
        }
        match next_label(rest)? {
            Some((_, _, after)) => rest = after,
            None => return Err("unterminated label block".into()),
        }
        count += 1;
    }
}

/// A label value as written, unescaped: `\n`, `\\` and `\"`; any other
/// escape is kept as written.
fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            value.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => value.push('\n'),
            Some('\\') => value.push('\\'),
            Some('"') => value.push('"'),
            Some(c) => {
                value.push('\\');
                value.push(c);
            }
            None => value.push('\\'),
        }
    }
    Cow::Owned(value)
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

    /// Where `part` lies in `text`, if it is a slice of it.
    fn within(text: &str, part: &str) -> bool {
        let (t, p) = (text.as_ptr() as usize, part.as_ptr() as usize);
        p >= t && p + part.len() <= t + text.len()
    }

    #[test]
    fn samples_borrow_from_the_page_and_unescape_only_escaped_values() {
        let text = "m{a=\"plain\",b=\"x\\\"y\\\\z\\nw\",c=\"\\q\"} 1\n";
        let mut r = Reader::new(text);
        let s = r.next_sample(None).unwrap().unwrap();
        assert!(within(text, s.series) && within(text, s.name));
        assert_eq!(s.series, "m{a=\"plain\",b=\"x\\\"y\\\\z\\nw\",c=\"\\q\"}");
        let labels: Vec<_> = s.labels.iter().collect();
        assert!(matches!(&labels[0].1, Cow::Borrowed(v) if within(text, v) && *v == "plain"), "{labels:?}");
        assert!(within(text, labels[0].0));
        assert!(matches!(&labels[1].1, Cow::Owned(v) if v == "x\"y\\z\nw"), "{labels:?}");
        assert_eq!(labels[2].1, "\\q", "an unknown escape is kept as written");
        assert!(r.next_sample(None).is_none());
        // A series text read from a page gives its labels back.
        let again = RawLabels::of_series(s.series, 1).unwrap();
        assert_eq!(again.iter().collect::<Vec<_>>(), labels);
        assert_eq!(RawLabels::of_series("m", 1).unwrap().iter().count(), 0);
        assert!(RawLabels::of_series("m{a=x}", 1).is_none());
    }

    /// Reads `text` twice, the second time expecting each series of the
    /// first read in turn: the samples are the same, and the lines in the
    /// plain form are the expected ones.
    fn read_twice(text: &str) -> (Vec<ParsedSample>, Vec<bool>) {
        let mut first = Vec::new();
        let mut r = Reader::new(text);
        while let Some(s) = r.next_sample(None) {
            let s = s.unwrap();
            assert!(!s.expected);
            first.push((s.series.to_string(), s.name.len(), s.to_owned()));
        }
        let mut r = Reader::new(text);
        let mut flags = Vec::new();
        for (series, name_len, want) in &first {
            let e = Expected { series: series.as_bytes(), name_len: *name_len };
            let got = r.next_sample(Some(e)).unwrap().unwrap();
            assert_eq!(got.series, series);
            let owned = got.to_owned();
            // NaN is not equal to itself.
            assert_eq!(format!("{owned:?}"), format!("{want:?}"));
            flags.push(got.expected);
        }
        assert!(r.next_sample(None).is_none());
        (first.into_iter().map(|f| f.2).collect(), flags)
    }

    #[test]
    fn the_expected_series_reads_as_the_general_path_does() {
        let (samples, flags) = read_twice(TEXT);
        assert_eq!(format!("{samples:?}"), format!("{:?}", parse(TEXT).unwrap()));
        assert!(flags.iter().all(|f| *f), "{flags:?}");
        // Lines the quick path leaves to the general one: still the
        // expected series, read the same way.
        let odd = "# TYPE c counter\nc{a=\"1\"}\t2\t1700000000\r\nc{a=\"2\"} 3 1.5\nc{a=\"3\"} 4 # {trace=\"x\"} 1\nc{a=\"4\"}5\n  c{a=\"5\"} 6\nc 1e3\nc\x0b7\nc{a=\"6\"} 1 # {t=\"y\"} 2 3\n";
        let (samples, flags) = read_twice(odd);
        assert!(flags.iter().all(|f| *f), "{flags:?}");
        assert_eq!(samples[0].timestamp_ms, Some(1_700_000_000));
        assert_eq!(samples[1].timestamp_ms, Some(1_500));
        assert_eq!((samples[2].value, samples[2].timestamp_ms), (4.0, None));
        assert_eq!((samples[3].value, samples[4].value, samples[5].value, samples[6].value), (5.0, 6.0, 1000.0, 7.0));
        assert!(samples.iter().all(|s| s.kind == MetricType::Counter));
        // A line that is not the expected series is read as itself.
        let mut r = Reader::new("a 1\nb 2\n");
        let e = Expected { series: b"a", name_len: 1 };
        assert!(r.next_sample(Some(e)).unwrap().unwrap().expected);
        let b = r.next_sample(Some(e)).unwrap().unwrap();
        assert_eq!((b.name, b.expected, b.value), ("b", false, 2.0));
        let mut r = Reader::new("a_total 1\na{x=\"1\"} 2\n");
        assert!(!r.next_sample(Some(e)).unwrap().unwrap().expected);
        assert!(!r.next_sample(Some(e)).unwrap().unwrap().expected);
        // Garbage after the expected series is still garbage, on its line.
        let mut r = Reader::new("a 1\na 1 2 3\n");
        r.next_sample(Some(e)).unwrap().unwrap();
        assert_eq!(r.next_sample(Some(e)).unwrap().unwrap_err().line, 2);
        let mut r = Reader::new("a x\n");
        assert!(r.next_sample(Some(e)).unwrap().unwrap_err().what.contains("not a number"));
    }

    #[test]
    fn an_exemplar_without_a_timestamp_is_ignored() {
        let s = parse("c_total 3 # {trace_id=\"abc\"} 1.0\nc_total 4 17 # {trace_id=\"abc\"} 1.0 17\n").unwrap();
        assert_eq!((s[0].value, s[0].timestamp_ms), (3.0, None));
        assert_eq!((s[1].value, s[1].timestamp_ms), (4.0, Some(17)));
    }

    #[test]
    fn plain_decimals_parse_as_the_standard_library_does() {
        let fixed = [
            "0",
            "-0",
            "+5",
            "5.",
            ".5",
            "-.25",
            "12345.67",
            "0.1",
            "0.3",
            "999999999999999",
            "1.00000000000001",
            "123456789.012345",
            "4503599627370497",
        ];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut cases: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 10_000_000_000_000_000) as f64 / 10f64.powi((x >> 60) as i32);
            cases.push(format!("{digits}"));
            cases.push(format!("{}", x % 1_000_000_000_000_000));
        }
        for case in &cases {
            let want: f64 = case.parse().unwrap();
            let got = parse_value(case).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{case}");
            let line = format!("{case} 17\n");
            if let Some((quick, end)) = number_at(line.as_bytes(), 0) {
                assert_eq!((quick.to_bits(), end), (want.to_bits(), case.len()), "{case}");
            }
        }
        for bad in ["", "-", ".", "1.2.3", "1e", "abc", "1_000"] {
            assert_eq!(plain_decimal(bad.as_bytes()), None, "{bad}");
            assert_eq!(number_at(format!("{bad} 1").as_bytes(), 0), None, "{bad}");
        }
    }
}
