//! [`MemoryStore`]: SONiC's databases in memory, keyed exactly as Redis keys them
//! (`COUNTERS:oid:0x…`, `COUNTERS_PORT_NAME_MAP`, `PORT|Ethernet0`), with keyspace
//! notifications, so a simulated switch can keep its state in SONiC's own shape and serve it
//! through the same front as a real one.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use sonic::gnmi_front::{Backend, MemoryStore};
//! use sonic::DatabaseLayout;
//!
//! let store = MemoryStore::new(DatabaseLayout::standard());
//! store.hset("CONFIG_DB", "PORT|Ethernet0", [("alias", "etp1")]).unwrap();
//! assert_eq!(store.hget("CONFIG_DB", "PORT|Ethernet0", "alias").await.unwrap().as_deref(), Some("etp1"));
//! assert_eq!(store.keys("CONFIG_DB", "PORT|*").await.unwrap(), vec!["PORT|Ethernet0".to_string()]);
//! # }
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::stream;
use tokio::sync::broadcast;

use super::backend::{glob_match, Backend, BackendError, DbInfo, Entry, KeyEvent, Watch, WriteOp};
use crate::layout::DatabaseLayout;

/// Notifications a slow watcher may fall behind by before it loses its subscription (as a
/// Redis client past its output buffer limit does). A counters poll of a large switch writes a
/// few hundred keys at once; 8192 leaves room for several.
const NOTIFY_BACKLOG: usize = 8192;

/// SONiC's databases in memory. Cheap to clone (the clones share the data).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    layout: DatabaseLayout,
    data: Arc<Mutex<BTreeMap<String, BTreeMap<String, Entry>>>>,
    events: broadcast::Sender<(String, KeyEvent)>,
}

impl MemoryStore {
    /// An empty store of the databases of `layout`.
    pub fn new(layout: DatabaseLayout) -> Self {
        let (events, _) = broadcast::channel(NOTIFY_BACKLOG);
        MemoryStore { layout, data: Arc::default(), events }
    }

    fn check(&self, db: &str) -> Result<(), BackendError> {
        self.layout.database(db).map(drop).map_err(|_| BackendError::UnknownDatabase(db.to_string()))
    }

    fn apply(&self, db: &str, op: &WriteOp) {
        let (key, events): (&String, &[&str]) = {
            let mut data = self.data.lock().unwrap_or_else(|e| e.into_inner());
            let tables = data.entry(db.to_string()).or_default();
            match op {
                // Redis refuses an HSET of no field: nothing happens.
                WriteOp::HSet { fields, .. } if fields.is_empty() => return,
                WriteOp::HSet { key, fields } => {
                    match tables.get_mut(key) {
                        Some(entry) => entry.extend(fields.iter().map(|(f, v)| (f.clone(), v.clone()))),
                        None => {
                            tables.insert(key.clone(), fields.clone());
                        }
                    }
                    (key, &["hset"])
                }
                WriteOp::HDel { key, fields } => {
                    let Some(entry) = tables.get_mut(key) else { return };
                    let before = entry.len();
                    entry.retain(|f, _| !fields.contains(f));
                    if before == entry.len() {
                        // Redis notifies only a deletion that deleted something.
                        return;
                    }
                    if entry.is_empty() {
                        // The last field takes the key with it: Redis notifies `hdel`, then `del`.
                        tables.remove(key);
                        (key, &["hdel", "del"])
                    } else {
                        (key, &["hdel"])
                    }
                }
                WriteOp::Del { key } => match tables.remove(key) {
                    Some(_) => (key, &["del"]),
                    None => return,
                },
            }
        };
        // Nobody watching is not an error, and costs nothing.
        if self.events.receiver_count() == 0 {
            return;
        }
        for event in events {
            let _ = self.events.send((db.to_string(), KeyEvent { key: key.clone(), event: event.to_string() }));
        }
    }

    /// Sets fields of `key` in database `db` (as `HSET`, notified).
    pub fn hset<K: Into<String>, V: Into<String>>(
        &self,
        db: &str,
        key: &str,
        fields: impl IntoIterator<Item = (K, V)>,
    ) -> Result<(), BackendError> {
        self.check(db)?;
        let fields: Entry = fields.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        if !fields.is_empty() {
            self.apply(db, &WriteOp::HSet { key: key.to_string(), fields });
        }
        Ok(())
    }

    /// Deletes `key` (as `DEL`, notified).
    pub fn del(&self, db: &str, key: &str) -> Result<(), BackendError> {
        self.check(db)?;
        self.apply(db, &WriteOp::Del { key: key.to_string() });
        Ok(())
    }

    /// Deletes `fields` of `key` (as `HDEL`, notified when one was there; the key goes with its
    /// last field).
    pub fn hdel<F: Into<String>>(
        &self,
        db: &str,
        key: &str,
        fields: impl IntoIterator<Item = F>,
    ) -> Result<(), BackendError> {
        self.check(db)?;
        let fields: Vec<String> = fields.into_iter().map(Into::into).collect();
        if !fields.is_empty() {
            self.apply(db, &WriteOp::HDel { key: key.to_string(), fields });
        }
        Ok(())
    }

    /// Applies `ops` in order, each notified on its own: [`Backend::write`] for callers that
    /// are not async (a simulator's clock).
    pub fn write_now(&self, db: &str, ops: &[WriteOp]) -> Result<(), BackendError> {
        self.check(db)?;
        for op in ops {
            self.apply(db, op);
        }
        Ok(())
    }

    /// The keys of `db` matching the Redis glob `pattern`, in order: [`Backend::keys`] for
    /// callers that are not async.
    pub fn keys_now(&self, db: &str, pattern: &str) -> Result<Vec<String>, BackendError> {
        self.check(db)?;
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let keys = data.get(db).into_iter().flat_map(|t| t.keys()).filter(|k| glob_match(pattern, k));
        Ok(keys.cloned().collect())
    }

    /// Every entry of `db` whose key starts with `prefix` (`PFC_WD|`), key and fields, in order.
    pub fn entries_with_prefix(&self, db: &str, prefix: &str) -> Vec<(String, Entry)> {
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tables) = data.get(db) else { return Vec::new() };
        tables
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Every field of `key`, `None` when it does not exist.
    pub fn get(&self, db: &str, key: &str) -> Option<Entry> {
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        data.get(db)?.get(key).cloned()
    }

    /// Loads whole tables (Redis key → fields) into `db`, without notifications: a switch's
    /// state before anyone watches.
    pub fn load(&self, db: &str, tables: impl IntoIterator<Item = (String, Entry)>) -> Result<(), BackendError> {
        self.check(db)?;
        let mut data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let target = data.entry(db.to_string()).or_default();
        target.extend(tables.into_iter().filter(|(_, fields)| !fields.is_empty()));
        Ok(())
    }
}

#[async_trait::async_trait]
impl Backend for MemoryStore {
    fn database(&self, name: &str) -> Option<DbInfo> {
        let db = self.layout.database(name).ok()?;
        Some(DbInfo { name: db.name.clone(), id: db.id, separator: db.separator })
    }

    async fn hgetall(&self, db: &str, key: &str) -> Result<Entry, BackendError> {
        self.check(db)?;
        Ok(self.get(db, key).unwrap_or_default())
    }

    async fn hget(&self, db: &str, key: &str, field: &str) -> Result<Option<String>, BackendError> {
        self.check(db)?;
        Ok(self.get(db, key).and_then(|e| e.get(field).cloned()))
    }

    async fn exists(&self, db: &str, key: &str) -> Result<bool, BackendError> {
        self.check(db)?;
        Ok(self.get(db, key).is_some())
    }

    async fn keys(&self, db: &str, pattern: &str) -> Result<Vec<String>, BackendError> {
        self.keys_now(db, pattern)
    }

    async fn write(&self, db: &str, ops: &[WriteOp]) -> Result<(), BackendError> {
        self.write_now(db, ops)
    }

    async fn watch(&self, db: &str, pattern: &str) -> Result<Watch, BackendError> {
        self.check(db)?;
        let rx = self.events.subscribe();
        let (db, pattern) = (db.to_string(), pattern.to_string());
        let events = stream::unfold((rx, db, pattern), |(mut rx, db, pattern)| async move {
            loop {
                match rx.recv().await {
                    Ok((event_db, event)) if event_db == db && glob_match(&pattern, &event.key) => {
                        return Some((event, (rx, db, pattern)));
                    }
                    Ok(_) => continue,
                    // Fallen behind: notifications are lost, so the subscription ends, as
                    // Redis drops a client past its output buffer limit.
                    Err(_) => return None,
                }
            }
        });
        Ok(Box::pin(events))
    }
}
