//! The sled database: rule instance state that survives a restart.
//!
//! Keys are `rule \0 subject-key`; values are the instance as JSON. Only
//! instances that are not idle are stored, so the database holds what is
//! pending, firing, in cooldown or stale: bounded by the faults in progress,
//! not by the fleet's size.

use std::collections::HashMap;
use std::path::Path;

use crate::instance::Instance;

/// How often sled writes buffered records to disk by itself. Writes that
/// must be durable before anything else happens (an action's intent, the
/// breaker) are flushed explicitly; the rest may lose at most this much.
pub const FLUSH_EVERY_MS: u64 = 500;

/// The state database could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// sled failed. Its error is in the message and deliberately not a
    /// `source`: a chain printed whole (`{:#}`) would say it twice.
    #[error("state database: {0}")]
    Sled(sled::Error),
    /// A stored record is not what this version writes.
    #[error("state database: corrupt record {key:?}: {message}")]
    Corrupt {
        /// The key.
        key: String,
        /// The decoding error.
        message: String,
    },
}

impl From<sled::Error> for StoreError {
    fn from(error: sled::Error) -> StoreError {
        StoreError::Sled(error)
    }
}

/// Handle to the state database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    db: sled::Db,
    instances: sled::Tree,
}

impl Store {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .flush_every_ms(Some(FLUSH_EVERY_MS))
            .open()?;
        Store::from_db(db)
    }

    /// A database that lives in memory only (tests, `rocemend test`).
    pub fn temporary() -> Result<Store, StoreError> {
        Store::from_db(sled::Config::new().temporary(true).open()?)
    }

    fn from_db(db: sled::Db) -> Result<Store, StoreError> {
        let instances = db.open_tree("instances")?;
        Ok(Store { db, instances })
    }

    /// The underlying database, for other trees (the ledger).
    pub fn db(&self) -> &sled::Db {
        &self.db
    }

    fn key(rule: &str, subject: &str) -> Vec<u8> {
        let mut k = Vec::with_capacity(rule.len() + 1 + subject.len());
        k.extend_from_slice(rule.as_bytes());
        k.push(0);
        k.extend_from_slice(subject.as_bytes());
        k
    }

    /// Stores the state of one instance (or deletes it when idle).
    pub fn put_instance(&self, rule: &str, subject: &str, inst: &Instance) -> Result<(), StoreError> {
        let key = Store::key(rule, subject);
        if inst.is_idle() {
            self.instances.remove(key)?;
        } else {
            let value = serde_json::to_vec(inst).expect("instances serialize");
            self.instances.insert(key, value)?;
        }
        Ok(())
    }

    /// Every stored instance of `rule`, by subject key.
    pub fn instances_of(&self, rule: &str) -> Result<HashMap<String, Instance>, StoreError> {
        let mut prefix = rule.as_bytes().to_vec();
        prefix.push(0);
        let mut out = HashMap::new();
        for item in self.instances.scan_prefix(&prefix) {
            let (k, v) = item?;
            let subject = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
            let inst: Instance = serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                key: String::from_utf8_lossy(&k).into_owned(),
                message: e.to_string(),
            })?;
            out.insert(subject, inst);
        }
        Ok(out)
    }

    /// Flushes everything written so far to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }
}
