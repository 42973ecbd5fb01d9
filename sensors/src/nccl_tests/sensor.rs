//! The running `nccl_tests` sensor.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{HealthState, Labels, Nanos, Sample, SampleKind, Sensor, SensorContext, SensorError, SeriesSpec, Value};
use tokio::time::MissedTickBehavior;

use super::config::NcclTestsConfig;
use super::follow::Follower;
use super::parse::{Parsed, Parser, Placement};

/// Follows an nccl-tests output file and emits its results as gauges.
///
/// Runs until shutdown; a missing or unreadable file is reported as health.
#[derive(Debug, Clone)]
pub struct NcclTestsSensor {
    name: String,
    config: NcclTestsConfig,
}

impl NcclTestsSensor {
    /// A sensor `name` with validated settings (see [`NcclTestsConfig::build`]).
    pub fn new(name: &str, config: NcclTestsConfig) -> NcclTestsSensor {
        NcclTestsSensor { name: name.to_string(), config }
    }
}

/// Turns parsed lines into samples, registering their series.
struct Emitter<'a> {
    ctx: &'a SensorContext,
    config: &'a NcclTestsConfig,
    ts: Nanos,
    samples: Vec<Sample>,
}

impl Emitter<'_> {
    fn gauge(&mut self, metric: &str, labels: &Labels, value: f64) {
        let spec = SeriesSpec { metric: metric.into(), labels: labels.clone(), kind: SampleKind::Gauge };
        match self.ctx.register(&spec) {
            Ok(series) => self.samples.push(Sample { series, ts: self.ts, value: Value::Real(value) }),
            Err(error) => self.ctx.read_failed("series", &error.to_string()),
        }
    }

    fn base(&self, collective: Option<&str>) -> Labels {
        let collective = collective.or(self.config.collective.as_deref()).unwrap_or("unknown");
        Labels::from_pairs([("collective", collective), ("job", self.config.job.as_str())])
    }

    fn emit(&mut self, parsed: Parsed, collective: Option<&str>) {
        match parsed {
            Parsed::AvgBusBw(v) => {
                let labels = self.base(collective);
                self.gauge("nccl_avg_busbw_gbps", &labels, v);
            }
            Parsed::Row(row) => {
                let mut labels = self.base(row.collective.as_deref().or(collective));
                labels.insert("size", row.size.to_string());
                self.gauge("nccl_size_bytes", &labels, row.size as f64);
                for (placement, p) in [("out-of-place", row.out_of_place), ("in-place", row.in_place)] {
                    let Some(Placement { time_us, algbw_gbps, busbw_gbps }) = p else { continue };
                    let mut labels = labels.clone();
                    labels.insert("placement", placement);
                    self.gauge("nccl_time_us", &labels, time_us);
                    self.gauge("nccl_algbw_gbps", &labels, algbw_gbps);
                    self.gauge("nccl_busbw_gbps", &labels, busbw_gbps);
                }
            }
        }
    }
}

#[async_trait]
impl Sensor for NcclTestsSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let mut follower = Follower::new(&self.config.path, self.config.from_start);
        let mut parser = Parser::new();
        let mut tick = tokio::time::interval(Duration::from_millis(self.config.poll_ms));
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let path = self.config.path.display().to_string();
        let mut waiting_reported = false;
        loop {
            if !ctx.next_tick(&mut tick).await {
                return Ok(());
            }
            let start = Instant::now();
            // A local file and at most MAX_READ bytes: a short blocking read,
            // not worth a hop to the blocking pool.
            let appended = match follower.poll() {
                Ok(appended) => appended,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    if !waiting_reported {
                        ctx.set_state(HealthState::Unavailable, &format!("waiting for {path}"));
                        waiting_reported = true;
                    }
                    continue;
                }
                Err(error) => {
                    ctx.read_failed("io", &format!("reading {path}: {error}"));
                    continue;
                }
            };
            if waiting_reported {
                ctx.set_state(HealthState::Up, &format!("following {path}"));
                waiting_reported = false;
            }
            if appended.restarted {
                parser = Parser::new();
            }
            if appended.dropped > 0 {
                ctx.read_failed("parse", &format!("{path}: {} overlong lines dropped", appended.dropped));
            }
            let mut emitter =
                Emitter { ctx: &ctx, config: &self.config, ts: engine::time::wall_clock_now(), samples: Vec::new() };
            for line in &appended.lines {
                if let Some(parsed) = parser.line(line) {
                    let collective = parser.collective().map(str::to_string);
                    emitter.emit(parsed, collective.as_deref());
                }
            }
            let samples = emitter.samples;
            ctx.read_ok(start.elapsed());
            if !ctx.send_samples(samples).await? {
                return Ok(());
            }
        }
    }
}
