//! The running `sonic_redis` sensor: a session per connection to the switch's Redis, read
//! again from scratch after each reconnection.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{Batch, HealthState, Labels, Note, Sensor, SensorContext, SensorError};
use sonic::client::subscribe::Keyspace;
use sonic::client::{Db, DbError, Switch};
use sonic::layout::{db as dbs, read_password, DatabaseLayout};

use super::config::SonicRedisConfig;
use super::read::{self, Mapped, PollKeys, PORT_TABLE};
use crate::switch_series::{QueueFields, SwitchSeries, SwitchView};

/// The longest wait between two attempts to reach the switch's Redis (it restarts with the
/// database container: seconds).
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The first wait.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The most distinct bad fields logged as warnings; the rest are counted in the health only.
/// A switch whose every field is bad would otherwise write a warning per field per poll.
const MAX_WARNED_FIELDS: usize = 256;

/// The sensor (see the [module doc](super)).
#[derive(Debug)]
pub struct SonicRedisSensor {
    name: String,
    config: SonicRedisConfig,
}

impl SonicRedisSensor {
    /// The sensor `name` with validated `config` ([`SonicRedisConfig::build`]).
    pub(super) fn new(name: &str, config: SonicRedisConfig) -> SonicRedisSensor {
        SonicRedisSensor { name: name.to_string(), config }
    }
}

/// Why a session ended.
#[derive(Debug)]
enum End {
    /// Shutdown, or the engine is gone.
    Stop,
    /// The switch's Redis failed; the kind groups it in the health.
    Failed(&'static str, String),
}

impl From<DbError> for End {
    fn from(e: DbError) -> End {
        let kind = match &e {
            DbError::NotReady { .. } => "not-ready",
            DbError::Timeout { .. } => "timeout",
            DbError::Connect { .. } => "connect",
            DbError::SubscriptionEnded { .. } => "subscription",
            _ => "redis",
        };
        End::Failed(kind, e.to_string())
    }
}

/// One connection's state: the databases, the view that names what they hold, the keys.
struct Session {
    counters: Db,
    appl: Db,
    view: SwitchView,
    keys: PollKeys,
    keyspace: Option<Keyspace>,
}

/// What outlives sessions: the series, the last good poll, the fields already warned about.
struct Run<'a> {
    ctx: &'a SensorContext,
    config: &'a SonicRedisConfig,
    series: SwitchSeries,
    last_ok: Option<i64>,
    warned: BTreeSet<(String, String)>,
}

#[async_trait]
impl Sensor for SonicRedisSensor {
    fn name(&self) -> &str {
        &self.name
    }

    fn switches(&self) -> Vec<String> {
        vec![self.config.switch.clone()]
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let config = self.config;
        tracing::info!(message = "SONiC Redis sensor started.", sensor = %ctx.name(), switch = %config.switch, layout = %config.database_config.display());
        let mut run = Run {
            ctx: &ctx,
            config: &config,
            series: SwitchSeries::new(&config.switch),
            last_ok: None,
            warned: BTreeSet::new(),
        };
        let mut backoff = FIRST_BACKOFF;
        let mut lost_at: Option<i64> = None;
        loop {
            let end = match run.open().await {
                Ok(session) => {
                    backoff = FIRST_BACKOFF;
                    if let Some(since) = lost_at.take() {
                        run.reconnected(since).await;
                    }
                    run.serve(session).await
                }
                Err(end) => end,
            };
            let End::Failed(kind, message) = end else { return Ok(()) };
            tracing::warn!(message = "SONiC Redis sensor lost the switch.", sensor = %ctx.name(), switch = %config.switch, kind, error = %message);
            ctx.read_failed(kind, &message);
            ctx.set_state(HealthState::Degraded, &message);
            // The gap began at the last good poll, not when its end was noticed.
            lost_at.get_or_insert_with(|| run.last_ok.unwrap_or_else(engine::time::wall_clock_now));
            tokio::select! {
                biased;
                _ = ctx.shutdown() => return Ok(()),
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

impl Run<'_> {
    /// Connects, subscribes (before reading, so no change falls between) and builds the view.
    async fn open(&self) -> Result<Session, End> {
        let failed = |kind, e: sonic::LayoutError| End::Failed(kind, e.to_string());
        let layout = DatabaseLayout::load_or_standard(&self.config.database_config).map_err(|e| failed("layout", e))?;
        let password = read_password(&self.config.password_file).map_err(|e| failed("password", e))?;
        let switch = Switch::new(layout, password).with_timeout(self.config.timeout());
        let config_db = switch.database(dbs::CONFIG_DB).await?;
        let counters = switch.database(dbs::COUNTERS_DB).await?;
        let appl = switch.database(dbs::APPL_DB).await?;
        let keyspace = self.subscribe(&appl).await?;
        let tables = read::view_tables(&config_db, &counters).await?;
        let (view, problems) =
            SwitchView::build(&tables, self.config.pause_unit).map_err(|e| End::Failed("names", e.to_string()))?;
        for problem in &problems {
            tracing::warn!(message = "SONiC Redis sensor cannot name part of what it reads.", sensor = %self.ctx.name(), switch = %self.config.switch, problem = %problem);
        }
        if let Some(family) = view.family() {
            tracing::info!(message = "SONiC switch recognised.", sensor = %self.ctx.name(), switch = %self.config.switch, family = family.family.name(), conflict = ?family.conflict);
        }
        let keys = PollKeys::of(&view, &counters, &appl);
        Ok(Session { counters, appl, view, keys, keyspace })
    }

    /// The ON_CHANGE subscription, or `None` (polling only, said so) when the switch's Redis
    /// sends no keyspace notifications.
    async fn subscribe(&self, appl: &Db) -> Result<Option<Keyspace>, End> {
        let enabled = appl.keyspace_events_enabled().await.unwrap_or_else(|e| {
            tracing::warn!(message = "Cannot tell whether keyspace notifications are on; subscribing anyway.", sensor = %self.ctx.name(), error = %e);
            true
        });
        if !enabled {
            tracing::warn!(message = "The switch's Redis sends no keyspace notifications: port status and storms are read at each poll only.", sensor = %self.ctx.name(), switch = %self.config.switch);
            return Ok(None);
        }
        let patterns = [PORT_TABLE, sonic::watchdog::INSTORM_TABLE]
            .map(|t| format!("{}*", sonic::client::escape_glob(&appl.key(t, ""))));
        Ok(Some(appl.watch_patterns(&patterns).await?))
    }

    /// Polls every interval and reads what changes in between, until the session fails.
    async fn serve(&mut self, mut session: Session) -> End {
        let mut interval = tokio::time::interval(self.config.interval());
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let changed = async {
                match session.keyspace.as_mut() {
                    Some(keyspace) => keyspace.next().await,
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                biased;
                _ = self.ctx.shutdown() => return End::Stop,
                _ = interval.tick() => self.poll(&session).await,
                event = changed => match event {
                    Some(Ok(event)) => self.changed(&session, &event.table, &event.entry).await,
                    Some(Err(e)) => Err(e.into()),
                    None => Err(End::Failed("subscription", format!("{}: the keyspace subscription ended", session.appl.name()))),
                },
            };
            if let Err(end) = outcome {
                return end;
            }
        }
    }

    /// One poll: every counter hash in one transaction, then the port states.
    async fn poll(&mut self, session: &Session) -> Result<(), End> {
        let started = Instant::now();
        let counters = session.counters.hashes(&session.keys.counter_keys()).await?;
        let status_keys: Vec<String> = session.keys.status.iter().map(|(_, k)| k.clone()).collect();
        let status = session.appl.hashes(&status_keys).await?;
        let mapped = read::map_poll(&session.view, &session.keys, &counters, &status);
        self.send(mapped).await?;
        self.ctx.read_ok(started.elapsed());
        Ok(())
    }

    /// A keyspace notification of APPL_DB `table:entry`: the port's status, or its watchdog's
    /// queues, read and sent now.
    async fn changed(&mut self, session: &Session, table: &str, port: &str) -> Result<(), End> {
        let mut mapped = Mapped::default();
        if table == PORT_TABLE {
            let key = session.appl.key(PORT_TABLE, port);
            if let Some(entry) = session.appl.hash(&key).await? {
                read::map_status(port, &key, &entry, &mut mapped);
            }
        } else {
            let watchdog = QueueFields { watchdog: true, ..QueueFields::default() };
            let queues: Vec<&((String, u8), String)> =
                session.keys.queues.iter().filter(|((p, _), _)| p == port).collect();
            let keys: Vec<String> = queues.iter().map(|(_, k)| k.clone()).collect();
            let hashes = session.counters.hashes(&keys).await?;
            for (((port, position), key), hash) in queues.into_iter().zip(hashes) {
                if let Some(hash) = hash {
                    read::map_queue(&session.view, (port, *position), key, &hash, watchdog, &mut mapped);
                }
            }
        }
        self.send(mapped).await
    }

    /// The readings as samples stamped now; the bad fields counted and (once each) logged.
    async fn send(&mut self, mapped: Mapped) -> Result<(), End> {
        for (key, error) in &mapped.errors {
            let message = format!("{} {key} {}: {}", self.config.switch, error.field, error.problem);
            self.ctx.read_failed("field", &message);
            let new = self.warned.len() < MAX_WARNED_FIELDS && self.warned.insert((key.clone(), error.field.clone()));
            if new {
                tracing::warn!(message = "A field of the switch does not read; the rest of its entry is used.", sensor = %self.ctx.name(), error = %message);
            }
        }
        let now = engine::time::wall_clock_now();
        let mut samples = Vec::with_capacity(mapped.readings.len());
        if let Some(refused) = self.series.samples(self.ctx, &mapped.readings, now, &mut samples) {
            self.ctx.health().refused(self.ctx.name(), &refused.to_string());
        }
        self.last_ok = Some(now);
        match self.ctx.send_samples(samples).await {
            Ok(true) => Ok(()),
            Ok(false) | Err(_) => Err(End::Stop),
        }
    }

    /// The notes of a switch back after being lost since `since` (its last good poll):
    /// `reconnected`, so the daemon reads back what it set there, and `gap`, measured.
    async fn reconnected(&self, since: i64) {
        let now = engine::time::wall_clock_now();
        let text = gap_text(&self.config.switch, since, now);
        tracing::info!(message = "SONiC Redis sensor reached the switch again.", sensor = %self.ctx.name(), switch = %self.config.switch, gap = %text);
        self.ctx.set_state(HealthState::Up, "");
        let labels = Labels::from_pairs([("switch", self.config.switch.as_str())]);
        let note = |kind: &str, text: String| Note { ts: now, kind: kind.into(), text, labels: labels.clone() };
        let notes = vec![
            note(Note::RECONNECTED, format!("{text}; the actions in effect there are read back")),
            note("gap", format!("{text}; counters resume from their raw readings")),
        ];
        let _ = self.ctx.send(Batch { samples: Vec::new(), notes }).await;
    }
}

/// "switch X's Redis was not read for N s": from the last good read `since` to `now`.
pub fn gap_text(switch: &str, since: i64, now: i64) -> String {
    let secs = now.saturating_sub(since).max(0) as f64 / 1e9;
    format!("the Redis of switch {switch} was not read for {secs:.1} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_runs_from_the_last_good_read() {
        let s = 1_000_000_000;
        assert_eq!(gap_text("leaf01", 5 * s, 15 * s + s / 10), "the Redis of switch leaf01 was not read for 10.1 s");
        assert_eq!(gap_text("leaf01", 5 * s, 4 * s), "the Redis of switch leaf01 was not read for 0.0 s");
    }
}
