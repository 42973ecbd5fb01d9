//! How the switch actuators reach a switch's CONFIG_DB, COUNTERS_DB and STATE_DB: over its gNMI, as
//! sonic-gnmi serves and accepts it ([`GnmiTransport`]), or over its own Redis, for rocemend
//! running on the switch itself ([`RedisTransport`]). Both read and write the same way, so the
//! actuators above them do not know which they have:
//!
//! | | gNMI | the switch's Redis |
//! |---|---|---|
//! | reads | the probed style ([`sonic::probe`]), "absent" only on sonic-gnmi's words | `EXISTS 0` only |
//! | writes | origin `sonic-db` `/CONFIG_DB/<instance>/…` ([`sonic::gnmi::write`]) | one `MULTI` ([`sonic::ConfigDb::apply`]) |
//! | a replace | two Sets: the entry deleted, then written | `DEL` then `HSET` |
//! | port names | CONFIG_DB `PORT` from the probe, aliases resolved | CONFIG_DB `PORT`, aliases resolved |
//! | can it be written | the probe's write check, known at start | the socket's permissions, at the first write |

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::ActuatorError;
use gnmi_proto::sonic::PathStyle;
use gnmi_proto::{ClientConfig, GnmiClient, TlsConfig};
use sonic::client::{Change, Entry};
use sonic::gnmi::{write, GnmiError, SwitchGnmi};
use sonic::layout::db::{CONFIG_DB, COUNTERS_DB, STATE_DB};
use sonic::names::queues::{COUNTERS, QUEUE_NAME_MAP};
use sonic::probe::{ProbeError, ProbeTarget, ProfileCache, StyleSetting, SwitchProfile, WriteAccess};
use sonic::{DbError, NameError, PortNames};

use super::PathStyleSetting;

/// One queue's record in COUNTERS_DB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRecord {
    /// Its name, `<port>:<index>` (`Ethernet4:3`).
    pub name: String,
    /// Its object id.
    pub oid: String,
    /// Its counters hash, orchagent's `PFC_WD_*` fields among them.
    pub counters: Entry,
}

/// A switch's CONFIG_DB and COUNTERS_DB, reached one way or another.
#[async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// `gNMI` or `Redis`.
    fn kind(&self) -> &'static str;

    /// Where the switch is reached (`10.0.0.10:8080`, `/var/run/redis/redis.sock`).
    fn address(&self) -> &str;

    /// What the switch is, found now (its gNMI probed, its Redis opened): one line for logs and
    /// `check --probe`; an error when it cannot be written, or not read.
    async fn check(&self) -> Result<String, ActuatorError>;

    /// The SONiC name of port `given`: itself when it is a port's name, the port it is the
    /// alias of otherwise (CONFIG_DB `PORT|<name>` `alias`); an error when neither.
    async fn port_name(&self, given: &str) -> Result<String, ActuatorError>;

    /// Every field of CONFIG_DB `table|key`; `None` only when the switch positively says the
    /// entry is absent.
    async fn entry(&self, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError>;

    /// Every field of STATE_DB `table|key` (what the switch says it is and can do:
    /// `SWITCH_CAPABILITY|switch`); `None` only when the switch says the entry is absent.
    async fn state_entry(&self, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError>;

    /// The keys of CONFIG_DB `table`'s entries (empty: the table has none).
    async fn table_keys(&self, table: &str) -> Result<Vec<String>, ActuatorError>;

    /// The texts of what [`Transport::apply`] sends for `changes`, in order.
    fn describe(&self, changes: &[Change]) -> Result<Vec<String>, ActuatorError>;

    /// Applies `changes` to CONFIG_DB; the texts of what was sent.
    async fn apply(&self, changes: &[Change]) -> Result<Vec<String>, ActuatorError>;

    /// Every queue of `port` in COUNTERS_DB (`COUNTERS_QUEUE_NAME_MAP` `<port>:<n>`) with its
    /// counters hash; a queue without a hash is left out.
    async fn queues(&self, port: &str) -> Result<Vec<QueueRecord>, ActuatorError>;
}

/// Resolves `given` among `ports`.
fn resolve(switch: &str, ports: &PortNames, given: &str) -> Result<String, ActuatorError> {
    match ports.resolve(given) {
        Ok(name) => {
            if name != given {
                tracing::info!(message = "Port alias mapped to its SONiC name.", %switch, alias = given, port = name);
            }
            Ok(name.to_string())
        }
        Err(e @ NameError::UnknownPort(_)) => Err(ActuatorError::Invalid(format!("switch {switch}: {e}"))),
        Err(e) => Err(ActuatorError::Failed(format!("switch {switch}: {e}"))),
    }
}

/// The queue names `<port>:<n>` of `map` (`COUNTERS_QUEUE_NAME_MAP`), by index, with their oids.
fn port_queues(map: &Entry, port: &str) -> Vec<(String, String)> {
    let prefix = format!("{port}:");
    let mut queues: Vec<(u32, String, String)> = map
        .iter()
        .filter_map(|(name, oid)| {
            let index = name.strip_prefix(&prefix)?.parse::<u32>().ok()?;
            Some((index, name.clone(), oid.clone()))
        })
        .collect();
    queues.sort();
    queues.into_iter().map(|(_, name, oid)| (name, oid)).collect()
}

/// A switch's gNMI, as sonic-gnmi serves it: probed once ([`ProfileCache::global`], shared with
/// the gNMI sensor), read in the probed style, written as origin `sonic-db`. A connection per
/// call: actions are rare, and a cached channel would outlive a restart of the switch's
/// telemetry container.
#[derive(Clone)]
pub struct GnmiTransport {
    switch: String,
    config: ClientConfig,
    style: StyleSetting,
    instance: String,
    profiles: &'static ProfileCache,
}

impl std::fmt::Debug for GnmiTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("GnmiTransport")
            .field("switch", &self.switch)
            .field("address", &self.config.address)
            .field("tls", &self.config.tls.is_some())
            .field("style", &self.style)
            .field("instance", &self.instance)
            .finish()
    }
}

impl GnmiTransport {
    /// Switch `switch` at `address`, its reads addressed as `style`, its writes under
    /// `instance` (`localhost`, `asicN`).
    pub fn new(
        switch: &str,
        address: &str,
        credentials: Option<(String, String)>,
        tls: Option<TlsConfig>,
        style: PathStyleSetting,
        instance: &str,
        timeout: Duration,
    ) -> Self {
        let config = ClientConfig { address: address.to_string(), tls, credentials, connect_timeout: timeout, timeout };
        let style = match style {
            PathStyleSetting::Auto => StyleSetting::Auto,
            PathStyleSetting::PrefixTarget => StyleSetting::PrefixTarget,
            PathStyleSetting::SonicDbOrigin => StyleSetting::SonicDb,
        };
        GnmiTransport {
            switch: switch.to_string(),
            config,
            style,
            instance: instance.to_string(),
            profiles: ProfileCache::global(),
        }
    }

    fn target(&self) -> ProbeTarget {
        ProbeTarget::new(self.switch.clone(), self.config.clone())
            .style(self.style)
            .instance(self.instance.clone())
            .check_writes(true)
    }

    /// The switch's profile (cached), or why there is none.
    async fn profile(&self) -> Result<Arc<SwitchProfile>, ActuatorError> {
        self.profiles.profile(&self.target()).await.map_err(|e| probe_error(&e))
    }

    /// A client in the profile's read style.
    async fn connect(&self, profile: &SwitchProfile) -> Result<SwitchGnmi, ActuatorError> {
        let client = match GnmiClient::connect(&self.config).await {
            Ok(client) => client,
            Err(source) => {
                // A TLS mismatch named as such, not "operation was canceled".
                let address = &self.config.address;
                let hint = sonic::gnmi::transport::diagnose(address, self.config.tls.is_some(), &source).await;
                return Err(gnmi_error(GnmiError::Call { what: format!("connect to {address}"), source, hint }));
            }
        };
        Ok(SwitchGnmi::new(client, self.config.tls.is_some(), profile.reads.clone(), profile.instance.clone()))
    }

    /// The read style shown in plans before the switch was probed.
    pub fn reads(&self) -> PathStyle {
        match self.profiles.cached(&self.switch) {
            Some(profile) => profile.reads.clone(),
            None => PathStyle::SonicDbOrigin { namespace: Some(self.instance.clone()) },
        }
    }
}

/// A probe's failure as the engine treats it: an unreachable switch is retried; one that does
/// not serve SONiC's databases as configured is not supported until someone changes it.
fn probe_error(e: &ProbeError) -> ActuatorError {
    if e.is_transient() {
        ActuatorError::Failed(format!("{e}; nothing was changed"))
    } else {
        ActuatorError::NotSupported(e.to_string())
    }
}

/// A gNMI call's failure as the engine treats it: the switch never answered → retried; a
/// refused write gate → not supported (the switch's settings must change); a refused value
/// or path → invalid (the same request is refused again); anything else → failed, retried.
fn gnmi_error(e: GnmiError) -> ActuatorError {
    if let Some(gate) = e.write_gate() {
        return ActuatorError::NotSupported(format!("{e}; {}", gate.remedy()));
    }
    if e.is_transport() {
        return ActuatorError::Failed(format!("{e}; nothing was changed"));
    }
    match e.code() {
        Some(tonic::Code::InvalidArgument | tonic::Code::NotFound) => ActuatorError::Invalid(e.to_string()),
        // sonic-gnmi hands back every native-write error as UNKNOWN; the config updater's
        // refusal of the result (a range, a leafref) is told by its words, and is refused again.
        Some(tonic::Code::Unknown) if e.config_refused() => ActuatorError::Invalid(e.to_string()),
        _ => ActuatorError::Failed(e.to_string()),
    }
}

#[async_trait]
impl Transport for GnmiTransport {
    fn kind(&self) -> &'static str {
        "gNMI"
    }

    fn address(&self) -> &str {
        &self.config.address
    }

    async fn check(&self) -> Result<String, ActuatorError> {
        let profile = self.profiles.reprobe(&self.target()).await.map_err(|e| probe_error(&e))?;
        if let WriteAccess::Refused(gate) = profile.writes {
            return Err(ActuatorError::NotSupported(format!(
                "switch {} cannot be written: \"{}\"; {}",
                self.switch,
                gate.text(),
                gate.remedy()
            )));
        }
        Ok(profile.summary())
    }

    async fn port_name(&self, given: &str) -> Result<String, ActuatorError> {
        let profile = self.profile().await?;
        resolve(&self.switch, &profile.ports, given)
    }

    async fn entry(&self, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        let profile = self.profile().await?;
        let mut gnmi = self.connect(&profile).await?;
        gnmi.entry(CONFIG_DB, table, key).await.map_err(gnmi_error)
    }

    async fn state_entry(&self, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        let profile = self.profile().await?;
        let mut gnmi = self.connect(&profile).await?;
        gnmi.entry(STATE_DB, table, key).await.map_err(gnmi_error)
    }

    async fn table_keys(&self, table: &str) -> Result<Vec<String>, ActuatorError> {
        let profile = self.profile().await?;
        let mut gnmi = self.connect(&profile).await?;
        Ok(gnmi.table(CONFIG_DB, table).await.map_err(gnmi_error)?.into_keys().collect())
    }

    fn describe(&self, changes: &[Change]) -> Result<Vec<String>, ActuatorError> {
        let sets = write::sets(&self.instance, changes).map_err(|e| ActuatorError::Invalid(e.to_string()))?;
        Ok(sets
            .into_iter()
            .map(|s| format!("gNMI Set to {} ({}): {}", self.switch, self.config.address, s.text))
            .collect())
    }

    async fn apply(&self, changes: &[Change]) -> Result<Vec<String>, ActuatorError> {
        let texts = self.describe(changes)?;
        let profile = self.profile().await?;
        if let WriteAccess::Refused(gate) = profile.writes {
            // Known since the probe: nothing is sent.
            return Err(ActuatorError::NotSupported(format!(
                "switch {} cannot be written: \"{}\"; {}",
                self.switch,
                gate.text(),
                gate.remedy()
            )));
        }
        let sets = write::sets(&profile.instance, changes).map_err(|e| ActuatorError::Invalid(e.to_string()))?;
        let mut gnmi = self.connect(&profile).await?;
        for (n, set) in sets.iter().enumerate() {
            tracing::info!(message = "Sending gNMI Set.", switch = %self.switch, request = %set.text);
            if let Err(e) = gnmi.set(set).await {
                if e.write_gate().is_some() {
                    // The switch was reconfigured since its probe: probe it again next time.
                    self.profiles.forget(&self.switch);
                }
                let done =
                    if n == 0 { "nothing was applied".to_string() } else { format!("{n} Set(s) before it were") };
                let error = gnmi_error(e);
                return Err(match error {
                    ActuatorError::Failed(m) if n > 0 => ActuatorError::Failed(format!("{m} ({done})")),
                    other => other,
                });
            }
        }
        Ok(texts)
    }

    async fn queues(&self, port: &str) -> Result<Vec<QueueRecord>, ActuatorError> {
        let profile = self.profile().await?;
        let mut gnmi = self.connect(&profile).await?;
        let Some(map) = gnmi.hash(COUNTERS_DB, QUEUE_NAME_MAP).await.map_err(gnmi_error)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (name, oid) in port_queues(&map, port) {
            if let Some(counters) = gnmi.entry(COUNTERS_DB, COUNTERS, &oid).await.map_err(gnmi_error)? {
                out.push(QueueRecord { name, oid, counters });
            }
        }
        Ok(out)
    }
}

/// The switch's own Redis, for rocemend running on the switch (a container with
/// `/var/run/redis` mounted): the layout of `database_config.json`, the password file of builds
/// that set one. A connection per call, as over gNMI.
#[derive(Debug, Clone)]
pub struct RedisTransport {
    switch: String,
    address: String,
    redis: sonic::Switch,
}

impl RedisTransport {
    /// Switch `switch` reached through `redis`.
    pub fn new(switch: &str, redis: sonic::Switch) -> Self {
        let address = redis
            .layout()
            .database(CONFIG_DB)
            .map(|d| d.instance.endpoint().to_string())
            .unwrap_or_else(|e| format!("({e})"));
        RedisTransport { switch: switch.to_string(), address, redis }
    }

    fn db_error(&self, e: DbError) -> ActuatorError {
        if e.is_transient() {
            ActuatorError::Failed(format!("switch {} (Redis {}): {e}; nothing was changed", self.switch, self.address))
        } else {
            ActuatorError::Failed(format!("switch {} (Redis {}): {e}", self.switch, self.address))
        }
    }

    async fn ports(&self) -> Result<PortNames, ActuatorError> {
        let config = self.redis.config_db().await.map_err(|e| self.db_error(e))?;
        PortNames::read(&config).await.map_err(|e| ActuatorError::Failed(format!("switch {}: {e}", self.switch)))
    }
}

#[async_trait]
impl Transport for RedisTransport {
    fn kind(&self) -> &'static str {
        "Redis"
    }

    fn address(&self) -> &str {
        &self.address
    }

    async fn check(&self) -> Result<String, ActuatorError> {
        let ports = self.ports().await?;
        let names: Vec<&str> = ports.names().collect();
        let aliased = names.iter().filter(|n| ports.alias(n).is_some()).count();
        Ok(format!(
            "{} (Redis {}): {} ports ({aliased} with aliases); writes are CONFIG_DB transactions",
            self.switch,
            self.address,
            names.len()
        ))
    }

    async fn port_name(&self, given: &str) -> Result<String, ActuatorError> {
        resolve(&self.switch, &self.ports().await?, given)
    }

    async fn entry(&self, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        let config = self.redis.config_db().await.map_err(|e| self.db_error(e))?;
        config.entry(table, key).await.map_err(|e| self.db_error(e))
    }

    async fn state_entry(&self, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        let state = self.redis.database(STATE_DB).await.map_err(|e| self.db_error(e))?;
        state.entry(table, key).await.map_err(|e| self.db_error(e))
    }

    async fn table_keys(&self, table: &str) -> Result<Vec<String>, ActuatorError> {
        let config = self.redis.config_db().await.map_err(|e| self.db_error(e))?;
        config.keys(table).await.map_err(|e| self.db_error(e))
    }

    fn describe(&self, changes: &[Change]) -> Result<Vec<String>, ActuatorError> {
        let ops: Vec<String> = changes.iter().map(redis_text).collect();
        if ops.is_empty() {
            return Err(ActuatorError::Invalid(format!("nothing to set on {}", self.switch)));
        }
        Ok(vec![format!("CONFIG_DB transaction on {} ({}): {}", self.switch, self.address, ops.join(", "))])
    }

    async fn apply(&self, changes: &[Change]) -> Result<Vec<String>, ActuatorError> {
        let texts = self.describe(changes)?;
        let config = self.redis.config_db().await.map_err(|e| self.db_error(e))?;
        tracing::info!(message = "Writing CONFIG_DB.", switch = %self.switch, request = %texts.join("; "));
        config.apply(changes).await.map_err(|e| self.db_error(e))?;
        Ok(texts)
    }

    async fn queues(&self, port: &str) -> Result<Vec<QueueRecord>, ActuatorError> {
        let counters = self.redis.database(COUNTERS_DB).await.map_err(|e| self.db_error(e))?;
        let Some(map) = counters.hash(QUEUE_NAME_MAP).await.map_err(|e| self.db_error(e))? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (name, oid) in port_queues(&map, port) {
            if let Some(hash) = counters.counters(&oid).await.map_err(|e| self.db_error(e))? {
                out.push(QueueRecord { name, oid, counters: hash });
            }
        }
        Ok(out)
    }
}

/// `DEL PFC_WD|Ethernet4 + HSET action=drop …`.
fn redis_text(change: &Change) -> String {
    let (table, key) = change.table_key();
    let pairs = |fields: &Entry| fields.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    match change {
        Change::Set { fields, .. } | Change::Create { fields, .. } => format!("HSET {table}|{key} {}", pairs(fields)),
        Change::DeleteFields { fields, .. } => format!("HDEL {table}|{key} {}", fields.join(" ")),
        Change::Delete { .. } => format!("DEL {table}|{key}"),
        Change::Replace { fields, .. } => format!("DEL {table}|{key} + HSET {table}|{key} {}", pairs(fields)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ports_queues_are_its_own_in_index_order() {
        let map: Entry = [("Ethernet4:10", "oid:a"), ("Ethernet4:3", "oid:b"), ("Ethernet40:3", "oid:c")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(
            port_queues(&map, "Ethernet4"),
            [("Ethernet4:3".to_string(), "oid:b".to_string()), ("Ethernet4:10".to_string(), "oid:a".to_string())]
        );
    }

    #[test]
    fn a_replace_over_redis_is_described_as_a_delete_then_a_write() {
        let change = Change::Replace {
            table: "PFC_WD".into(),
            key: "Ethernet1/1".into(),
            fields: [("action".to_string(), "drop".to_string())].into(),
        };
        assert_eq!(redis_text(&change), "DEL PFC_WD|Ethernet1/1 + HSET PFC_WD|Ethernet1/1 action=drop");
    }
}
