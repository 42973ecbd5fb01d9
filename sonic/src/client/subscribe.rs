//! Subscriptions: keyspace notifications (how SONiC's own daemons see CONFIG_DB change, and how
//! a sensor reads ON_CHANGE) and plain channels (`PFC_WD_ACTION`).
//!
//! Redis sends a notification once, to whoever is subscribed at that moment, and never again: a
//! subscription that ends (the stream returns `None`) has lost whatever happened since, so its
//! owner must read the state again after subscribing anew. Subscribe *before* the first read, as
//! swss-common's `SubscriberStateTable` does, and nothing falls between the two.

use redis::aio::PubSubStream;

use super::db::{escape_glob, Db};
use super::error::DbError;

/// One keyspace notification: a command changed a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceEvent {
    /// The Redis key (`PFC_WD|Ethernet4`).
    pub key: String,
    /// Its table (`PFC_WD`): the part before the database's separator.
    pub table: String,
    /// Its entry key (`Ethernet4`): the part after (empty for a key without the separator,
    /// such as `COUNTERS_PORT_NAME_MAP`).
    pub entry: String,
    /// The command's event name (`hset`, `hdel`, `del`, `expired`, …).
    pub event: String,
}

impl KeyspaceEvent {
    /// Whether the key is gone (`del`, `expired`, `evicted`).
    pub fn is_removal(&self) -> bool {
        matches!(self.event.as_str(), "del" | "expired" | "evicted")
    }
}

/// Keyspace notifications for the keys of one database that match a pattern.
pub struct Keyspace {
    database: String,
    prefix: String,
    separator: char,
    stream: PubSubStream,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace").field("database", &self.database).field("prefix", &self.prefix).finish()
    }
}

impl Keyspace {
    /// The next notification; `None` when the subscription ended (the connection to Redis was
    /// lost: notifications since then are gone, read the state again).
    pub async fn next(&mut self) -> Option<Result<KeyspaceEvent, DbError>> {
        use futures_util::StreamExt;
        let msg = self.stream.next().await?;
        let channel = msg.get_channel_name().to_string();
        let malformed =
            |problem: String| DbError::Malformed { database: self.database.clone(), key: channel.clone(), problem };
        let Some(key) = channel.strip_prefix(&self.prefix) else {
            return Some(Err(malformed(format!("not a keyspace channel of {}", self.prefix))));
        };
        let event = match msg.get_payload::<String>() {
            Ok(event) => event,
            Err(e) => return Some(Err(malformed(format!("event is not text: {e}")))),
        };
        let (table, entry) = key.split_once(self.separator).unwrap_or((key, ""));
        Some(Ok(KeyspaceEvent { key: key.to_string(), table: table.to_string(), entry: entry.to_string(), event }))
    }
}

/// Messages published on one channel.
pub struct Channel {
    database: String,
    channel: String,
    stream: PubSubStream,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").field("database", &self.database).field("channel", &self.channel).finish()
    }
}

impl Channel {
    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.channel
    }

    /// The next message's text; `None` when the subscription ended (messages since are lost).
    pub async fn next(&mut self) -> Option<Result<String, DbError>> {
        use futures_util::StreamExt;
        let msg = self.stream.next().await?;
        Some(msg.get_payload::<String>().map_err(|e| DbError::Malformed {
            database: self.database.clone(),
            key: self.channel.clone(),
            problem: format!("message is not text: {e}"),
        }))
    }
}

impl Db {
    /// Keyspace notifications for every entry of `table` (`__keyspace@4__:PFC_WD|*`).
    pub async fn watch_table(&self, table: &str) -> Result<Keyspace, DbError> {
        let pattern = format!("{}*", escape_glob(&format!("{table}{}", self.database().separator)));
        self.watch_keys(&pattern).await
    }

    /// Keyspace notifications for the one entry `table|key`.
    pub async fn watch_entry(&self, table: &str, key: &str) -> Result<Keyspace, DbError> {
        self.watch_keys(&escape_glob(&self.key(table, key))).await
    }

    /// Keyspace notifications for the keys matching the Redis glob `pattern` (already escaped
    /// where it must match literally). Returns once Redis has confirmed the subscription: a
    /// change made after this returns is delivered.
    pub async fn watch_keys(&self, pattern: &str) -> Result<Keyspace, DbError> {
        self.watch_patterns(&[pattern.to_string()]).await
    }

    /// [`Db::watch_keys`] for several patterns on one subscription (one connection).
    pub async fn watch_patterns(&self, patterns: &[String]) -> Result<Keyspace, DbError> {
        let prefix = format!("__keyspace@{}__:", self.database().id);
        let channels: Vec<String> = patterns.iter().map(|p| format!("{prefix}{p}")).collect();
        let what = channels.join(" ");
        let mut pubsub = self.run("connect (subscriber)", &what, self.client().get_async_pubsub()).await?;
        self.run("PSUBSCRIBE", &what, pubsub.psubscribe(&channels)).await?;
        Ok(Keyspace {
            database: self.name().to_string(),
            prefix,
            separator: self.database().separator,
            stream: pubsub.into_on_message(),
        })
    }

    /// Messages on `channel`. Redis channels are not per database: a message published from
    /// any database of this instance arrives (SONiC's Lua detectors publish `PFC_WD_ACTION` from
    /// COUNTERS_DB).
    pub async fn subscribe(&self, channel: &str) -> Result<Channel, DbError> {
        let mut pubsub = self.run("connect (subscriber)", channel, self.client().get_async_pubsub()).await?;
        self.run("SUBSCRIBE", channel, pubsub.subscribe(channel)).await?;
        Ok(Channel {
            database: self.name().to_string(),
            channel: channel.to_string(),
            stream: pubsub.into_on_message(),
        })
    }

    /// Whether the server sends the keyspace notifications [`Db::watch_keys`] needs (SONiC sets
    /// `notify-keyspace-events AKE`). Without them a subscription would simply stay silent, so
    /// a sensor that relies on them checks this at start. An error if the server refuses
    /// `CONFIG GET` (some deployments rename it): then nobody knows, and the caller says so.
    pub async fn keyspace_events_enabled(&self) -> Result<bool, DbError> {
        let mut conn = self.connection();
        let key = "notify-keyspace-events";
        let reply: Vec<String> =
            self.run("CONFIG GET", key, redis::cmd("CONFIG").arg("GET").arg(key).query_async(&mut conn)).await?;
        let flags = reply.get(1).map(String::as_str).unwrap_or_default();
        // K: keyspace channels; then the classes: A (all), or at least g (DEL) and h (hash).
        Ok(flags.contains('K') && (flags.contains('A') || (flags.contains('g') && flags.contains('h'))))
    }
}
