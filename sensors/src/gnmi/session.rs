//! One session with a target: connect, find the path style (`auto`),
//! subscribe one stream per request prefix, each on a connection of its own
//! (sonic-gnmi ends a connection's Subscribe when a second one arrives on
//! it), then take what comes and beat the heartbeat until the connection
//! fails. A stream the target refuses, at once or in its first answer, is
//! counted and logged and the others go on.

use std::collections::BTreeSet;

use engine::Batch;
use futures_util::stream::{self, BoxStream, SelectAll, StreamExt};
use gnmi_proto::gnmi::subscribe_response::Response as SubResponse;
use gnmi_proto::gnmi::{Encoding, Notification, SubscribeResponse};
use gnmi_proto::sonic::{PathStyle, COUNTERS_DB};
use gnmi_proto::{ClientError, GnmiClient};
use tokio::time::{Instant, MissedTickBehavior};

use super::ingest::kind_of;
use super::mapping::OidNames;
use super::plan::{StreamPlan, StyleChoice};
use super::sensor::{closed, Failure, TargetTask};
use sonic::probe::{ProbeTarget, ProfileCache, StyleSetting};

/// The most samples in one batch: one batch is one message on the engine's
/// bounded channel, so this bounds what one message holds. A notification
/// with more readings goes out in several batches.
const MAX_BATCH_SAMPLES: usize = 16_384;

/// The first JSON value of a Get's answer (a `string_val` holding JSON text too).
fn first_json(response: &gnmi_proto::gnmi::GetResponse) -> Option<serde_json::Value> {
    response.notification.iter().flat_map(|n| &n.update).filter_map(|u| u.val.as_ref()).find_map(|val| {
        match gnmi_proto::value::to_json(val) {
            Some(Ok(json)) => Some(json),
            _ => gnmi_proto::value::to_text(val).ok().and_then(|t| serde_json::from_str(&t).ok()),
        }
    })
}

/// What names the priorities of a paused queue: CONFIG_DB's ports and QoS maps, COUNTERS_DB's
/// name maps (in this order; `read_view` reads them by position).
const VIEW_TABLES: [(&str, &str); 7] = [
    ("CONFIG_DB", "PORT"),
    ("CONFIG_DB", "PORT_QOS_MAP"),
    ("CONFIG_DB", "MAP_PFC_PRIORITY_TO_QUEUE"),
    (COUNTERS_DB, "COUNTERS_PORT_NAME_MAP"),
    (COUNTERS_DB, "COUNTERS_QUEUE_NAME_MAP"),
    (COUNTERS_DB, "COUNTERS_QUEUE_INDEX_MAP"),
    (COUNTERS_DB, "COUNTERS_QUEUE_TYPE_MAP"),
];

/// A JSON object of strings as a hash (other values left out).
fn entry_of(json: &serde_json::Value) -> sonic::client::Entry {
    let Some(object) = json.as_object() else { return Default::default() };
    object.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
}

/// A JSON object of objects as a table of hashes.
fn entries_of(json: &serde_json::Value) -> std::collections::BTreeMap<String, sonic::client::Entry> {
    let Some(object) = json.as_object() else { return Default::default() };
    object.iter().map(|(k, v)| (k.clone(), entry_of(v))).collect()
}

/// A stream as a log line names it.
fn stream_name(plan: &StreamPlan) -> String {
    match plan.list.prefix.as_ref() {
        Some(prefix) => format!("the stream of prefix {}", gnmi_proto::path_to_string(prefix)),
        None => format!("the stream of {} subscriptions without prefix", plan.list.subscription.len()),
    }
}

/// What the merged streams yield.
// `End` comes once per stream, `Message` for every response: boxing the
// large variant would allocate per message to save bytes on a rare one.
#[allow(clippy::large_enum_variant)]
enum Event {
    /// A response (or the error that ended) stream `i`.
    Message(usize, Result<SubscribeResponse, ClientError>),
    /// Stream `i` ended.
    End(usize),
}

/// Whether a probe's error means "not this way" rather than "not now":
/// the target answered with a status other than one of unavailability,
/// credentials or time.
fn refused(error: &ClientError) -> bool {
    use gnmi_proto::Code;
    // tonic's own failure to carry the call (the connection broke, the peer spoke no HTTP/2)
    // comes as a status too: no answer of the target's.
    if let ClientError::Status { status, .. } = error {
        if status.code() == Code::Unknown && status.message() == "transport error" {
            return false;
        }
    }
    error.code().is_some_and(|code| {
        !matches!(
            code,
            Code::Unavailable
                | Code::Unauthenticated
                | Code::DeadlineExceeded
                | Code::Cancelled
                | Code::ResourceExhausted
        )
    })
}

impl TargetTask {
    /// One session: `Ok` when the target ended a stream, `Err` when it
    /// failed. `synced` turns true once every stream has sent its initial
    /// values; `lost_at`, when the target was lost, is taken then.
    pub(super) async fn session(&mut self, synced: &mut bool, lost_at: &mut Option<i64>) -> Result<(), Failure> {
        let mut client = GnmiClient::connect(&self.plan.client).await?;
        let streams = self.streams(&mut client).await?;
        let (mut merged, mut unsynced, _clients) = self.subscribe(client, &streams).await?;
        // Streams the target refused in their first answer: their end is no failure.
        let mut refused_streams: BTreeSet<usize> = BTreeSet::new();
        let mut beat = self.heartbeat.map(|period| {
            let mut beat = tokio::time::interval_at(Instant::now() + period, period);
            beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
            beat
        });
        let mut last_message = Instant::now();
        loop {
            let stall_at = self.stall.map(|stall| last_message + stall);
            let beating = *synced && beat.is_some();
            tokio::select! {
                event = merged.next() => {
                    let (i, response) = match event {
                        None => return Ok(()),
                        Some(Event::End(i)) if refused_streams.contains(&i) => continue,
                        Some(Event::End(i)) => return Err(self.ended(&streams[i])),
                        Some(Event::Message(i, Err(e))) if refused(&e) && !refused_streams.contains(&i) => {
                            self.refused(&stream_name(&streams[i]), &e);
                            refused_streams.insert(i);
                            unsynced.remove(&i);
                            if refused_streams.len() == streams.len() {
                                return Err(e.into());
                            }
                            if unsynced.is_empty() && !*synced {
                                *synced = true;
                                self.mark(true, "");
                                if let Some(since) = lost_at.take() {
                                    self.reconnected(since).await?;
                                }
                            }
                            continue;
                        }
                        Some(Event::Message(i, response)) => (i, response?),
                    };
                    last_message = Instant::now();
                    self.last_heard = Some(engine::time::wall_clock_now());
                    match response.response {
                        Some(SubResponse::SyncResponse(true)) => {
                            unsynced.remove(&i);
                            if unsynced.is_empty() && !*synced {
                                *synced = true;
                                self.mark(true, "");
                                if let Some(since) = lost_at.take() {
                                    self.reconnected(since).await?;
                                }
                            }
                        }
                        Some(SubResponse::Update(notification)) => self.ingest(&streams[i], notification).await?,
                        #[allow(deprecated)]
                        Some(SubResponse::Error(e)) => {
                            let message = format!("target error {}: {}", e.code, e.message);
                            return Err(Failure { kind: "stream", message, refused: false });
                        }
                        _ => {}
                    }
                }
                _ = async { tokio::time::sleep_until(stall_at.unwrap_or(last_message)).await }, if stall_at.is_some() => {
                    let message = format!("no message for {:?}", self.stall.unwrap_or_default());
                    return Err(Failure { kind: "timeout", message, refused: false });
                }
                _ = async { if let Some(beat) = beat.as_mut() { beat.tick().await; } }, if beating => {
                    let samples = self.memory.beat(engine::time::wall_clock_now());
                    if !samples.is_empty() {
                        self.ctx.send(Batch { samples, notes: vec![] }).await.map_err(closed)?;
                    }
                }
            }
        }
    }

    /// The streams of this session: those of the target's path style
    /// (found now when `auto` has not found it yet), and in the
    /// `sonic-db-origin` style those of the ports and queues its OID name
    /// maps list.
    async fn streams(&mut self, client: &mut GnmiClient) -> Result<Vec<StreamPlan>, Failure> {
        let style = match &self.style {
            Some(style) => style.clone(),
            None => self.detect().await?,
        };
        let mut streams: Vec<StreamPlan> = self.plan.streams(&style).to_vec();
        if let (PathStyle::SonicDbOrigin { .. }, Some(oids)) = (&style, &self.plan.oids) {
            let updates_only = streams.iter().any(|s| s.list.updates_only);
            match self.read_oids(client, &style).await {
                Ok(names) => {
                    streams.extend(oids.stream(&names, &style, updates_only));
                    self.oids = names;
                }
                Err(e) if refused(&e) => self.refused("the OID name maps", &e),
                Err(e) => return Err(e.into()),
            }
        }
        if style == PathStyle::PrefixTarget {
            match self.read_aliases(client, &style).await {
                Ok(aliases) => self.oids.aliases = aliases,
                Err(e) if refused(&e) => self.refused("CONFIG_DB PORT (the port aliases)", &e),
                Err(e) => return Err(e.into()),
            }
        }
        self.oids.view = self.read_view(client, &style).await?.map(std::sync::Arc::new);
        if !streams.iter().any(|s| s.list.updates_only) {
            self.memory.forget_beats();
        }
        Ok(streams)
    }

    /// Subscribes to every stream, merged into one; the streams not yet
    /// synced. One stream refused (a preset the switch does not serve)
    /// costs only itself; the session fails when none is left.
    /// Subscribes each stream on a connection of its own (the first on `client`); the
    /// connections are returned to be kept for the session.
    async fn subscribe(
        &self,
        client: GnmiClient,
        streams: &[StreamPlan],
    ) -> Result<(SelectAll<BoxStream<'static, Event>>, BTreeSet<usize>, Vec<GnmiClient>), Failure> {
        let mut merged: SelectAll<BoxStream<'static, Event>> = SelectAll::new();
        let mut unsynced: BTreeSet<usize> = BTreeSet::new();
        let mut last_refusal = None;
        let mut first = Some(client);
        let mut clients = Vec::with_capacity(streams.len());
        for (i, plan) in streams.iter().enumerate() {
            let mut client = match first.take() {
                Some(client) => client,
                None => GnmiClient::connect(&self.plan.client).await?,
            };
            let subscribed = client.subscribe(plan.list.clone()).await;
            clients.push(client);
            let subscription = match subscribed {
                Ok(subscription) => subscription,
                Err(e) if refused(&e) => {
                    self.refused(&stream_name(plan), &e);
                    last_refusal = Some(e);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let messages = subscription.into_stream().map(move |r| Event::Message(i, r));
            merged.push(messages.chain(stream::once(async move { Event::End(i) })).boxed());
            unsynced.insert(i);
        }
        match (unsynced.is_empty(), last_refusal) {
            (true, Some(e)) => Err(e.into()),
            _ => Ok((merged, unsynced, clients)),
        }
    }

    /// The failure of a stream the target ended.
    fn ended(&self, stream: &StreamPlan) -> Failure {
        let prefix = stream.list.prefix.as_ref().map(gnmi_proto::path_to_string);
        let message = format!(
            "{} ended the stream of prefix {}",
            self.plan.client.address,
            prefix.as_deref().unwrap_or("(none)")
        );
        Failure { kind: "stream", message, refused: false }
    }

    /// A request the switch refused while others may go on: counted
    /// (`subscribe`) and logged.
    fn refused(&self, what: &str, error: &ClientError) {
        let message = format!("target {}: {what} was refused: {error}", self.plan.name);
        self.ctx.read_failed("subscribe", &message);
        tracing::warn!(message = "gNMI request refused.", sensor = %self.ctx.name(), target = %self.plan.name, what, %error);
    }

    /// `COUNTERS_PORT_NAME_MAP` and `COUNTERS_QUEUE_NAME_MAP`, as far as
    /// the OID plan needs them.
    /// CONFIG_DB `PORT`'s aliases (alias → SONiC name): sonic-gnmi keys its virtual paths by
    /// them. A table that does not read is counted (`parse`) and leaves the keys as they come.
    async fn read_aliases(
        &self,
        client: &mut GnmiClient,
        style: &PathStyle,
    ) -> Result<std::collections::HashMap<String, String>, ClientError> {
        let json = self.get_table(client, style, "CONFIG_DB", "PORT").await?;
        let mut names = OidNames::default();
        if let Err(e) = names.add_aliases(&json) {
            self.ctx.read_failed("parse", &format!("target {}: {e}", self.plan.name));
            tracing::warn!(message = "The port aliases do not read; series are labelled as the switch keys them.", sensor = %self.ctx.name(), target = %self.plan.name, error = %e);
        }
        Ok(names.aliases)
    }

    /// One table (or map) of `db` as JSON, by a Get.
    async fn get_table(
        &self,
        client: &mut GnmiClient,
        style: &PathStyle,
        db: &str,
        table: &str,
    ) -> Result<serde_json::Value, ClientError> {
        let (prefix, path) = style.request(db, &[table]);
        let response = client.get(prefix, vec![path], Encoding::JsonIetf).await?;
        Ok(first_json(&response).unwrap_or_default())
    }

    /// The QoS and queue maps that say which priorities a queue's pause status is about, when
    /// the sensor maps pause status (`sonic_queues`). A table the switch refuses leaves the
    /// view out (`None`: queue *q* is priority *q*), logged; a failure is a failure.
    async fn read_view(
        &self,
        client: &mut GnmiClient,
        style: &PathStyle,
    ) -> Result<Option<crate::switch_series::SwitchView>, Failure> {
        use crate::switch_series::{SwitchView, ViewTables};
        if !self.plan.reads_queues() {
            return Ok(None);
        }
        let mut json = Vec::new();
        for (db, table) in VIEW_TABLES {
            match self.get_table(client, style, db, table).await {
                Ok(j) => json.push(j),
                Err(e) if refused(&e) => {
                    // Not an error of the sensor: the pause status is then read as SONiC's
                    // image maps it (queue q for lossless priority q), and said so.
                    tracing::warn!(message = "The switch does not serve its QoS maps over gNMI; a paused queue q is taken for priority q.", sensor = %self.ctx.name(), target = %self.plan.name, table = %format!("{db} {table}"), error = %e);
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            }
        }
        let maps = |j: &serde_json::Value| entry_of(j);
        let name_maps = sonic::NameMaps {
            ports: maps(&json[3]),
            queues: maps(&json[4]),
            queue_index: maps(&json[5]),
            queue_type: maps(&json[6]),
            queue_port: Default::default(),
        };
        let tables = ViewTables {
            ports: Some(entries_of(&json[0])),
            port_qos: Some(entries_of(&json[1])),
            pfc_maps: Some(entries_of(&json[2])),
            name_maps: Some(name_maps),
            ..ViewTables::default()
        };
        match SwitchView::build(&tables, Default::default()) {
            Ok((view, problems)) => {
                for p in problems {
                    tracing::warn!(message = "Part of the switch's QoS maps does not read.", sensor = %self.ctx.name(), target = %self.plan.name, problem = %p);
                }
                Ok(Some(view))
            }
            Err(e) => {
                self.ctx.read_failed("parse", &format!("target {}: {e}", self.plan.name));
                Ok(None)
            }
        }
    }

    async fn read_oids(&self, client: &mut GnmiClient, style: &PathStyle) -> Result<OidNames, ClientError> {
        let Some(plan) = &self.plan.oids else { return Ok(OidNames::default()) };
        let mut names = OidNames { queue_fields: plan.queue_fields, ..OidNames::default() };
        let maps =
            [("COUNTERS_PORT_NAME_MAP", plan.ports.is_some()), ("COUNTERS_QUEUE_NAME_MAP", plan.queues.is_some())];
        for (table, wanted) in maps {
            if !wanted {
                continue;
            }
            let (prefix, path) = style.request(COUNTERS_DB, &[table]);
            let response = client.get(prefix, vec![path], Encoding::JsonIetf).await?;
            let json = first_json(&response).unwrap_or_default();
            let read = if table == "COUNTERS_PORT_NAME_MAP" { names.add_ports(&json) } else { names.add_queues(&json) };
            if let Err(e) = read {
                self.ctx.read_failed("parse", &format!("target {}: {e}", self.plan.name));
            }
        }
        Ok(names)
    }

    /// `auto`: the switch's profile from the process's probe cache
    /// ([`sonic::probe::ProfileCache::global`]), the one the switch
    /// actuators read too, so the sensor and every actuator address the
    /// switch alike (origin `sonic-db` with the instance element when the
    /// switch serves it, else prefix target). Kept for good once found. A
    /// switch the probe cannot place (it serves neither style, its ports do
    /// not read) gets `prefix-target` for this session, with a warning, and
    /// the next session probes again; an unreachable one ends the session.
    async fn detect(&mut self) -> Result<PathStyle, Failure> {
        let (sensor, target) = (self.ctx.name().to_string(), self.plan.name.clone());
        let instance = match &self.plan.style {
            StyleChoice::Auto { namespace: Some(namespace) } => namespace.clone(),
            _ => sonic::probe::LOCALHOST.to_string(),
        };
        let probe =
            ProbeTarget::new(target.clone(), self.plan.client.clone()).style(StyleSetting::Auto).instance(instance);
        match ProfileCache::global().profile(&probe).await {
            Ok(profile) => {
                let style = profile.reads.clone();
                tracing::info!(message = "gNMI path style found.", sensor = %sensor, target = %target, path_style = style.name());
                self.style = Some(style.clone());
                Ok(style)
            }
            Err(e) if e.is_transient() => Err(Failure { kind: "connect", refused: false, message: e.to_string() }),
            Err(e) => {
                tracing::warn!(
                    message = "No gNMI path style answered the probe; trying prefix-target.",
                    sensor = %sensor,
                    target = %target,
                    error = %e,
                );
                Ok(PathStyle::PrefixTarget)
            }
        }
    }

    /// Maps a notification, sends its samples, counts and logs what did not
    /// map.
    async fn ingest(&mut self, stream: &StreamPlan, notification: Notification) -> Result<(), Failure> {
        let started = std::time::Instant::now();
        let (mut samples, problems) = self.memory.ingest(&self.ctx, &self.plan.name, stream, &self.oids, &notification);
        for problem in &problems {
            let kind = kind_of(&problem.error);
            self.ctx.read_failed(kind, &format!("target {}: {}", self.plan.name, problem.error));
            self.warnings.warn(self.ctx.name(), &self.plan.name, problem);
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
