//! History read back from a Prometheus-compatible TSDB as recording
//! events ([`engine::recording::Event`]), for when the local recording does
//! not reach back as far as the question (`why`, `timeline`).
//!
//! The raw samples come from `/api/v1/query` with a range selector
//! (`SELECTOR[Nms]` at the span's end: every sample as stored, not
//! `query_range`'s evaluated steps), the kinds from `/api/v1/metadata`.
//! A receiver that keeps no metadata for written series (Prometheus 2.42
//! keeps only what it scrapes) leaves the kind unknown: a `_total` name is
//! read as a counter, anything else as a gauge. Counters come back as
//! `f64`, exact up to 2^53.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use engine::labels::Labels;
use engine::recording::{Event, Writer};
use engine::series::{SampleKind, SeriesSpec};
use engine::{CounterSpec, Nanos, Value, MS};
use net::http::{Client, Request, Url};

/// The largest answer read: a day of 10k series every 10 s is ~500 MB of
/// JSON; past this the span or the selector must be narrowed.
pub const MAX_ANSWER: usize = 1 << 30;

/// History could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The request failed.
    #[error("{url}")]
    Http {
        /// What was asked.
        url: String,
        /// Why it failed.
        source: net::http::HttpError,
    },
    /// `--prometheus` is no URL.
    #[error("--prometheus")]
    Url(#[from] net::http::UrlError),
    /// The span is empty or reversed.
    #[error("the span to read ends before it starts")]
    Span,
    /// The recording could not be written.
    #[error("writing the history to a temporary recording")]
    Io(#[from] std::io::Error),
    /// The TSDB answered, but not with what was asked.
    #[error("{url}: {reason}")]
    Answer {
        /// What was asked.
        url: String,
        /// What was wrong with the answer.
        reason: String,
    },
}

/// Reads every series `selector` matches over `[from, to]` from the TSDB
/// at `base` (e.g. `http://prometheus:9090`), as a recording's events:
/// the declarations, then the samples in time order.
pub async fn fetch(
    client: &Client,
    base: &Url,
    selector: &str,
    from: Nanos,
    to: Nanos,
    timeout: Duration,
) -> Result<Vec<Event>, HistoryError> {
    let kinds = metadata(client, base, timeout).await?;
    let range_ms = ((to - from) / MS).max(1);
    let query = format!("{selector}[{range_ms}ms]");
    let path = format!("/api/v1/query?query={}&time={}", encode(&query), seconds(to));
    let answer = get(client, &base.join(&path), timeout).await?;
    let result = answer["result"].as_array().ok_or_else(|| HistoryError::Answer {
        url: base.join(&path).to_string(),
        reason: format!("no matrix in the answer: {}", snippet(&answer)),
    })?;
    let mut events = Vec::new();
    let mut samples = Vec::new();
    for (id, series) in result.iter().enumerate() {
        let id = id as u32;
        let mut labels = Labels::default();
        let mut metric = String::new();
        for (k, v) in series["metric"].as_object().into_iter().flatten() {
            let v = v.as_str().unwrap_or_default().to_string();
            if k == "__name__" {
                metric = v;
            } else {
                labels.insert(k.clone(), v);
            }
        }
        let kind = kind_of(&metric, kinds.get(&metric).map(String::as_str));
        for point in series["values"].as_array().into_iter().flatten() {
            let (Some(t), Some(v)) = (point[0].as_f64(), point[1].as_str().and_then(|v| v.parse::<f64>().ok())) else {
                continue;
            };
            let t = (t * 1000.0).round() as Nanos * MS;
            let value = match kind {
                SampleKind::Counter(_) if v >= 0.0 && v.fract() == 0.0 => Value::Count(v as u64),
                _ => Value::Real(v),
            };
            samples.push((t, id, value));
        }
        events.push(Event::Series(id, SeriesSpec { metric, labels, kind }));
    }
    samples.sort_by_key(|&(t, id, _)| (t, id));
    events.extend(samples.into_iter().map(|(t, id, value)| Event::Sample { id, t, value }));
    Ok(events)
}

/// The series `selector` matches over `[from, to]` from the TSDB whose
/// base URL is `url`, written to a temporary recording that `why` and
/// `timeline` read as they read the daemon's (removed when dropped).
/// Blocks: it runs its own small runtime.
pub fn to_file(url: &str, selector: &str, from: Nanos, to: Nanos) -> Result<tempfile::NamedTempFile, HistoryError> {
    if to <= from {
        return Err(HistoryError::Span);
    }
    let base = Url::parse(url)?;
    let client = Client::plain(MAX_ANSWER);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let events = runtime.block_on(fetch(&client, &base, selector, from, to, Duration::from_secs(120)))?;
    let mut file = tempfile::Builder::new().prefix("rocemend-history-").suffix(".jsonl").tempfile()?;
    write_recording(&events, std::io::BufWriter::new(file.as_file_mut()))?;
    Ok(file)
}

/// `events` written as a recording, for the readers of `why` and `timeline`.
pub fn write_recording(events: &[Event], out: impl Write) -> std::io::Result<()> {
    let mut w = Writer::new(out);
    for event in events {
        match event {
            Event::Series(id, spec) => w.declare(*id, spec)?,
            Event::Sample { id, t, value } => w.write_raw_sample(*id, *t, *value)?,
            Event::Note(note) => w.note(note)?,
        }
    }
    w.flush()
}

/// The kind of `metric`, from its metadata type if the TSDB has one.
fn kind_of(metric: &str, kind: Option<&str>) -> SampleKind {
    match kind {
        Some("counter") => SampleKind::Counter(CounterSpec::U64),
        Some("gauge") => SampleKind::Gauge,
        _ if metric.ends_with("_total") => SampleKind::Counter(CounterSpec::U64),
        _ => SampleKind::Gauge,
    }
}

/// Each metric's type, from `/api/v1/metadata`.
async fn metadata(client: &Client, base: &Url, timeout: Duration) -> Result<HashMap<String, String>, HistoryError> {
    let answer = get(client, &base.join("/api/v1/metadata"), timeout).await?;
    let families = answer.as_object().into_iter().flatten();
    Ok(families.filter_map(|(name, entries)| Some((name.clone(), entries[0]["type"].as_str()?.to_string()))).collect())
}

/// The `data` of a successful answer to a GET of `url`.
async fn get(client: &Client, url: &Url, timeout: Duration) -> Result<serde_json::Value, HistoryError> {
    let request = Request { method: "GET", url, headers: Vec::new(), body: b"" };
    let response =
        client.send(&request, timeout).await.map_err(|source| HistoryError::Http { url: url.to_string(), source })?;
    let wrong = |reason: String| HistoryError::Answer { url: url.to_string(), reason };
    if !response.ok() {
        return Err(wrong(format!("HTTP {}: {}", response.status, response.snippet())));
    }
    let mut doc: serde_json::Value =
        serde_json::from_slice(&response.body).map_err(|e| wrong(format!("not JSON ({e}): {}", response.snippet())))?;
    if doc["status"] != "success" {
        return Err(wrong(format!("status {}: {}", doc["status"], doc["error"])));
    }
    Ok(doc["data"].take())
}

fn snippet(v: &serde_json::Value) -> String {
    v.to_string().chars().take(200).collect()
}

/// `t` as the query API takes it: seconds with milliseconds.
fn seconds(t: Nanos) -> String {
    let ms = t.div_euclid(MS);
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Percent-encodes a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_metadata_else_from_the_name() {
        assert_eq!(kind_of("rx_bytes", Some("counter")), SampleKind::Counter(CounterSpec::U64));
        assert_eq!(kind_of("x_total", Some("gauge")), SampleKind::Gauge);
        assert_eq!(kind_of("x_total", None), SampleKind::Counter(CounterSpec::U64));
        assert_eq!(kind_of("temp", Some("unknown")), SampleKind::Gauge);
        assert_eq!(seconds(1_700_000_000_123_456_789), "1700000000.123");
        assert_eq!(encode("a{b=\"c\"}[5ms]"), "a%7Bb%3D%22c%22%7D%5B5ms%5D");
    }
}
