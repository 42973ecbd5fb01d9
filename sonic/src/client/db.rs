//! Connections and reads.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};

use super::error::DbError;
use super::write::ConfigDb;
use crate::layout::{Database, DatabaseLayout, Endpoint};

/// How long one command may take. SONiC's Redis answers a local `HGETALL` in well under a
/// millisecond; two seconds is a switch in trouble (or a Lua detector hogging the server), and
/// a caller that waits longer holds up the sensor or actuator behind it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// COUNTERS_DB's table of counters, keyed by object id (`COUNTERS:oid:0x…`).
pub const COUNTERS: &str = "COUNTERS";

/// Every field of one Redis hash (a CONFIG_DB entry, a counters hash), as Redis holds it.
pub type Entry = BTreeMap<String, String>;

/// The answer to a read of one field: its value, or which part is absent (each only when Redis
/// said so).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldRead {
    /// The field's value.
    Value(String),
    /// The entry exists without this field.
    NoField,
    /// The entry does not exist (`EXISTS` answered 0).
    NoEntry,
}

/// One switch's Redis, as its layout describes it.
#[derive(Clone)]
pub struct Switch {
    layout: DatabaseLayout,
    password: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("Switch")
            .field("layout", &self.layout)
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Switch {
    /// A switch of `layout`, authenticating with `password` when given
    /// ([`read_password`](crate::layout::read_password)).
    pub fn new(layout: DatabaseLayout, password: Option<String>) -> Self {
        Switch { layout, password, timeout: DEFAULT_TIMEOUT }
    }

    /// The same switch with another deadline per command (and per connection attempt).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The layout.
    pub fn layout(&self) -> &DatabaseLayout {
        &self.layout
    }

    /// The deadline per command.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The redis client of `database`: its instance's socket (or TCP), its number, the password.
    pub(crate) fn client(&self, database: &Database) -> Result<redis::Client, DbError> {
        let addr = match database.instance.endpoint() {
            Endpoint::Unix(path) => ConnectionAddr::Unix(path),
            Endpoint::Tcp { host, port } => ConnectionAddr::Tcp(host, port),
        };
        // No CLIENT SETINFO: older switch images run Redis 6, which refuses it.
        let mut redis_info = RedisConnectionInfo::default().set_db(i64::from(database.id)).set_skip_set_lib_name();
        if let Some(password) = &self.password {
            redis_info = redis_info.set_password(password);
        }
        let connect_error = |source| DbError::Connect {
            database: database.name.clone(),
            endpoint: database.instance.endpoint().to_string(),
            source,
        };
        let info = addr.into_connection_info().map_err(connect_error)?.set_redis_settings(redis_info);
        redis::Client::open(info).map_err(connect_error)
    }

    /// Opens database `name` (`CONFIG_DB`, `COUNTERS_DB`, …).
    pub async fn database(&self, name: &str) -> Result<Db, DbError> {
        let database = self.layout.database(name)?.clone();
        let client = self.client(&database)?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let endpoint = database.instance.endpoint().to_string();
        let conn = match tokio::time::timeout(
            self.timeout,
            client.get_multiplexed_async_connection_with_config(&config),
        )
        .await
        {
            Ok(Ok(conn)) => conn,
            Ok(Err(source)) => return Err(DbError::Connect { database: database.name, endpoint, source }),
            Err(_) => {
                return Err(DbError::Timeout {
                    database: database.name,
                    operation: "connect",
                    key: endpoint,
                    timeout: self.timeout,
                })
            }
        };
        Ok(Db { info: Arc::new(database), client, conn, timeout: self.timeout })
    }

    /// Opens CONFIG_DB, the database rocemend writes.
    pub async fn config_db(&self) -> Result<ConfigDb, DbError> {
        Ok(ConfigDb::new(self.database(crate::layout::db::CONFIG_DB).await?))
    }
}

/// One database of the switch: reads, and the subscriptions of [`super::subscribe`]. Cheap to
/// clone (one multiplexed connection shared by the clones).
#[derive(Clone)]
pub struct Db {
    info: Arc<Database>,
    client: redis::Client,
    conn: MultiplexedConnection,
    timeout: Duration,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("database", &self.info.name).field("id", &self.info.id).finish()
    }
}

impl Db {
    /// The database's name (`CONFIG_DB`).
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The database as the layout describes it (number, separator, instance).
    pub fn database(&self) -> &Database {
        &self.info
    }

    /// The Redis key of `table`'s entry `key` (`PFC_WD|Ethernet4`).
    pub fn key(&self, table: &str, key: &str) -> String {
        self.info.key(table, key)
    }

    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    pub(crate) fn connection(&self) -> MultiplexedConnection {
        self.conn.clone()
    }

    /// Runs one command (or transaction) under the deadline, naming it in errors.
    pub(crate) async fn run<T>(
        &self,
        operation: &'static str,
        key: &str,
        command: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, DbError> {
        match tokio::time::timeout(self.timeout, command).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => {
                Err(DbError::Command { database: self.info.name.clone(), operation, key: key.to_string(), source })
            }
            Err(_) => Err(DbError::Timeout {
                database: self.info.name.clone(),
                operation,
                key: key.to_string(),
                timeout: self.timeout,
            }),
        }
    }

    /// Every field of `table|key`; `None` only when Redis says the key does not exist.
    pub async fn entry(&self, table: &str, key: &str) -> Result<Option<Entry>, DbError> {
        self.hash(&self.key(table, key)).await
    }

    /// Every field of the hash at Redis key `key` (`COUNTERS:oid:0x…`,
    /// `COUNTERS_PORT_NAME_MAP`); `None` only when Redis says the key does not exist.
    ///
    /// `EXISTS` and `HGETALL` run in one transaction, so "absent" is Redis's answer about the
    /// same moment the fields would have been read at. An existing key that is not a hash is an
    /// error (Redis refuses `HGETALL` on it), not an empty entry.
    pub async fn hash(&self, key: &str) -> Result<Option<Entry>, DbError> {
        let mut conn = self.connection();
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("EXISTS").arg(key).cmd("HGETALL").arg(key);
        let (exists, fields): (u64, Entry) = self.run("EXISTS+HGETALL", key, pipe.query_async(&mut conn)).await?;
        match (exists, fields.is_empty()) {
            (0, _) => Ok(None),
            (_, false) => Ok(Some(fields)),
            // Redis deletes a hash with its last field; an existing empty one cannot happen.
            (_, true) => Err(self.malformed(key, "exists but HGETALL returned no fields")),
        }
    }

    /// [`Db::hash`] of many keys in one round trip (one transaction): what a sensor polling
    /// every port's counters each interval needs. The answers are in the order of `keys`.
    pub async fn hashes(&self, keys: &[String]) -> Result<Vec<Option<Entry>>, DbError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        for key in keys {
            pipe.cmd("EXISTS").arg(key).cmd("HGETALL").arg(key);
        }
        let mut conn = self.connection();
        let what = match keys.len() {
            1 => keys[0].clone(),
            n => format!("{} and {} more", keys[0], n - 1),
        };
        let replies: Vec<(u64, Entry)> = self.run("EXISTS+HGETALL", &what, pipe.query_async(&mut conn)).await?;
        keys.iter()
            .zip(replies)
            .map(|(key, (exists, fields))| match (exists, fields.is_empty()) {
                (0, _) => Ok(None),
                (_, false) => Ok(Some(fields)),
                (_, true) => Err(self.malformed(key, "exists but HGETALL returned no fields")),
            })
            .collect()
    }

    /// COUNTERS_DB's counters of object `oid` (`COUNTERS:oid:0x…`); `None` only when Redis
    /// says there are none.
    pub async fn counters(&self, oid: &str) -> Result<Option<Entry>, DbError> {
        self.entry(COUNTERS, oid).await
    }

    /// One field of `table|key`.
    pub async fn field(&self, table: &str, key: &str, field: &str) -> Result<FieldRead, DbError> {
        let redis_key = self.key(table, key);
        let mut conn = self.connection();
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("EXISTS").arg(&redis_key).cmd("HGET").arg(&redis_key).arg(field);
        let (exists, value): (u64, Option<String>) =
            self.run("EXISTS+HGET", &redis_key, pipe.query_async(&mut conn)).await?;
        Ok(match (exists, value) {
            (0, _) => FieldRead::NoEntry,
            (_, Some(value)) => FieldRead::Value(value),
            (_, None) => FieldRead::NoField,
        })
    }

    /// Whether `table|key` exists.
    pub async fn exists(&self, table: &str, key: &str) -> Result<bool, DbError> {
        let redis_key = self.key(table, key);
        let mut conn = self.connection();
        let n: u64 =
            self.run("EXISTS", &redis_key, redis::cmd("EXISTS").arg(&redis_key).query_async(&mut conn)).await?;
        Ok(n > 0)
    }

    /// The keys of `table`'s entries (`PFC_WD` → `Ethernet0`, `GLOBAL`, …), by `SCAN` (never
    /// `KEYS`, which blocks the switch's Redis while it walks every key).
    pub async fn keys(&self, table: &str) -> Result<Vec<String>, DbError> {
        let prefix = format!("{table}{}", self.info.separator);
        let keys = self.scan(&format!("{}*", escape_glob(&prefix))).await?;
        Ok(keys.into_iter().filter_map(|k| k.strip_prefix(&prefix).map(str::to_string)).collect())
    }

    /// Every Redis key matching the glob `pattern`, sorted, by `SCAN`.
    pub async fn scan(&self, pattern: &str) -> Result<Vec<String>, DbError> {
        let mut conn = self.connection();
        let mut cursor: u64 = 0;
        let mut keys = BTreeSet::new();
        loop {
            let scan = redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(1000).to_owned();
            let (next, batch): (u64, Vec<String>) = self.run("SCAN", pattern, scan.query_async(&mut conn)).await?;
            keys.extend(batch);
            if next == 0 {
                // SCAN may return a key twice; the set keeps one.
                return Ok(keys.into_iter().collect());
            }
            cursor = next;
        }
    }

    pub(crate) fn malformed(&self, key: &str, problem: impl Into<String>) -> DbError {
        DbError::Malformed { database: self.info.name.clone(), key: key.to_string(), problem: problem.into() }
    }
}

/// `text` with Redis's glob characters (`* ? [ ] \`) escaped, to match it literally in `SCAN
/// MATCH` and `PSUBSCRIBE`.
pub fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(escape_glob("PORT|Ethernet1/1"), "PORT|Ethernet1/1");
        assert_eq!(escape_glob("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
