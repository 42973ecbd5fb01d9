//! The running `netlink_link` sensor: one rtnetlink subscription, re-made
//! with backoff when the socket fails, and a heartbeat while it lasts.
//!
//! A session sends, as batches stamped with the clock when they are built:
//!
//! - at once after subscribing (and after an overrun): every watched link,
//!   from a dump, so no link waits for a change or a beat to be seen;
//! - at once on each notification: the link's new state and its
//!   `link_transition` events;
//! - every `heartbeat`: every watched link's last state again (no events).
//!
//! Nothing is sent between sessions: when the socket fails, the beats stop
//! with it, and the rules find the links stale after their `stale_after`.
//! That is what stale means for this sensor: it is gone, not that nothing
//! changed.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{HealthState, Nanos, Sensor, SensorContext, SensorError};
use tokio::time::{Interval, MissedTickBehavior};

use super::config::NameFilter;
use super::source::{LinkSource, Notice, Rtnetlink};
use super::tracker::LinkTracker;

/// A session that ran this long before failing was healthy: the next
/// failure starts the backoff from its minimum again.
const HEALTHY_SESSION: Duration = Duration::from_secs(60);

/// Watches links over rtnetlink; built by
/// [`NetlinkLinkConfig::build`](super::NetlinkLinkConfig::build).
#[derive(Debug)]
pub struct NetlinkLinkSensor {
    name: String,
    filter: NameFilter,
    retry_min: Duration,
    retry_max: Duration,
    receive_buffer_bytes: usize,
    heartbeat: Option<Duration>,
    /// Stamps samples: the wall clock, or the tests' paused one.
    clock: fn() -> Nanos,
}

/// Why a subscription ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Shutdown was requested.
    Shutdown,
    /// The socket or a dump failed; `kind` groups it in the health report.
    Failed { kind: &'static str, error: String },
}

/// Waits for the next beat; never, when the heartbeat is off.
async fn beat_due(heartbeat: &mut Option<Interval>) {
    match heartbeat {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

impl NetlinkLinkSensor {
    /// A sensor of the links `filter` lets through, sending their state
    /// again every `heartbeat` (never when `None`).
    pub fn new(
        name: &str,
        filter: NameFilter,
        retry_min: Duration,
        retry_max: Duration,
        receive_buffer_bytes: usize,
        heartbeat: Option<Duration>,
    ) -> NetlinkLinkSensor {
        NetlinkLinkSensor {
            name: name.to_string(),
            filter,
            retry_min,
            retry_max,
            receive_buffer_bytes,
            heartbeat,
            clock: engine::time::wall_clock_now,
        }
    }

    /// How often every link's state is sent again; `None` when only
    /// changes are.
    pub fn heartbeat(&self) -> Option<Duration> {
        self.heartbeat
    }

    /// The retry delays of one run of failures: `retry_min`, doubling up to
    /// `retry_max`, without end.
    fn delays(&self) -> backon::ExponentialBackoff {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::new()
            .with_min_delay(self.retry_min)
            .with_max_delay(self.retry_max)
            .without_max_times()
            .build()
    }

    /// Dumps every link into the tracker and sends the result as one batch.
    async fn dump(
        &self,
        ctx: &SensorContext,
        source: &mut impl LinkSource,
        tracker: &mut LinkTracker,
    ) -> Result<Result<(), End>, SensorError> {
        let started = Instant::now();
        let readings = match source.dump().await {
            Ok(readings) => readings,
            Err(error) => return Ok(Err(End::Failed { kind: "dump", error: error.to_string() })),
        };
        let mut samples = Vec::new();
        if let Err(e) = tracker.resync(ctx, &readings, (self.clock)(), &mut samples) {
            self.series_failed(ctx, &e);
        }
        // Shutdown while the engine is behind: it may not read any more.
        if !ctx.send_samples(samples).await? {
            return Ok(Err(End::Shutdown));
        }
        ctx.read_ok(started.elapsed());
        Ok(Ok(()))
    }

    fn series_failed(&self, ctx: &SensorContext, error: &SensorError) {
        tracing::warn!(message = "Link not watched.", sensor = %self.name, %error);
        ctx.read_failed("series", &error.to_string());
    }

    /// One subscription: socket, then [`watch`](Self::watch). `Err` only
    /// when the engine is gone.
    async fn session(&self, ctx: &SensorContext, tracker: &mut LinkTracker) -> Result<End, SensorError> {
        match Rtnetlink::open(&self.name, self.receive_buffer_bytes) {
            Ok(mut source) => self.watch(ctx, tracker, &mut source).await,
            Err(error) => Ok(End::Failed { kind: "connect", error: error.to_string() }),
        }
    }

    /// A dump, then notifications and heartbeats until shutdown or until
    /// the source fails. `Err` only when the engine is gone.
    async fn watch(
        &self,
        ctx: &SensorContext,
        tracker: &mut LinkTracker,
        source: &mut impl LinkSource,
    ) -> Result<End, SensorError> {
        if let Err(end) = self.dump(ctx, source, tracker).await? {
            return Ok(end);
        }
        ctx.set_state(HealthState::Up, &format!("subscribed to RTNLGRP_LINK; watching {} links", tracker.len()));
        tracing::info!(message = "Watching links.", sensor = %self.name, links = ?tracker.names(), heartbeat_ms = self.heartbeat.map(|h| h.as_millis() as u64));

        // The first beat one period after the dump, which has just sent
        // every link. A beat late because the engine was slow to take the
        // last batch is not followed by a burst of them.
        let mut heartbeat = self.heartbeat.map(|period| {
            let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        });
        loop {
            // The beat before notifications: a link flapping without pause
            // must not keep the quiet links' beat from going out (and stale
            // them). It is ready once a period, and building it takes
            // microseconds, so it cannot hold notifications back.
            let notice = tokio::select! {
                biased;
                _ = ctx.shutdown() => return Ok(End::Shutdown),
                _ = beat_due(&mut heartbeat) => {
                    let mut samples = Vec::new();
                    tracker.heartbeat((self.clock)(), &mut samples);
                    if !ctx.send_samples(samples).await? {
                        return Ok(End::Shutdown);
                    }
                    continue;
                }
                notice = source.next() => notice,
            };
            let Some(notice) = notice else {
                return Ok(End::Failed { kind: "io", error: "the netlink socket failed (see the log)".into() });
            };
            match notice {
                Notice::Link(reading) => {
                    let started = Instant::now();
                    let mut samples = Vec::new();
                    if let Err(e) = tracker.observe(ctx, &reading, (self.clock)(), &mut samples) {
                        self.series_failed(ctx, &e);
                    }
                    if !ctx.send_samples(samples).await? {
                        return Ok(End::Shutdown);
                    }
                    ctx.read_ok(started.elapsed());
                }
                Notice::Deleted(index) => tracker.remove(index),
                Notice::Overrun => {
                    // Notifications were dropped; the counters in a fresh
                    // dump still hold every carrier change they carried.
                    tracing::warn!(message = "Netlink receive buffer overrun; re-reading all links.", sensor = %self.name);
                    ctx.read_failed("overrun", "netlink receive buffer overrun; links re-read");
                    if let Err(end) = self.dump(ctx, source, tracker).await? {
                        return Ok(end);
                    }
                }
                Notice::Other => {}
            }
        }
    }
}

#[async_trait]
impl Sensor for NetlinkLinkSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let mut tracker = LinkTracker::new(self.filter.clone());
        let mut delays = self.delays();
        loop {
            let started = Instant::now();
            match self.session(&ctx, &mut tracker).await? {
                End::Shutdown => return Ok(()),
                End::Failed { kind, error } => {
                    if started.elapsed() >= HEALTHY_SESSION {
                        delays = self.delays();
                    }
                    let backoff = delays.next().unwrap_or(self.retry_max);
                    tracing::warn!(message = "Link subscription failed; retrying.", sensor = %self.name, %error, retry_in_ms = backoff.as_millis() as u64);
                    ctx.read_failed(kind, &error);
                    ctx.set_state(HealthState::Degraded, &format!("{error}; retrying in {} ms", backoff.as_millis()));
                    tokio::select! {
                        biased;
                        _ = ctx.shutdown() => return Ok(()),
                        _ = tokio::time::sleep(backoff) => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use engine::{Batch, SeriesTable, MS, SECOND};
    use tokio::sync::{mpsc, watch};

    use super::super::source::SourceError;
    use super::super::tracker::LinkReading;
    use super::super::NetlinkLinkConfig;
    use super::*;

    thread_local! {
        /// When the running test started, on tokio's clock.
        static STARTED: Cell<Option<tokio::time::Instant>> = const { Cell::new(None) };
    }

    /// The tests' sample clock: time since the test started, on tokio's
    /// paused clock (a `#[tokio::test]` runs every task on its own thread).
    fn test_clock() -> Nanos {
        STARTED.with(|s| s.get().expect("the test started its clock").elapsed().as_nanos() as Nanos)
    }

    /// A source that dumps `links` and then hands out what the test sends.
    struct Scripted {
        links: Vec<LinkReading>,
        notices: mpsc::UnboundedReceiver<Notice>,
    }

    impl LinkSource for Scripted {
        async fn dump(&mut self) -> Result<Vec<LinkReading>, SourceError> {
            Ok(self.links.clone())
        }

        async fn next(&mut self) -> Option<Notice> {
            self.notices.recv().await
        }
    }

    /// A sample as `netdev metric{to} value`, sorted, for comparisons.
    type Row = (String, String, f64);

    /// The sensor's watch loop over a [`Scripted`] source.
    struct Harness {
        table: SeriesTable,
        batches: mpsc::Receiver<Batch>,
        notices: Option<mpsc::UnboundedSender<Notice>>,
        stop: watch::Sender<bool>,
        task: tokio::task::JoinHandle<Result<End, SensorError>>,
    }

    impl Harness {
        /// Starts the loop with `heartbeat` over the links `links` dumps.
        fn start(heartbeat: &str, links: Vec<LinkReading>) -> Harness {
            STARTED.with(|s| s.set(Some(tokio::time::Instant::now())));
            let heartbeat = humantime::parse_duration(heartbeat).unwrap();
            let config = NetlinkLinkConfig { heartbeat, ..NetlinkLinkConfig::default() };
            let mut sensor = config.build("netlink_link").unwrap();
            sensor.clock = test_clock;
            let table = SeriesTable::default();
            let (tx, batches) = mpsc::channel(64);
            let (stop, shutdown) = watch::channel(false);
            let ctx = SensorContext::new(table.clone(), "netlink_link", 100, tx, shutdown);
            let (notices, rx) = mpsc::unbounded_channel();
            let task = tokio::spawn(async move {
                let mut tracker = LinkTracker::new(sensor.filter.clone());
                sensor.watch(&ctx, &mut tracker, &mut Scripted { links, notices: rx }).await
            });
            Harness { table, batches, notices: Some(notices), stop, task }
        }

        fn send(&self, notice: Notice) {
            self.notices.as_ref().unwrap().send(notice).unwrap();
        }

        /// The next batch: when it came (test time), and its samples. Every
        /// sample must be stamped with that time.
        async fn next(&mut self) -> (Nanos, Vec<Row>) {
            let batch = self.batches.recv().await.expect("the loop sends");
            let at = test_clock();
            let reg = self.table.read();
            let mut rows: Vec<Row> = batch
                .samples
                .iter()
                .map(|s| {
                    assert_eq!(s.ts, at, "a sample stamped with when it was sent");
                    let labels = reg.labels(s.series);
                    let to = labels.get("to").map(|to| format!("{{to={to}}}")).unwrap_or_default();
                    (
                        labels.get("netdev").unwrap().to_string(),
                        format!("{}{to}", reg.metric_name(s.series)),
                        s.value.as_f64(),
                    )
                })
                .collect();
            rows.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (at, rows)
        }
    }

    /// The state rows of one link: down count, up count, operstate.
    fn state(netdev: &str, up: u32, down: u32, oper_up: bool) -> Vec<Row> {
        vec![
            (netdev.into(), "link_carrier_down_count".into(), f64::from(down)),
            (netdev.into(), "link_carrier_up_count".into(), f64::from(up)),
            (netdev.into(), "link_oper_up".into(), if oper_up { 1.0 } else { 0.0 }),
        ]
    }

    fn two_links() -> Vec<LinkReading> {
        vec![
            LinkReading::full(1, "lo", true, 0, 0),
            LinkReading::full(2, "eth0", true, 4, 3),
            LinkReading::full(3, "eth1", true, 1, 0),
        ]
    }

    #[tokio::test(start_paused = true)]
    async fn every_link_is_sent_at_once_then_again_every_heartbeat() {
        let mut h = Harness::start("1s", two_links());
        let everything = [state("eth0", 4, 3, true), state("eth1", 1, 0, true)].concat();
        assert_eq!(h.next().await, (0, everything.clone()), "the dump goes out at start, lo excluded");
        for beat in 1..=3 {
            assert_eq!(h.next().await, (beat * SECOND, everything.clone()), "beat {beat}: the same state, no events");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_goes_out_at_once_and_the_beat_keeps_its_time() {
        let mut h = Harness::start("1s", two_links());
        h.next().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        h.send(Notice::Link(LinkReading::full(2, "eth0", false, 4, 4)));
        let mut expected = state("eth0", 4, 4, false);
        expected.push(("eth0".into(), "link_transition{to=down}".into(), 0.0));
        assert_eq!(h.next().await, (300 * MS, expected), "the change, not held for the beat");
        // The beat stays on its period and carries the new state.
        let beat = [state("eth0", 4, 4, false), state("eth1", 1, 0, true)].concat();
        assert_eq!(h.next().await, (SECOND, beat));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deleted_link_leaves_the_heartbeat() {
        let mut h = Harness::start("500ms", two_links());
        h.next().await;
        h.send(Notice::Deleted(3));
        assert_eq!(h.next().await, (500 * MS, state("eth0", 4, 3, true)));
    }

    #[tokio::test(start_paused = true)]
    async fn with_the_heartbeat_off_only_changes_are_sent() {
        let mut h = Harness::start("0", two_links());
        assert_eq!(h.next().await.0, 0, "the dump still goes out at start");
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(h.batches.try_recv().is_err(), "nothing while nothing changes");
        h.send(Notice::Link(LinkReading::full(3, "eth1", true, 1, 0)));
        assert_eq!(h.next().await, (10 * SECOND, state("eth1", 1, 0, true)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_socket_stops_the_heartbeat() {
        let mut h = Harness::start("1s", two_links());
        h.next().await;
        h.next().await;
        h.notices = None;
        let end = (&mut h.task).await.unwrap().unwrap();
        assert!(matches!(end, End::Failed { kind: "io", .. }), "{end:?}");
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(h.batches.try_recv().is_err(), "no beat without a subscription: the links go stale");
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_ends_a_beat_the_engine_does_not_take() {
        let mut h = Harness::start("1s", two_links());
        h.next().await;
        // The engine stops reading: the channel fills with beats, the next
        // one waits for room, and shutdown must still end the loop.
        tokio::time::sleep(Duration::from_secs(100)).await;
        assert!(!h.task.is_finished());
        h.stop.send(true).unwrap();
        let end = tokio::time::timeout(Duration::from_secs(1), &mut h.task).await.expect("it ends").unwrap().unwrap();
        assert_eq!(end, End::Shutdown);
    }

    #[tokio::test(start_paused = true)]
    async fn an_overrun_sends_every_link_again_at_once() {
        let mut h = Harness::start("1s", two_links());
        h.next().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        h.send(Notice::Overrun);
        let everything = [state("eth0", 4, 3, true), state("eth1", 1, 0, true)].concat();
        assert_eq!(h.next().await, (200 * MS, everything));
    }
}
