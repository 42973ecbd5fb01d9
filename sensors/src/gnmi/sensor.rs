//! The running `gnmi` sensor: one task per target, each holding one
//! connection with one Subscribe stream per request prefix, and
//! reconnecting with short, jittered backoff.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::{Batch, HealthState, Labels, Note, Sensor, SensorContext, SensorError};
use fnv::FnvHasher;
use gnmi_proto::sonic::PathStyle;
use gnmi_proto::ClientError;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use super::ingest::{Memory, WarnLimit};
use super::mapping::OidNames;
use super::plan::{Backoff, StyleChoice, TargetPlan};

/// The shortest time between two warnings of a failing target's
/// reconnection attempts: a refused connection is retried ten times a
/// second, and each attempt is counted in the sensor's health anyway.
const RETRY_WARN_EVERY: Duration = Duration::from_secs(10);

/// Streams gNMI telemetry from switches into the engine.
///
/// A target that is down, hangs or sends garbage is reported through the
/// sensor's health (`connect`, `timeout`, `stream`, `parse`,
/// `unknown_path`) and never stalls the other targets. After a reconnect a
/// `reconnected` note (so the daemon reads back the actions in effect on
/// that switch) and a `gap` note (how long the stream was down) go out;
/// counters resume from their raw readings, so the engine's counter logic
/// sees the increase across the gap (or a reset, if the switch rebooted).
/// A sample whose timestamp is not after the series' last one (a target
/// replaying its state on reconnect) is dropped, so no sample is seen
/// twice. While a stream is up, the last value of every ON_CHANGE series
/// is sent again every `heartbeat`.
///
/// On an aggregator that shares its switches with others
/// ([`Sensor::read_only_owned`]), a target is subscribed to only while
/// this aggregator owns it: its task starts when the switch becomes ours
/// and is cancelled, closing the stream, when it stops being ours.
#[derive(Debug, Clone)]
pub struct GnmiSensor {
    name: String,
    targets: Vec<TargetPlan>,
    backoff: Backoff,
    stall: Option<Duration>,
    heartbeat: Option<Duration>,
    owned: Option<watch::Receiver<BTreeSet<String>>>,
}

impl GnmiSensor {
    /// A sensor over `targets`. `stall`: how long a stream may stay silent
    /// before it is taken for dead and reconnected; `heartbeat`: how often
    /// ON_CHANGE values are sent again.
    pub fn new(
        name: &str,
        targets: Vec<TargetPlan>,
        backoff: Backoff,
        stall: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> GnmiSensor {
        GnmiSensor { name: name.to_string(), targets, backoff, stall, heartbeat, owned: None }
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

    fn switches(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.name.clone()).collect()
    }

    fn read_only_owned(&mut self, owned: watch::Receiver<BTreeSet<String>>) {
        self.owned = Some(owned);
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let GnmiSensor { name, targets, backoff, stall, heartbeat, owned } = *self;
        let launcher = Launcher {
            ctx: ctx.clone(),
            backoff,
            stall,
            heartbeat,
            streams: Arc::new(Streams { down: Mutex::new(BTreeSet::new()), total: AtomicUsize::new(targets.len()) }),
        };
        match owned {
            None => {
                tracing::info!(message = "gNMI sensor started.", sensor = %name, targets = targets.len());
                run_all(&launcher, targets).await;
            }
            Some(owned) => {
                tracing::info!(
                    message = "gNMI sensor started; it reads the switches this aggregator owns.",
                    sensor = %name,
                    targets = targets.len()
                );
                follow_ownership(&launcher, targets, owned).await;
            }
        }
        Ok(())
    }
}

/// What every target task of one sensor is started with.
struct Launcher {
    ctx: SensorContext,
    backoff: Backoff,
    stall: Option<Duration>,
    heartbeat: Option<Duration>,
    streams: Arc<Streams>,
}

/// The targets down now, and how many are read: the sensor's health.
struct Streams {
    down: Mutex<BTreeSet<String>>,
    total: AtomicUsize,
}

impl Launcher {
    /// The task of target `i`, subscribing after `start_after`.
    fn target(&self, i: usize, plan: TargetPlan, start_after: Duration) -> TargetTask {
        let style = match &plan.style {
            StyleChoice::Fixed(style) => Some(style.clone()),
            StyleChoice::Auto { .. } => None,
        };
        TargetTask {
            start_after,
            ctx: self.ctx.clone(),
            backoff: self.backoff,
            stall: self.stall,
            heartbeat: self.heartbeat,
            style,
            memory: Memory::default(),
            oids: OidNames::default(),
            warnings: WarnLimit::default(),
            last_heard: None,
            streams: self.streams.clone(),
            rng: seed(&plan.name, i),
            plan,
        }
    }

    /// A target is no longer read: it no longer counts as down.
    fn forget(&self, target: &str) {
        let mut down = lock(&self.streams.down);
        down.remove(target);
        if down.is_empty() {
            let total = self.streams.total.load(Ordering::Relaxed);
            self.ctx.set_state(HealthState::Up, &format!("all {total} targets streaming"));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads every target until shutdown.
async fn run_all(launcher: &Launcher, targets: Vec<TargetPlan>) {
    let total = targets.len();
    let mut tasks = JoinSet::new();
    for (i, plan) in targets.into_iter().enumerate() {
        // Spread the targets' first subscriptions evenly over one sample
        // interval: switches subscribed at the same instant sample in
        // phase, and N of them would then deliver every second's updates
        // in one burst that queues up behind itself.
        let spread = sample_period(&plan).unwrap_or_default();
        let start_after = spread.mul_f64(i as f64 / total.max(1) as f64);
        tasks.spawn(launcher.target(i, plan, start_after).run());
    }
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done {
            launcher.ctx.read_failed("task", &format!("a target task ended: {e}"));
        }
    }
}

/// Reads the targets in `owned` as it changes, until shutdown or until its
/// sender (the shard) is gone.
async fn follow_ownership(launcher: &Launcher, targets: Vec<TargetPlan>, mut owned: watch::Receiver<BTreeSet<String>>) {
    let listed = targets.len();
    let plans: BTreeMap<String, (usize, TargetPlan)> =
        targets.into_iter().enumerate().map(|(i, plan)| (plan.name.clone(), (i, plan))).collect();
    let mut running: BTreeMap<String, AbortHandle> = BTreeMap::new();
    let mut tasks = JoinSet::new();
    let mut first = true;
    launcher.streams.total.store(0, Ordering::Relaxed);
    loop {
        let now = owned.borrow_and_update().clone();
        let released: Vec<String> = running.keys().filter(|name| !now.contains(*name)).cloned().collect();
        for name in &released {
            if let Some(task) = running.remove(name) {
                task.abort();
            }
        }
        let taken: Vec<&(usize, TargetPlan)> =
            now.iter().filter(|name| !running.contains_key(*name)).filter_map(|name| plans.get(name)).collect();
        for (k, (i, plan)) in taken.iter().enumerate() {
            // The first owned set is spread over a sample interval, as
            // `run_all` spreads every target. Switches taken over later (an
            // aggregator died) are spread over at most 250 ms: enough to keep
            // them out of phase, short of delaying their telemetry much.
            let period = sample_period(plan).unwrap_or_default();
            let spread = if first { period } else { (period / 4).min(TAKEOVER_SPREAD) };
            let start_after = spread.mul_f64(k as f64 / taken.len() as f64);
            let task = tasks.spawn(launcher.target(*i, plan.clone(), start_after).run());
            running.insert(plan.name.clone(), task);
        }
        launcher.streams.total.store(running.len(), Ordering::Relaxed);
        for name in &released {
            launcher.forget(name);
        }
        if first || !released.is_empty() || !taken.is_empty() {
            let taken: Vec<&str> = taken.iter().map(|(_, plan)| plan.name.as_str()).collect();
            tracing::info!(
                message = "gNMI sensor follows the switches this aggregator owns.",
                sensor = %launcher.ctx.name(),
                owned = running.len(),
                listed,
                taken = %taken.join(","),
                released = %released.join(",")
            );
            if lock(&launcher.streams.down).is_empty() {
                launcher.ctx.set_state(
                    HealthState::Up,
                    &format!("reading the {} of {listed} switches this aggregator owns", running.len()),
                );
            }
        }
        first = false;
        tokio::select! {
            biased;
            _ = launcher.ctx.shutdown() => break,
            changed = owned.changed() => {
                if changed.is_err() {
                    // The shard is gone: the daemon is stopping. Owning
                    // nothing, read nothing.
                    break;
                }
            }
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                if let Err(e) = done {
                    if !e.is_cancelled() {
                        launcher.ctx.read_failed("task", &format!("a target task ended: {e}"));
                    }
                }
            }
        }
    }
    tasks.shutdown().await;
}

/// How long switches taken over from another aggregator are spread over at
/// most.
const TAKEOVER_SPREAD: Duration = Duration::from_millis(250);

/// The shortest SAMPLE interval of a target's subscriptions, if any.
fn sample_period(plan: &TargetPlan) -> Option<Duration> {
    [&plan.prefix_target, &plan.sonic_db_origin]
        .into_iter()
        .flatten()
        .flat_map(|s| &s.list.subscription)
        .map(|s| s.sample_interval)
        .filter(|ns| *ns > 0)
        .min()
        .map(Duration::from_nanos)
}

/// The jitter's seed of target `i` named `name`: the wall clock, mixed with
/// the index and (FNV-1a) the name, so targets that start together do not
/// retry together. Never 0, which xorshift would keep.
fn seed(name: &str, i: usize) -> u64 {
    let mut h =
        FnvHasher::with_key(engine::time::wall_clock_now() as u64 ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    h.write(name.as_bytes());
    h.finish() | 1
}

/// Why a session ended.
pub(super) struct Failure {
    pub(super) kind: &'static str,
    pub(super) message: String,
    /// The connection was refused: retry soon.
    pub(super) refused: bool,
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Failure {
        let kind = match &e {
            ClientError::Timeout { .. } => "timeout",
            ClientError::Connect { .. } | ClientError::Tls { .. } | ClientError::Address { .. } => "connect",
            _ => "stream",
        };
        Failure { kind, refused: e.is_refused(), message: e.to_string() }
    }
}

/// One target's task and what it keeps across sessions.
pub(super) struct TargetTask {
    /// Delay before the first subscription (phase spreading).
    start_after: Duration,
    pub(super) plan: TargetPlan,
    pub(super) ctx: SensorContext,
    backoff: Backoff,
    pub(super) stall: Option<Duration>,
    pub(super) heartbeat: Option<Duration>,
    /// The path style: configured, or found by `auto` and then kept.
    pub(super) style: Option<PathStyle>,
    pub(super) memory: Memory,
    /// What the OIDs of COUNTERS_DB name, as read at the session's start
    /// (`sonic-db-origin` style).
    pub(super) oids: OidNames,
    pub(super) warnings: WarnLimit,
    /// The wall time of the target's last message: where a gap begins. A stream that goes
    /// silent is noticed only a stall later, and its gap is measured from its silence, not
    /// from the notice.
    pub(super) last_heard: Option<i64>,
    streams: Arc<Streams>,
    rng: u64,
}

impl TargetTask {
    /// `delay` ± 20 %.
    fn jitter(&mut self, delay: Duration) -> Duration {
        // xorshift64: no dependency for a few random bits per retry.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let unit = (self.rng >> 11) as f64 / (1u64 << 53) as f64;
        delay.mul_f64(0.8 + 0.4 * unit)
    }

    pub(super) fn mark(&self, up: bool, why: &str) {
        let mut down = lock(&self.streams.down);
        let changed = if up { down.remove(&self.plan.name) } else { down.insert(self.plan.name.clone()) };
        if !changed {
            return;
        }
        let total = self.streams.total.load(Ordering::Relaxed);
        if down.is_empty() {
            self.ctx.set_state(HealthState::Up, &format!("all {total} targets streaming"));
        } else {
            let names: Vec<&str> = down.iter().map(String::as_str).collect();
            self.ctx.set_state(
                HealthState::Degraded,
                &format!("{} of {total} targets down ({}): {why}", down.len(), names.join(", ")),
            );
        }
    }

    /// The failure as the health and the log say it: with the target's name, and, for a
    /// plaintext client against a TLS target (HTTP/2 says only "transport error" or "operation
    /// was canceled"), the mismatch named, after asking the target.
    async fn described(&self, failure: &Failure, synced: bool) -> String {
        let mut message = format!("target {} ({}): {}", self.plan.name, self.plan.client.address, failure.message);
        if !synced
            && self.plan.client.tls.is_none()
            && !failure.refused
            // A target that says nothing is no TLS server: those answer, with an alert.
            && failure.kind != "timeout"
            && speaks_tls(&self.plan.client.address).await
        {
            message
                .push_str(": the target speaks TLS and this target has no `tls` setting (the client spoke plaintext)");
        }
        message
    }

    async fn run(mut self) {
        let mut delays = self.backoff.delays();
        let mut lost_at: Option<i64> = None;
        let mut warned: Option<(Instant, &'static str)> = None;
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
                Ok(()) => Failure {
                    kind: "stream",
                    message: format!("{} ended the stream", self.plan.client.address),
                    refused: false,
                },
                Err(f) => f,
            };
            if failure.kind == "closed" {
                return; // the engine is gone
            }
            let message = self.described(&failure, synced).await;
            // The first failure of an outage, a new kind of failure, and
            // then one every RETRY_WARN_EVERY are warnings; the retries in
            // between are counted in the health.
            let now = Instant::now();
            let quiet = warned
                .is_some_and(|(at, kind)| !synced && kind == failure.kind && now.duration_since(at) < RETRY_WARN_EVERY);
            if quiet {
                tracing::debug!(message = "gNMI stream failed again.", sensor = %self.ctx.name(), target = %self.plan.name, kind = failure.kind, error = %failure.message);
            } else {
                tracing::warn!(message = "gNMI stream failed.", sensor = %self.ctx.name(), target = %self.plan.name, kind = failure.kind, error = %failure.message);
                warned = Some((now, failure.kind));
            }
            self.ctx.read_failed(failure.kind, &message);
            self.mark(false, &message);
            // The gap began with the last message heard, not when its end was noticed.
            lost_at.get_or_insert_with(|| self.last_heard.unwrap_or_else(engine::time::wall_clock_now));
            if synced {
                delays = self.backoff.delays();
            }
            // A refused connection is the cheapest failure there is and the
            // likeliest to end soon (a telemetry server restarting): retry
            // at the first delay every time, so the stream is back within
            // about that much of the server's return.
            let wait = if failure.refused {
                self.jitter(self.backoff.initial)
            } else {
                let delay = delays.next().unwrap_or(self.backoff.max);
                self.jitter(delay)
            };
            tokio::select! {
                biased;
                _ = ctx.shutdown() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// The notes of a target that is back after being lost since `since`:
    /// `reconnected`, so the daemon reads back the actions in effect on
    /// this switch (it may have restarted and lost them), and `gap`.
    pub(super) async fn reconnected(&self, since: i64) -> Result<(), Failure> {
        let now = engine::time::wall_clock_now();
        let secs = (now - since) as f64 / 1e9;
        let labels = Labels::from_pairs([("switch", self.plan.name.as_str())]);
        tracing::info!(message = "gNMI stream restored.", sensor = %self.ctx.name(), target = %self.plan.name, down_s = secs);
        let reconnected = Note {
            ts: now,
            kind: Note::RECONNECTED.into(),
            text: format!(
                "gNMI sensor reconnected to {} ({}) after {secs:.1} s; the actions in effect there are read back",
                self.plan.name, self.plan.client.address
            ),
            labels: labels.clone(),
        };
        let gap = Note {
            ts: now,
            kind: "gap".into(),
            text: format!(
                "gNMI stream from {} was down for {secs:.1} s; counters resume from their raw readings",
                self.plan.name
            ),
            labels,
        };
        self.ctx.send(Batch { samples: vec![], notes: vec![reconnected, gap] }).await.map_err(closed)
    }
}

/// Whether `address` answers as a TLS server does: to the HTTP/2 preface (which no TLS server
/// takes for a ClientHello) with a TLS alert record (content type 21, version 3.x). Bounded
/// by a second; anything else, a silence included, is "no".
pub(super) async fn speaks_tls(address: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = address.split_once("://").map_or(address, |(_, rest)| rest).trim_end_matches('/');
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.ok()?;
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).await.ok()?;
        Some(head == [0x15, 0x03])
    };
    matches!(tokio::time::timeout(Duration::from_secs(1), probe).await, Ok(Some(true)))
}

pub(super) fn closed(_: SensorError) -> Failure {
    Failure { kind: "closed", message: "the engine is gone".into(), refused: false }
}
