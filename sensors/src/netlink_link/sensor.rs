//! The running `netlink_link` sensor: one rtnetlink subscription, re-made
//! with backoff when the socket fails.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{Batch, HealthState, Sample, Sensor, SensorContext, SensorError};
use futures_util::StreamExt;
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use rtnetlink::packet_route::RouteNetlinkMessage;
use rtnetlink::sys::AsyncSocket;
use rtnetlink::{Handle, MulticastGroup};

use super::config::NameFilter;
use super::tracker::{LinkReading, LinkTracker};

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
}

/// Why a subscription ended.
enum End {
    /// Shutdown was requested.
    Shutdown,
    /// The socket or a dump failed; `kind` groups it in the health report.
    Failed { kind: &'static str, error: String },
}

/// Aborts the connection task when the session ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl NetlinkLinkSensor {
    /// A sensor of the links `filter` lets through.
    pub fn new(
        name: &str,
        filter: NameFilter,
        retry_min: Duration,
        retry_max: Duration,
        receive_buffer_bytes: usize,
    ) -> NetlinkLinkSensor {
        NetlinkLinkSensor { name: name.to_string(), filter, retry_min, retry_max, receive_buffer_bytes }
    }

    /// Sends `samples` as one batch, if there are any.
    async fn send(ctx: &SensorContext, samples: Vec<Sample>) -> Result<(), SensorError> {
        if samples.is_empty() {
            return Ok(());
        }
        ctx.send(Batch { samples, notes: Vec::new() }).await
    }

    /// Dumps every link into the tracker and sends the result as one batch.
    async fn dump(
        &self,
        ctx: &SensorContext,
        handle: &Handle,
        tracker: &mut LinkTracker,
    ) -> Result<Result<(), End>, SensorError> {
        let started = Instant::now();
        let mut links = handle.link().get().execute();
        let mut readings = Vec::new();
        while let Some(link) = links.next().await {
            match link {
                Ok(message) => readings.push(LinkReading::from_message(&message)),
                Err(e) => return Ok(Err(End::Failed { kind: "dump", error: format!("dumping links: {e}") })),
            }
        }
        let ts = engine::time::wall_clock_now();
        let mut samples = Vec::new();
        if let Err(e) = tracker.resync(ctx, &readings, ts, &mut samples) {
            self.series_failed(ctx, &e);
        }
        Self::send(ctx, samples).await?;
        ctx.read_ok(started.elapsed());
        Ok(Ok(()))
    }

    fn series_failed(&self, ctx: &SensorContext, error: &SensorError) {
        tracing::warn!(message = "Link not watched.", sensor = %self.name, %error);
        ctx.read_failed("series", &error.to_string());
    }

    /// One subscription: socket, dump, then notifications until shutdown
    /// or failure. `Err` only when the engine is gone.
    async fn session(&self, ctx: &SensorContext, tracker: &mut LinkTracker) -> Result<End, SensorError> {
        let (mut connection, handle, mut messages) = match rtnetlink::new_multicast_connection(&[MulticastGroup::Link])
        {
            Ok(parts) => parts,
            Err(e) => return Ok(End::Failed { kind: "connect", error: format!("opening the netlink socket: {e}") }),
        };
        if let Err(e) = connection.socket_mut().socket_mut().set_rx_buf_sz(self.receive_buffer_bytes) {
            // Not fatal: the default buffer works, it only overruns sooner.
            tracing::warn!(message = "Could not size the netlink receive buffer.", sensor = %self.name, bytes = self.receive_buffer_bytes, error = %e);
        }
        let _connection = AbortOnDrop(tokio::spawn(connection));

        // Subscribed before dumping: a change between the two shows up as a
        // notification, and the counters make a repeat harmless.
        if let Err(end) = self.dump(ctx, &handle, tracker).await? {
            return Ok(end);
        }
        ctx.set_state(HealthState::Up, &format!("subscribed to RTNLGRP_LINK; watching {} links", tracker.len()));
        tracing::info!(message = "Watching links.", sensor = %self.name, links = ?tracker.names());

        loop {
            let message = tokio::select! {
                biased;
                _ = ctx.shutdown() => return Ok(End::Shutdown),
                message = messages.next() => message,
            };
            let Some((message, _)) = message else {
                return Ok(End::Failed { kind: "io", error: "the netlink socket failed (see the log)".into() });
            };
            let NetlinkMessage { payload, .. } = message;
            match payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) => {
                    let started = Instant::now();
                    let ts = engine::time::wall_clock_now();
                    let mut samples = Vec::new();
                    if let Err(e) = tracker.observe(ctx, &LinkReading::from_message(&link), ts, &mut samples) {
                        self.series_failed(ctx, &e);
                    }
                    Self::send(ctx, samples).await?;
                    ctx.read_ok(started.elapsed());
                }
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelLink(link)) => {
                    tracker.remove(link.header.index);
                }
                NetlinkPayload::Overrun(_) => {
                    // Notifications were dropped; the counters in a fresh
                    // dump still hold every carrier change they carried.
                    tracing::warn!(message = "Netlink receive buffer overrun; re-reading all links.", sensor = %self.name);
                    ctx.read_failed("overrun", "netlink receive buffer overrun; links re-read");
                    if let Err(end) = self.dump(ctx, &handle, tracker).await? {
                        return Ok(end);
                    }
                }
                _ => {}
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
        let mut backoff = self.retry_min;
        loop {
            let started = Instant::now();
            match self.session(&ctx, &mut tracker).await? {
                End::Shutdown => return Ok(()),
                End::Failed { kind, error } => {
                    if started.elapsed() >= HEALTHY_SESSION {
                        backoff = self.retry_min;
                    }
                    tracing::warn!(message = "Link subscription failed; retrying.", sensor = %self.name, %error, retry_in_ms = backoff.as_millis() as u64);
                    ctx.read_failed(kind, &error);
                    ctx.set_state(HealthState::Degraded, &format!("{error}; retrying in {} ms", backoff.as_millis()));
                    tokio::select! {
                        biased;
                        _ = ctx.shutdown() => return Ok(()),
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(self.retry_max);
                }
            }
        }
    }
}
