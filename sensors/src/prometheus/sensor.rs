//! The running `prometheus` sensor: one scrape task per target.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{Batch, HealthState, Sample, Sensor, SensorContext, SensorError};
use regex::Regex;
use tokio::time::MissedTickBehavior;

use super::config::ScrapeTargetConfig;
use net::http::{Client, HttpError};

use super::http::{self, ScrapeError};
use super::map::{Mapper, PageReport, RefusalLog};

/// At most one log line per target per this long about refused series.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);

/// A validated target.
#[derive(Debug, Clone)]
pub struct ScrapeTarget {
    pub(super) config: ScrapeTargetConfig,
    pub(super) url: net::http::Url,
    pub(super) allow: Vec<Regex>,
}

/// Scrapes Prometheus exporters.
#[derive(Debug, Clone)]
pub struct PrometheusSensor {
    name: String,
    targets: Vec<ScrapeTarget>,
}

impl PrometheusSensor {
    /// A sensor `name` over validated targets (see
    /// [`PrometheusConfig::build`](super::PrometheusConfig::build)).
    pub fn new(name: &str, targets: Vec<ScrapeTarget>) -> PrometheusSensor {
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
    target: ScrapeTarget,
    client: Client,
    mapper: Mapper,
    /// The last page; its capacity is kept for the next.
    body: Vec<u8>,
}

impl Scraper {
    /// One scrape: the samples, or the error kind and text.
    async fn scrape(&mut self) -> Result<Vec<Sample>, (&'static str, String)> {
        // Exposition timestamps are ignored: the engine's windows run on the
        // time the sensor read the value, like every other sensor's.
        let ts = engine::time::wall_clock_now();
        let timeout = Duration::from_millis(self.target.config.timeout_ms);
        match http::get(&self.client, &self.target.url, timeout, &mut self.body).await {
            Err(ScrapeError::Http(HttpError::Timeout(_))) => {
                return Err(("timeout", format!("no answer within {} ms", timeout.as_millis())))
            }
            Err(error) => return Err((error.kind(), error.to_string())),
            Ok(()) => {}
        };
        let text = std::str::from_utf8(&self.body).map_err(|e| ("parse", format!("not UTF-8: {e}")))?;
        // Parsing runs on the async worker: the body is bounded by
        // MAX_RESPONSE and parsing and mapping take a few hundred ns per
        // sample (docs/performance.md).
        self.mapper.map(text, ts).map_err(|e| ("parse", e.to_string()))
    }
}

/// Reports the series the engine refused on a page: counted as an error of
/// kind `series` once per scrape that had some (the sensor is degraded,
/// since it drops data), and logged at most once per `REFUSAL_LOG_EVERY`
/// per target with the number of samples refused since the last line.
/// Returns the target's problem, if any.
fn report_refusals(ctx: &SensorContext, url: &str, report: &PageReport, log: &mut RefusalLog) -> Option<String> {
    if report.refused == 0 {
        return None;
    }
    let why = report.refusal.as_deref().unwrap_or("refused by the engine");
    let problem = format!("{url}: {} series refused: {why}", report.refused);
    ctx.read_failed("series", &problem);
    if let Some(count) = log.note(Instant::now(), report.refused) {
        tracing::warn!(
            message = "Series refused: their samples are dropped.",
            sensor = %ctx.name(),
            target = %url,
            refused_samples = count,
            this_scrape = report.refused,
            reason = %why,
        );
    }
    Some(problem)
}

async fn scrape_loop(
    index: usize,
    target: ScrapeTarget,
    ctx: SensorContext,
    board: Arc<Mutex<Board>>,
) -> Result<(), SensorError> {
    let url = target.url.to_string();
    let mut tick = tokio::time::interval(Duration::from_millis(target.config.interval_ms));
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let config = &target.config;
    let mapper = Mapper::new(ctx.clone(), &config.prefix, config.labels.clone(), target.allow.clone());
    let mut scraper = Scraper { target, client: http::client(), mapper, body: Vec::new() };
    let mut refusals = RefusalLog::new(REFUSAL_LOG_EVERY);
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
                let problem = report_refusals(&ctx, &url, scraper.mapper.report(), &mut refusals);
                if !samples.is_empty() {
                    tokio::select! {
                        biased;
                        _ = ctx.shutdown() => return Ok(()),
                        sent = ctx.send(Batch { samples, notes: Vec::new() }) => sent?,
                    }
                }
                problem
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

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::SensorHarness;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing::field::{Field, Visit};

    /// Counts warnings about refused series and keeps their `refused_samples`.
    struct Capture(Arc<Mutex<Vec<u64>>>, AtomicUsize);

    struct Count(Option<u64>, bool);

    impl Visit for Count {
        fn record_u64(&mut self, field: &Field, value: u64) {
            if field.name() == "refused_samples" {
                self.0 = Some(value);
            }
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            if field.name() == "message" && value.starts_with("Series refused") {
                self.1 = true;
            }
        }
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" && format!("{value:?}").starts_with("Series refused") {
                self.1 = true;
            }
        }
    }

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(self.1.fetch_add(1, Ordering::Relaxed) as u64 + 1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut count = Count(None, false);
            event.record(&mut count);
            if let (Some(n), true, &tracing::Level::WARN) = (count.0, count.1, event.metadata().level()) {
                self.0.lock().unwrap().push(n);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn refused_series_are_logged_once_a_minute_and_counted_every_scrape() {
        let h = SensorHarness::new("prom", 2);
        let mut mapper = Mapper::new(h.ctx.clone(), "", Default::default(), Vec::new());
        let mut log = RefusalLog::new(REFUSAL_LOG_EVERY);
        let lines = Arc::new(Mutex::new(Vec::new()));
        let capture = Capture(lines.clone(), AtomicUsize::new(0));
        let mut problems = Vec::new();
        tracing::subscriber::with_default(capture, || {
            for scrape in 0..5 {
                let samples = mapper.map("a 1\nb 2\nc 3\nd 4\n", scrape).unwrap();
                assert_eq!(samples.len(), 2);
                problems.push(report_refusals(&h.ctx, "http://x/metrics", mapper.report(), &mut log));
            }
        });
        assert_eq!(*lines.lock().unwrap(), [2], "one line within the minute, with the count refused");
        let health = h.ctx.health().snapshot().pop().unwrap();
        assert_eq!(health.errors.get("series"), Some(&5), "{health:?}");
        let last = health.last_error.unwrap();
        assert!(last.starts_with("http://x/metrics: 2 series refused: sensor \"prom\" reached its cap of 2"), "{last}");
        assert!(problems.iter().all(|p| p.as_deref() == Some(last.as_str())), "{problems:?}");
        // A page with nothing refused is no problem and logs nothing.
        let quiet = PageReport::default();
        assert_eq!(report_refusals(&h.ctx, "u", &quiet, &mut log), None);
        assert_eq!(h.ctx.health().snapshot().pop().unwrap().errors.get("series"), Some(&5));
    }
}
