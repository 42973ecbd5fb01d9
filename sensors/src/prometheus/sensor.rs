//! The running `prometheus` sensor: one scrape task per target.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{
    Batch, CounterSpec, HealthState, Labels, Nanos, Sample, SampleKind, Sensor, SensorContext, SensorError, SeriesId,
    SeriesSpec, Value,
};
use regex::Regex;
use tokio::time::MissedTickBehavior;

use super::config::TargetConfig;
use net::http::{Client, HttpError};

use super::http::{self, ScrapeError};
use super::parse::{parse, ParsedSample};

/// The most series ids a target remembers between scrapes (to skip
/// registration); past it the memo is cleared and rebuilt, so a target
/// whose label values churn cannot grow it without end.
const MAX_MEMO: usize = 100_000;

/// A validated target.
#[derive(Debug, Clone)]
pub struct Target {
    pub(super) config: TargetConfig,
    pub(super) url: net::http::Url,
    pub(super) allow: Vec<Regex>,
}

/// Scrapes Prometheus exporters.
#[derive(Debug, Clone)]
pub struct PrometheusSensor {
    name: String,
    targets: Vec<Target>,
}

impl PrometheusSensor {
    /// A sensor `name` over validated targets (see
    /// [`PrometheusConfig::build`](super::PrometheusConfig::build)).
    pub fn new(name: &str, targets: Vec<Target>) -> PrometheusSensor {
        PrometheusSensor { name: name.to_string(), targets }
    }
}

/// Every target's last problem, and what was last reported.
#[derive(Debug)]
struct Board {
    problems: Vec<Option<String>>,
    reported: Option<(HealthState, String)>,
}

impl Board {
    fn set(&mut self, ctx: &SensorContext, target: usize, problem: Option<String>) {
        self.problems[target] = problem;
        let failing: Vec<&str> = self.problems.iter().flatten().map(String::as_str).collect();
        let (state, detail) = if failing.is_empty() {
            (HealthState::Up, format!("{} targets", self.problems.len()))
        } else {
            (HealthState::Degraded, failing.join("; "))
        };
        if self.reported.as_ref().map(|(s, d)| (*s, d.as_str())) != Some((state, detail.as_str())) {
            ctx.set_state(state, &detail);
            self.reported = Some((state, detail));
        }
    }
}

/// One target's scrape state.
struct Scraper {
    target: Target,
    client: Client,
    ctx: SensorContext,
    memo: HashMap<(String, Labels, bool), SeriesId>,
}

impl Scraper {
    /// Maps parsed samples to engine samples.
    fn convert(&mut self, parsed: Vec<ParsedSample>, ts: Nanos) -> Vec<Sample> {
        let config = &self.target.config;
        let mut out = Vec::with_capacity(parsed.len());
        let mut seen = HashSet::new();
        for p in parsed {
            if !self.target.allow.is_empty() && !self.target.allow.iter().any(|r| r.is_match(&p.name)) {
                continue;
            }
            let cumulative = p.is_cumulative();
            let value = if cumulative {
                // Counters are exact integers in the engine: the float's
                // nearest integer. A negative or non-finite counter is not
                // a count; skip it.
                if !p.value.is_finite() || p.value < 0.0 {
                    continue;
                }
                Value::Count(p.value.round().min(u64::MAX as f64) as u64)
            } else {
                // A NaN or infinite level would poison window arithmetic.
                if !p.value.is_finite() {
                    continue;
                }
                Value::Real(p.value)
            };
            let mut labels = Labels::default();
            for (k, v) in p.labels {
                if config.labels.is_empty() {
                    labels.insert(k, v);
                } else if let Some(to) = config.labels.get(&k) {
                    labels.insert(to.clone(), v);
                }
            }
            let metric = format!("{}{}", config.prefix, p.name);
            let key = (metric, labels, cumulative);
            let series = match self.memo.get(&key) {
                Some(id) => *id,
                None => {
                    let kind = if cumulative { SampleKind::Counter(CounterSpec::U64) } else { SampleKind::Gauge };
                    let spec = SeriesSpec { metric: key.0.clone(), labels: key.1.clone(), kind };
                    match self.ctx.register(&spec) {
                        Ok(id) => {
                            if self.memo.len() >= MAX_MEMO {
                                self.memo.clear();
                            }
                            self.memo.insert(key, id);
                            id
                        }
                        Err(error) => {
                            self.ctx.read_failed("series", &error.to_string());
                            continue;
                        }
                    }
                }
            };
            // Dropping labels can fold two exporter series into one: the
            // first of them wins.
            if seen.insert(series) {
                out.push(Sample { series, ts, value });
            }
        }
        out
    }

    /// One scrape: the samples, or the error kind and text.
    async fn scrape(&mut self) -> Result<Vec<Sample>, (&'static str, String)> {
        // Exposition timestamps are ignored: the engine's windows run on the
        // time the sensor read the value, like every other sensor's.
        let ts = engine::time::wall_clock_now();
        let timeout = Duration::from_millis(self.target.config.timeout_ms);
        let body = match http::get(&self.client, &self.target.url, timeout).await {
            Err(ScrapeError::Http(HttpError::Timeout(_))) => {
                return Err(("timeout", format!("no answer within {} ms", timeout.as_millis())))
            }
            Err(error) => return Err((error.kind(), error.to_string())),
            Ok(body) => body,
        };
        let text = std::str::from_utf8(&body).map_err(|e| ("parse", format!("not UTF-8: {e}")))?;
        // Parsing runs on the async worker: the body is bounded by
        // MAX_RESPONSE and a typical exporter page parses in about a ms.
        let parsed = parse(text).map_err(|e| ("parse", e.to_string()))?;
        Ok(self.convert(parsed, ts))
    }
}

async fn scrape_loop(
    index: usize,
    target: Target,
    ctx: SensorContext,
    board: Arc<Mutex<Board>>,
) -> Result<(), SensorError> {
    let url = target.url.to_string();
    let mut tick = tokio::time::interval(Duration::from_millis(target.config.interval_ms));
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut scraper = Scraper { target, client: http::client(), ctx: ctx.clone(), memo: HashMap::new() };
    loop {
        if !ctx.next_tick(&mut tick).await {
            return Ok(());
        }
        let start = Instant::now();
        let result = tokio::select! {
            biased;
            _ = ctx.shutdown() => return Ok(()),
            r = scraper.scrape() => r,
        };
        let problem = match result {
            Ok(samples) => {
                ctx.read_ok(start.elapsed());
                if !samples.is_empty() {
                    tokio::select! {
                        biased;
                        _ = ctx.shutdown() => return Ok(()),
                        sent = ctx.send(Batch { samples, notes: Vec::new() }) => sent?,
                    }
                }
                None
            }
            Err((kind, error)) => {
                let error = format!("{url}: {error}");
                tracing::warn!(message = "Scrape failed.", sensor = %ctx.name(), target = %url, kind, %error);
                ctx.read_failed(kind, &error);
                Some(error)
            }
        };
        board.lock().unwrap_or_else(|p| p.into_inner()).set(&ctx, index, problem);
    }
}

#[async_trait]
impl Sensor for PrometheusSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let board =
            Arc::new(Mutex::new(Board { problems: self.targets.iter().map(|_| None).collect(), reported: None }));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, target) in self.targets.into_iter().enumerate() {
            tasks.spawn(scrape_loop(i, target, ctx.clone(), board.clone()));
        }
        let mut outcome = Ok(());
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok(Ok(())) => {}
                // The engine is gone: every task will find out; stop them.
                Ok(Err(error)) => {
                    tasks.abort_all();
                    outcome = Err(error);
                }
                Err(join) if join.is_cancelled() => {}
                Err(join) => {
                    tasks.abort_all();
                    outcome = Err(SensorError::Io {
                        context: "a prometheus scrape task ended".into(),
                        source: std::io::Error::other(join.to_string()),
                    });
                }
            }
        }
        outcome
    }
}
