//! [`Backend`] over the switch's Redis ([`Switch`]): one connection per database, opened on
//! first use and shared, each command under the switch's deadline.

use std::collections::HashMap;

use futures_util::stream;
use tokio::sync::Mutex;

use super::backend::{Backend, BackendError, DbInfo, Entry, KeyEvent, Watch, WriteOp};
use crate::client::{Db, Switch};

/// The switch's Redis, as the front reads and writes it.
#[derive(Debug)]
pub struct RedisBackend {
    switch: Switch,
    open: Mutex<HashMap<String, Db>>,
}

impl RedisBackend {
    /// A backend of `switch` (connections open on first use).
    pub fn new(switch: Switch) -> Self {
        RedisBackend { switch, open: Mutex::new(HashMap::new()) }
    }

    async fn db(&self, name: &str) -> Result<Db, BackendError> {
        if self.switch.layout().database(name).is_err() {
            return Err(BackendError::UnknownDatabase(name.to_string()));
        }
        let mut open = self.open.lock().await;
        if let Some(db) = open.get(name) {
            return Ok(db.clone());
        }
        let db = self.switch.database(name).await?;
        open.insert(name.to_string(), db.clone());
        Ok(db)
    }
}

#[async_trait::async_trait]
impl Backend for RedisBackend {
    fn database(&self, name: &str) -> Option<DbInfo> {
        let db = self.switch.layout().database(name).ok()?;
        Some(DbInfo { name: db.name.clone(), id: db.id, separator: db.separator })
    }

    async fn hgetall(&self, db: &str, key: &str) -> Result<Entry, BackendError> {
        let db = self.db(db).await?;
        let mut conn = db.connection();
        Ok(db.run("HGETALL", key, redis::cmd("HGETALL").arg(key).query_async(&mut conn)).await?)
    }

    async fn hget(&self, db: &str, key: &str, field: &str) -> Result<Option<String>, BackendError> {
        let db = self.db(db).await?;
        let mut conn = db.connection();
        Ok(db.run("HGET", key, redis::cmd("HGET").arg(key).arg(field).query_async(&mut conn)).await?)
    }

    async fn exists(&self, db: &str, key: &str) -> Result<bool, BackendError> {
        let db = self.db(db).await?;
        let mut conn = db.connection();
        let n: u64 = db.run("EXISTS", key, redis::cmd("EXISTS").arg(key).query_async(&mut conn)).await?;
        Ok(n > 0)
    }

    async fn keys(&self, db: &str, pattern: &str) -> Result<Vec<String>, BackendError> {
        // KEYS, as sonic-gnmi sends it (`db_client.go` TableData2Msi): the front reproduces its
        // load on the switch's Redis too.
        let db = self.db(db).await?;
        let mut conn = db.connection();
        Ok(db.run("KEYS", pattern, redis::cmd("KEYS").arg(pattern).query_async(&mut conn)).await?)
    }

    async fn write(&self, db: &str, ops: &[WriteOp]) -> Result<(), BackendError> {
        let db = self.db(db).await?;
        for op in ops {
            let mut conn = db.connection();
            match op {
                WriteOp::HSet { key, fields } => {
                    let mut cmd = redis::cmd("HSET");
                    cmd.arg(key);
                    for (f, v) in fields {
                        cmd.arg(f).arg(v);
                    }
                    db.run("HSET", key, cmd.query_async::<()>(&mut conn)).await?;
                }
                WriteOp::HDel { key, fields } => {
                    db.run("HDEL", key, redis::cmd("HDEL").arg(key).arg(fields).query_async::<()>(&mut conn)).await?;
                }
                WriteOp::Del { key } => {
                    db.run("DEL", key, redis::cmd("DEL").arg(key).query_async::<()>(&mut conn)).await?;
                }
            }
        }
        Ok(())
    }

    async fn watch(&self, db: &str, pattern: &str) -> Result<Watch, BackendError> {
        let keyspace = self.db(db).await?.watch_keys(pattern).await?;
        // A notification that does not parse is skipped (Redis sends none such); the end of
        // the subscription ends the stream.
        let events = stream::unfold(keyspace, |mut keyspace| async move {
            loop {
                match keyspace.next().await? {
                    Ok(e) => return Some((KeyEvent { key: e.key, event: e.event }, keyspace)),
                    Err(_) => continue,
                }
            }
        });
        Ok(Box::pin(events))
    }
}
