//! What the front needs of SONiC's databases ([`Backend`]): the reads and writes sonic-gnmi
//! makes of Redis (`HGETALL`, `HGET`, `EXISTS`, `KEYS`, `HSET`/`HDEL`/`DEL`) and its keyspace
//! notifications, named by database (`CONFIG_DB`) and Redis key (`PFC_WD|Ethernet4`,
//! `COUNTERS:oid:0x…`, `COUNTERS_PORT_NAME_MAP`), exactly as Redis holds them.
//!
//! Two implementations: [`RedisBackend`](super::RedisBackend), the switch's Redis through
//! [`Switch`](crate::Switch), and [`MemoryStore`](super::MemoryStore), the same keys in memory.

use std::collections::BTreeMap;
use std::pin::Pin;

use futures_util::Stream;

use crate::client::DbError;

/// Every field of one hash.
pub type Entry = BTreeMap<String, String>;

/// One database of the layout, as the front needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbInfo {
    /// Its name (`CONFIG_DB`).
    pub name: String,
    /// Its Redis number (keyspace channels are `__keyspace@<id>__:<key>`).
    pub id: u32,
    /// The separator between a table and its key (`|` or `:`).
    pub separator: char,
}

/// One write, as Redis applies it (and notifies it: `hset`, `hdel`, `del`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    /// `HSET key field value …`.
    HSet {
        /// The Redis key.
        key: String,
        /// Field → value (at least one).
        fields: Entry,
    },
    /// `HDEL key field …` (Redis deletes the key with its last field).
    HDel {
        /// The Redis key.
        key: String,
        /// The fields (at least one).
        fields: Vec<String>,
    },
    /// `DEL key`.
    Del {
        /// The Redis key.
        key: String,
    },
}

/// One keyspace notification: a command changed `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEvent {
    /// The Redis key.
    pub key: String,
    /// The command's event (`hset`, `hdel`, `del`).
    pub event: String,
}

/// Keyspace notifications of one pattern; the stream ends when the subscription is lost.
pub type Watch = Pin<Box<dyn Stream<Item = KeyEvent> + Send>>;

/// A read or write the backend could not do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The layout has no such database.
    #[error("no database {0} in the layout")]
    UnknownDatabase(String),
    /// The switch's Redis failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A command Redis refused, in its words.
    #[error("{0}")]
    Refused(String),
}

/// The reads and writes of SONiC's databases the front makes, keyed as Redis keys them.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Database `name` of the layout, if there is one.
    fn database(&self, name: &str) -> Option<DbInfo>;

    /// `HGETALL`: every field of `key` (empty when the key does not exist, as Redis answers).
    async fn hgetall(&self, db: &str, key: &str) -> Result<Entry, BackendError>;

    /// `HGET`: `None` when the key or the field does not exist (go-redis's `redis.Nil`).
    async fn hget(&self, db: &str, key: &str, field: &str) -> Result<Option<String>, BackendError>;

    /// `EXISTS`.
    async fn exists(&self, db: &str, key: &str) -> Result<bool, BackendError>;

    /// `KEYS pattern` (Redis glob: `*`, `?`, `[…]`, `\`), in the store's order.
    async fn keys(&self, db: &str, pattern: &str) -> Result<Vec<String>, BackendError>;

    /// Applies `ops` in order, each as its own command (each notified on its own).
    async fn write(&self, db: &str, ops: &[WriteOp]) -> Result<(), BackendError>;

    /// Keyspace notifications of the keys matching `pattern` (Redis glob). Returns once the
    /// subscription is in place: a change made after it returns is delivered.
    async fn watch(&self, db: &str, pattern: &str) -> Result<Watch, BackendError>;
}

/// Whether `text` matches the Redis glob `pattern` (`stringmatchlen`: `*`, `?`, `[abc]`,
/// `[^a]`, `[a-z]`, `\x`).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob(&p, &t)
}

fn glob(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|i| glob(&p[1..], &t[i..])),
        Some('?') => !t.is_empty() && glob(&p[1..], &t[1..]),
        Some('[') => {
            let Some(&c) = t.first() else { return false };
            let mut i = 1;
            let negate = p.get(1) == Some(&'^');
            if negate {
                i += 1;
            }
            let mut matched = false;
            while i < p.len() && p[i] != ']' {
                if p[i] == '\\' && i + 1 < p.len() {
                    matched |= p[i + 1] == c;
                    i += 2;
                } else if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                    let (lo, hi) = if p[i] <= p[i + 2] { (p[i], p[i + 2]) } else { (p[i + 2], p[i]) };
                    matched |= (lo..=hi).contains(&c);
                    i += 3;
                } else {
                    matched |= p[i] == c;
                    i += 1;
                }
            }
            // An unclosed '[' ends at the pattern's end, as Redis reads it.
            let rest = if i < p.len() { &p[i + 1..] } else { &p[p.len()..] };
            matched != negate && glob(rest, &t[1..])
        }
        Some('\\') if p.len() > 1 => t.first() == Some(&p[1]) && glob(&p[2..], &t[1..]),
        Some(c) => t.first() == Some(c) && glob(&p[1..], &t[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_as_redis_matches_them() {
        assert!(glob_match("PFC_WD|*", "PFC_WD|Ethernet4"));
        assert!(!glob_match("PFC_WD|*", "PFC_WDX|Ethernet4"));
        assert!(glob_match("PFC_WD*", "PFC_WD_X|a"), "sonic-gnmi's table check has no separator");
        assert!(glob_match("COUNTERS_PORT_NAME_MAP", "COUNTERS_PORT_NAME_MAP"));
        assert!(glob_match("a?c", "abc") && !glob_match("a?c", "ac"));
        assert!(glob_match("[a-c]x", "bx") && !glob_match("[^a-c]x", "bx"));
        assert!(glob_match("a\\*", "a*") && !glob_match("a\\*", "ab"));
        assert!(glob_match("PORT|Ethernet1/1", "PORT|Ethernet1/1"));
    }
}
