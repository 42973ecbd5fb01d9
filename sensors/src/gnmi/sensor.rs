//! The running `gnmi` sensor: one task per target, each holding one
//! Subscribe stream and reconnecting with bounded, jittered backoff.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::{Batch, HealthState, Labels, Note, Sample, Sensor, SensorContext, SensorError, SeriesId, Value};
use gnmi_proto::gnmi::subscribe_response::Response as SubResponse;
use gnmi_proto::gnmi::{Notification, SubscriptionList};
use gnmi_proto::path::join;
use gnmi_proto::{ClientConfig, ClientError, GnmiClient};

use super::mapping::{map_update, Kind, MapError, Reading};

/// The most samples in one batch: one batch is one message on the engine's
/// bounded channel, so this bounds what one message holds. A notification
/// with more readings goes out in several batches.
const MAX_BATCH_SAMPLES: usize = 16_384;

/// Reconnection delays: `initial`, doubling to `max`, each drawn uniformly
/// from its upper half so targets that failed together do not retry in
/// lockstep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
}

/// One target, ready to run.
#[derive(Debug, Clone)]
pub struct TargetPlan {
    /// The `switch` label.
    pub name: String,
    /// How to reach it.
    pub client: ClientConfig,
    /// What to subscribe to.
    pub list: SubscriptionList,
}

/// Streams gNMI telemetry from switches into the engine.
///
/// A target that is down, hangs or sends garbage is reported through the
/// sensor's health (`connect`, `timeout`, `stream`, `parse`,
/// `unknown_path`) and never stalls the other targets. After a reconnect a
/// `gap` note says how long the stream was down; counters resume from their
/// raw readings, so the engine's counter logic sees the increase across the
/// gap (or a reset, if the switch rebooted). A sample whose timestamp is not
/// after the series' last one (a target replaying its state on reconnect)
/// is dropped, so no sample is seen twice.
#[derive(Debug, Clone)]
pub struct GnmiSensor {
    name: String,
    targets: Vec<TargetPlan>,
    backoff: Backoff,
    stall: Option<Duration>,
}

impl GnmiSensor {
    /// A sensor over `targets`. `stall`: how long a stream may stay silent
    /// before it is taken for dead and reconnected.
    pub fn new(name: &str, targets: Vec<TargetPlan>, backoff: Backoff, stall: Option<Duration>) -> GnmiSensor {
        GnmiSensor { name: name.to_string(), targets, backoff, stall }
    }

    /// The targets.
    pub fn targets(&self) -> &[TargetPlan] {
        &self.targets
    }
}

#[async_trait]
impl Sensor for GnmiSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let down = Arc::new(Mutex::new(BTreeSet::new()));
        let total = self.targets.len();
        let mut tasks = tokio::task::JoinSet::new();
        for (i, plan) in self.targets.into_iter().enumerate() {
            // Spread the targets' first subscriptions evenly over one sample
            // interval: switches subscribed at the same instant sample in
            // phase, and N of them would then deliver every second's updates
            // in one burst that queues up behind itself.
            let spread = sample_period(&plan).unwrap_or_default();
            let start_after = spread.mul_f64(i as f64 / total.max(1) as f64);
            let target = Target {
                start_after,
                ctx: ctx.clone(),
                backoff: self.backoff,
                stall: self.stall,
                series: HashMap::new(),
                down: down.clone(),
                total,
                rng: seed(&plan.name, i),
                plan,
            };
            tasks.spawn(target.run());
        }
        tracing::info!(message = "gNMI sensor started.", sensor = %self.name, targets = total);
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = done {
                ctx.read_failed("task", &format!("a target task ended: {e}"));
            }
        }
        Ok(())
    }
}

/// The shortest SAMPLE interval of a target's subscriptions, if any.
fn sample_period(plan: &TargetPlan) -> Option<Duration> {
    plan.list.subscription.iter().map(|s| s.sample_interval).filter(|ns| *ns > 0).min().map(Duration::from_nanos)
}

fn seed(name: &str, i: usize) -> u64 {
    let mut h = engine::time::wall_clock_now() as u64 ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    h | 1
}

/// Why a session ended.
struct Failure {
    kind: &'static str,
    message: String,
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Failure {
        let kind = match &e {
            ClientError::Timeout { .. } => "timeout",
            ClientError::Connect { .. } | ClientError::Tls { .. } | ClientError::Address { .. } => "connect",
            _ => "stream",
        };
        Failure { kind, message: e.to_string() }
    }
}

/// One series' engine id and the timestamp of its last sample.
type Known = (SeriesId, i64);

/// A port's series by (metric, queue, prio).
type PortSeries = HashMap<(&'static str, Option<u8>, Option<u8>), Known>;

struct Target {
    /// Delay before the first subscription (phase spreading).
    start_after: Duration,
    plan: TargetPlan,
    ctx: SensorContext,
    backoff: Backoff,
    stall: Option<Duration>,
    /// port → (metric, queue, prio) → series. Keyed by port first so a
    /// lookup borrows the port name instead of allocating.
    series: HashMap<String, PortSeries>,
    down: Arc<Mutex<BTreeSet<String>>>,
    total: usize,
    rng: u64,
}

impl Target {
    fn jitter(&mut self, delay: Duration) -> Duration {
        // xorshift64: no dependency for a few random bits per retry.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let unit = (self.rng >> 11) as f64 / (1u64 << 53) as f64;
        delay.mul_f64(0.5 + 0.5 * unit)
    }

    fn mark(&self, up: bool, why: &str) {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        let changed = if up { down.remove(&self.plan.name) } else { down.insert(self.plan.name.clone()) };
        if !changed {
            return;
        }
        if down.is_empty() {
            self.ctx.set_state(HealthState::Up, &format!("all {} targets streaming", self.total));
        } else {
            let names: Vec<&str> = down.iter().map(String::as_str).collect();
            self.ctx.set_state(
                HealthState::Degraded,
                &format!("{} of {} targets down ({}): {why}", down.len(), self.total, names.join(", ")),
            );
        }
    }

    async fn run(mut self) {
        let mut delay = self.backoff.initial;
        let mut lost_at: Option<i64> = None;
        if !self.start_after.is_zero() {
            let ctx = self.ctx.clone();
            tokio::select! {
                biased;
                _ = ctx.shutdown() => return,
                _ = tokio::time::sleep(self.start_after) => {}
            }
        }
        loop {
            let mut synced = false;
            let ctx = self.ctx.clone();
            let outcome = tokio::select! {
                biased;
                _ = ctx.shutdown() => return,
                r = self.session(&mut synced, &mut lost_at) => r,
            };
            let failure = match outcome {
                Ok(()) => Failure { kind: "stream", message: format!("{} ended the stream", self.plan.client.address) },
                Err(f) => f,
            };
            if failure.kind == "closed" {
                return; // the engine is gone
            }
            let message = format!("target {} ({}): {}", self.plan.name, self.plan.client.address, failure.message);
            tracing::warn!(message = "gNMI stream failed.", sensor = %self.ctx.name(), target = %self.plan.name, kind = failure.kind, error = %failure.message);
            self.ctx.read_failed(failure.kind, &message);
            self.mark(false, &message);
            lost_at.get_or_insert_with(engine::time::wall_clock_now);
            if synced {
                delay = self.backoff.initial;
            }
            let wait = self.jitter(delay);
            tokio::select! {
                biased;
                _ = ctx.shutdown() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            delay = (delay * 2).min(self.backoff.max);
        }
    }

    async fn session(&mut self, synced: &mut bool, lost_at: &mut Option<i64>) -> Result<(), Failure> {
        let mut client = GnmiClient::connect(&self.plan.client).await?;
        let mut stream = client.subscribe(self.plan.list.clone()).await?;
        loop {
            let next = match self.stall {
                Some(stall) => match tokio::time::timeout(stall, stream.message()).await {
                    Ok(r) => r,
                    Err(_) => {
                        return Err(Failure { kind: "timeout", message: format!("no message for {stall:?}") });
                    }
                },
                None => stream.message().await,
            };
            let Some(response) = next? else { return Ok(()) };
            match response.response {
                Some(SubResponse::SyncResponse(true)) if !*synced => {
                    *synced = true;
                    self.mark(true, "");
                    if let Some(since) = lost_at.take() {
                        self.gap_note(since).await?;
                    }
                }
                Some(SubResponse::Update(notification)) => self.ingest(notification).await?,
                #[allow(deprecated)]
                Some(SubResponse::Error(e)) => {
                    return Err(Failure { kind: "stream", message: format!("target error {}: {}", e.code, e.message) });
                }
                _ => {}
            }
        }
    }

    async fn gap_note(&self, since: i64) -> Result<(), Failure> {
        let now = engine::time::wall_clock_now();
        let secs = (now - since) as f64 / 1e9;
        let note = Note {
            ts: now,
            kind: "gap".into(),
            text: format!(
                "gNMI stream from {} was down for {secs:.1} s; counters resume from their raw readings",
                self.plan.name
            ),
            labels: Labels::from_pairs([("switch", self.plan.name.as_str())]),
        };
        self.ctx.send(Batch { samples: vec![], notes: vec![note] }).await.map_err(closed)
    }

    fn series(&mut self, r: &Reading) -> Result<&mut Known, SensorError> {
        let key = (r.metric, r.queue, r.prio);
        let exists = self.series.get(r.port.as_str()).is_some_and(|m| m.contains_key(&key));
        if !exists {
            let id = self.ctx.register(&r.spec(&self.plan.name))?;
            self.series.entry(r.port.clone()).or_default().insert(key, (id, i64::MIN));
        }
        Ok(self.series.get_mut(r.port.as_str()).and_then(|m| m.get_mut(&key)).expect("inserted above"))
    }

    async fn ingest(&mut self, notification: Notification) -> Result<(), Failure> {
        let started = std::time::Instant::now();
        let ts = if notification.timestamp > 0 { notification.timestamp } else { engine::time::wall_clock_now() };
        let mut readings = Vec::with_capacity(notification.update.len() * 8);
        let mut errors: Vec<MapError> = Vec::new();
        for update in &notification.update {
            let path = join(notification.prefix.as_ref(), &update.path.clone().unwrap_or_default());
            let Some(val) = &update.val else {
                errors.push(MapError::BadValue { path: gnmi_proto::path_to_string(&path), problem: "no value".into() });
                continue;
            };
            // A bad update costs only itself; the others still count.
            let before = readings.len();
            if let Err(e) = map_update(&path, val, &mut readings) {
                readings.truncate(before);
                errors.push(e);
            }
        }
        let mut samples = Vec::with_capacity(readings.len());
        let mut series_errors = 0usize;
        for r in &readings {
            let known = match self.series(r) {
                Ok(known) => known,
                Err(e) => {
                    series_errors += 1;
                    if series_errors == 1 {
                        self.ctx.read_failed("series", &e.to_string());
                    }
                    continue;
                }
            };
            if ts <= known.1 {
                continue; // already seen: a replayed or duplicated update
            }
            known.1 = ts;
            let value = match r.kind {
                Kind::Counter => Value::Count(r.count),
                Kind::Gauge => Value::Real(r.level),
            };
            samples.push(Sample { series: known.0, ts, value });
        }
        if let Some(first) = errors.first() {
            let kind = if matches!(first, MapError::UnknownPath(_)) { "unknown_path" } else { "parse" };
            let more = if errors.len() > 1 {
                format!(" (and {} more in this notification)", errors.len() - 1)
            } else {
                String::new()
            };
            self.ctx.read_failed(kind, &format!("target {}: {first}{more}", self.plan.name));
        }
        let cost = started.elapsed();
        while !samples.is_empty() {
            let rest =
                if samples.len() > MAX_BATCH_SAMPLES { samples.split_off(MAX_BATCH_SAMPLES) } else { Vec::new() };
            self.ctx.send(Batch { samples, notes: vec![] }).await.map_err(closed)?;
            samples = rest;
        }
        self.ctx.read_ok(cost);
        Ok(())
    }
}

fn closed(_: SensorError) -> Failure {
    Failure { kind: "closed", message: "the engine is gone".into() }
}
