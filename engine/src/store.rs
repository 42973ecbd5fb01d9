//! The sled database: rule instance state that survives a restart, and the
//! trees of the ledger (module `ledger`).
//!
//! Keys of `instances` are `rule \0 subject-key`; values are the instance as
//! JSON. Only instances that are not idle are stored, so the database holds
//! what is pending, firing, in cooldown or stale: bounded by the faults in
//! progress, not by the fleet's size.
//!
//! **When it cannot be written.** sled stops writing for good after one
//! failed write (a full disk: `ENOSPC`), until the database is opened
//! again. So the first failed write makes the store *unwritable*: it says
//! so once at ERROR (then at most once a minute, with the count of writes
//! refused since), refuses every later write at once without touching
//! sled, and keeps serving reads. [`Store::recover`], called on the
//! dispatcher's tick, first writes a probe file of [`PROBE_BYTES`] next to
//! the database; only when that succeeds (space is back) does it open the
//! database again, so the handles of the whole daemon (ledger, instances)
//! see the new one. What was written but not flushed before the failure is
//! lost with the old handle: the ledger keeps such records in memory and
//! writes them again (`Ledger::recover`); an instance's
//! state is written again at its next change (a restart meanwhile sees it
//! as it was at the last flush, which a crash risks anyway).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use crate::instance::Instance;
use crate::time::{wall_clock_now, Nanos};

/// How often sled writes buffered records to disk by itself. Writes that
/// must be durable before anything else happens (an action's intent, the
/// breaker) are flushed explicitly; the rest may lose at most this much.
pub const FLUSH_EVERY_MS: u64 = 500;

/// The bytes of the probe written before the database is opened again:
/// two of sled's log segments (512 KiB each), what it needs to go on
/// writing. Less free space than this and recovery waits.
pub const PROBE_BYTES: usize = 1 << 20;

/// How long a store that cannot be written says so at most once: the first
/// failure is logged at once, the next ones counted and summed up this often.
pub const UNWRITABLE_LOG_EVERY: Duration = Duration::from_secs(60);

/// How long opening the database again waits for the old handle to let go
/// of its file lock (sled releases it from its own threads, and a read
/// under way holds it until it ends).
const REOPEN_WAIT: Duration = Duration::from_secs(5);

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
    /// An earlier write failed, and the database is not written again
    /// until it has recovered (see the module's documentation).
    #[error("state database unwritable: {cause}")]
    Unwritable {
        /// The failure that made it so.
        cause: String,
    },
    /// The database is being opened again; try later.
    #[error("state database: being opened again after a write failure")]
    Reopening,
}

impl From<sled::Error> for StoreError {
    fn from(error: sled::Error) -> StoreError {
        StoreError::Sled(error)
    }
}

/// Whether the store can be written, and what failed if not.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WriteHealth {
    /// Whether writes go to disk now.
    pub writable: bool,
    /// Since when it cannot be written (wall clock), if it cannot.
    pub since: Option<Nanos>,
    /// The failure that made it unwritable, if it is.
    pub cause: Option<String>,
    /// Writes that failed or were refused since the daemon started.
    pub failures: u64,
    /// Times it became writable again since the daemon started.
    pub recoveries: u64,
}

/// The handles of one opening of the database.
#[derive(Clone)]
pub(crate) struct Handles {
    pub(crate) db: sled::Db,
    instances: sled::Tree,
}

/// What every clone of a [`Store`] shares.
struct Shared {
    /// `None` for a database in memory.
    path: Option<PathBuf>,
    /// `None` only while the database is opened again.
    handles: RwLock<Option<Handles>>,
    /// Trees opened in the current handles, by name.
    trees: Mutex<HashMap<&'static str, sled::Tree>>,
    /// Incremented each time the database is opened again.
    generation: AtomicU64,
    health: Mutex<Health>,
    /// A write failure tests make happen (see [`Store::inject_write_failure`]).
    injected: Mutex<Option<std::io::ErrorKind>>,
}

/// [`WriteHealth`] and when it was last said.
#[derive(Default)]
struct Health {
    now: WriteHealth,
    /// When the failures were last logged, and how many had been then.
    logged: Option<(Instant, u64)>,
}

/// Handle to the state database; cheap to clone, safe to share.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.shared.path).finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section below is a few assignments: a panic inside
    // one cannot leave the value half-changed.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn open_db(dir: &Path) -> Result<sled::Db, sled::Error> {
    sled::Config::new().path(dir).mode(sled::Mode::HighThroughput).flush_every_ms(Some(FLUSH_EVERY_MS)).open()
}

impl Store {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::from_db(open_db(dir)?, Some(dir.to_path_buf()))
    }

    /// A database that lives in memory only (tests, `rocemend test`).
    pub fn temporary() -> Result<Store, StoreError> {
        Store::from_db(sled::Config::new().temporary(true).open()?, None)
    }

    fn from_db(db: sled::Db, path: Option<PathBuf>) -> Result<Store, StoreError> {
        let instances = db.open_tree("instances")?;
        let health = Health { now: WriteHealth { writable: true, ..WriteHealth::default() }, logged: None };
        Ok(Store {
            shared: Arc::new(Shared {
                path,
                handles: RwLock::new(Some(Handles { db, instances })),
                trees: Mutex::default(),
                generation: AtomicU64::new(0),
                health: Mutex::new(health),
                injected: Mutex::default(),
            }),
        })
    }

    fn handles(&self) -> Result<Handles, StoreError> {
        let handles = self.shared.handles.read().unwrap_or_else(PoisonError::into_inner);
        handles.clone().ok_or(StoreError::Reopening)
    }

    /// The tree `name` of the current opening of the database.
    pub(crate) fn tree(&self, name: &'static str) -> Result<sled::Tree, StoreError> {
        let handles = self.handles()?;
        let mut trees = lock(&self.shared.trees);
        if let Some(tree) = trees.get(name) {
            return Ok(tree.clone());
        }
        let tree = handles.db.open_tree(name)?;
        trees.insert(name, tree.clone());
        Ok(tree)
    }

    /// A new id, monotonic across restarts (sled keeps the counter). Taken
    /// from memory even while the store cannot be written: sled writes its
    /// counter once in a million ids, and after opening the database again
    /// it starts two million above the last it wrote, so ids given out
    /// meanwhile are never given again.
    pub(crate) fn generate_id(&self) -> Result<u64, StoreError> {
        self.read(|h| Ok(h.db.generate_id()?))
    }

    /// Runs the write `f` if the store is writable; a failure makes it
    /// unwritable (see the module's documentation).
    pub(crate) fn write<T>(&self, f: impl FnOnce(&Handles) -> Result<T, StoreError>) -> Result<T, StoreError> {
        if let Some(cause) = self.unwritable() {
            self.refused();
            return Err(StoreError::Unwritable { cause });
        }
        let result = self.injected().and_then(|()| f(&self.handles()?));
        match result {
            Err(e @ (StoreError::Sled(_) | StoreError::Unwritable { .. })) => {
                let cause = match &e {
                    StoreError::Sled(sled::Error::Io(io)) => io.to_string(),
                    other => other.to_string(),
                };
                self.failed(&cause);
                Err(StoreError::Unwritable { cause })
            }
            other => other,
        }
    }

    /// Runs the read `f` on the current handles.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Handles) -> Result<T, StoreError>) -> Result<T, StoreError> {
        f(&self.handles()?)
    }

    fn injected(&self) -> Result<(), StoreError> {
        match *lock(&self.shared.injected) {
            Some(kind) => Err(StoreError::Sled(sled::Error::Io(std::io::Error::from(kind)))),
            None => Ok(()),
        }
    }

    /// Makes every write fail with `kind` (a full disk: `StorageFull`), or
    /// write again (`None`), as a disk that fills and is freed would; for
    /// the tests of what fails safe.
    #[cfg(any(test, feature = "test-util"))]
    pub fn inject_write_failure(&self, kind: Option<std::io::ErrorKind>) {
        *lock(&self.shared.injected) = kind;
    }

    /// Why it cannot be written, if it cannot.
    pub fn unwritable(&self) -> Option<String> {
        let health = lock(&self.shared.health);
        (!health.now.writable).then(|| health.now.cause.clone().unwrap_or_default())
    }

    /// Whether it can be written, since when not, and how many writes failed.
    pub fn write_health(&self) -> WriteHealth {
        lock(&self.shared.health).now.clone()
    }

    /// How many times the database was opened again: a change tells the
    /// holders of state written through it (the evaluator's instances) to
    /// write it again.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// A write failed with `cause`: unwritable from now on, said once at
    /// ERROR, then summed up at most every [`UNWRITABLE_LOG_EVERY`].
    fn failed(&self, cause: &str) {
        let mut health = lock(&self.shared.health);
        health.now.failures += 1;
        if health.now.writable {
            health.now.writable = false;
            health.now.since = Some(wall_clock_now());
            health.now.cause = Some(cause.to_string());
            health.logged = Some((Instant::now(), health.now.failures));
            tracing::error!(
                message = "The state database cannot be written; no action or undo is sent until it can, and it is retried every second.",
                cause,
                path = ?self.shared.path,
            );
        } else {
            self.summarize(&mut health);
        }
    }

    /// A write refused while unwritable.
    fn refused(&self) {
        let mut health = lock(&self.shared.health);
        health.now.failures += 1;
        self.summarize(&mut health);
    }

    fn summarize(&self, health: &mut Health) {
        let due = health.logged.is_none_or(|(at, _)| at.elapsed() >= UNWRITABLE_LOG_EVERY);
        if due {
            let since_last = health.now.failures - health.logged.map_or(0, |(_, n)| n);
            health.logged = Some((Instant::now(), health.now.failures));
            tracing::error!(
                message = "The state database still cannot be written.",
                cause = health.now.cause.as_deref().unwrap_or(""),
                since = %health.now.since.map(crate::time::rfc3339).unwrap_or_default(),
                writes_refused = since_last,
                failures = health.now.failures,
            );
        }
    }

    /// Opens the database again if it cannot be written and space is back:
    /// a probe of [`PROBE_BYTES`] is written next to it first. Writable
    /// again only once `replay` (what the old handle lost, written again
    /// through the new one) and a flush succeed. `Ok(false)`: still
    /// unwritable, and why is in [`Store::write_health`].
    pub fn recover(&self, replay: impl FnOnce() -> Result<(), StoreError>) -> Result<bool, StoreError> {
        if self.unwritable().is_none() {
            return Ok(true);
        }
        if let Err(e) = self.injected().and_then(|()| self.probe()) {
            tracing::debug!(message = "The state database's disk is still unwritable.", error = %e);
            return Ok(false);
        }
        self.reopen()?;
        {
            // Writes go through again: the replay's, and the evaluator's.
            let mut health = lock(&self.shared.health);
            health.now.writable = true;
        }
        let replayed = replay().and_then(|()| self.flush());
        if let Err(e) = replayed {
            tracing::debug!(message = "Writing again after a reopening failed.", error = %e);
            return Ok(false);
        }
        let mut health = lock(&self.shared.health);
        let since = health.now.since.take();
        health.now.cause = None;
        health.now.recoveries += 1;
        health.logged = None;
        tracing::warn!(
            message = "The state database can be written again; actions and undos go out again.",
            unwritable_since = %since.map(crate::time::rfc3339).unwrap_or_default(),
            failures = health.now.failures,
        );
        Ok(true)
    }

    /// Writes and removes a probe file of [`PROBE_BYTES`] beside the database.
    fn probe(&self) -> Result<(), StoreError> {
        use std::io::Write;
        let Some(path) = &self.shared.path else { return Ok(()) };
        let mut probe = path.as_os_str().to_owned();
        probe.push(".probe");
        let probe = PathBuf::from(probe);
        let written = (|| {
            let mut file = std::fs::File::create(&probe)?;
            file.write_all(&vec![0u8; PROBE_BYTES])?;
            file.sync_all()
        })();
        let _ = std::fs::remove_file(&probe);
        written.map_err(|e| StoreError::Sled(sled::Error::Io(e)))
    }

    /// Drops the current handles and opens the database again.
    fn reopen(&self) -> Result<(), StoreError> {
        let Some(path) = &self.shared.path else {
            self.shared.generation.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        };
        let mut handles = self.shared.handles.write().unwrap_or_else(PoisonError::into_inner);
        lock(&self.shared.trees).clear();
        if let Some(old) = handles.take() {
            // Its buffered writes are lost (sled refuses them since its
            // failure); the caller writes them again.
            drop(old);
        }
        let deadline = Instant::now() + REOPEN_WAIT;
        let db = loop {
            match open_db(path) {
                Ok(db) => break db,
                Err(sled::Error::Io(e)) if e.kind() == std::io::ErrorKind::Other && Instant::now() < deadline => {
                    // The old handle still holds the file lock.
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        };
        let instances = db.open_tree("instances")?;
        *handles = Some(Handles { db, instances });
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
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
        self.write(|h| {
            if inst.is_idle() {
                h.instances.remove(key)?;
            } else {
                let value = serde_json::to_vec(inst).expect("instances serialize");
                h.instances.insert(key, value)?;
            }
            Ok(())
        })
    }

    /// Every stored instance of `rule`, by subject key.
    pub fn instances_of(&self, rule: &str) -> Result<HashMap<String, Instance>, StoreError> {
        let mut prefix = rule.as_bytes().to_vec();
        prefix.push(0);
        self.read(|h| {
            let mut out = HashMap::new();
            for item in h.instances.scan_prefix(&prefix) {
                let (k, v) = item?;
                let subject = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
                let inst: Instance = serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                    key: String::from_utf8_lossy(&k).into_owned(),
                    message: e.to_string(),
                })?;
                out.insert(subject, inst);
            }
            Ok(out)
        })
    }

    /// Flushes everything written so far to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.write(|h| {
            h.db.flush()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::{Instance, State};

    fn firing() -> Instance {
        Instance { state: State::Firing, ..Instance::new(0) }
    }

    #[test]
    fn a_failed_write_makes_the_store_unwritable_until_it_recovers() {
        let store = Store::temporary().unwrap();
        store.put_instance("r", "a", &firing()).unwrap();
        store.inject_write_failure(Some(std::io::ErrorKind::StorageFull));
        let error = store.put_instance("r", "b", &firing()).unwrap_err();
        assert!(matches!(&error, StoreError::Unwritable { cause } if cause.contains("no storage space")), "{error}");
        // Refused at once from now on, and counted; reads go on.
        assert!(matches!(store.flush(), Err(StoreError::Unwritable { .. })));
        let health = store.write_health();
        assert!(!health.writable && health.since.is_some());
        assert_eq!(health.failures, 2);
        assert_eq!(store.instances_of("r").unwrap().len(), 1);
        // Still full: the probe fails and nothing changes.
        assert!(!store.recover(|| Ok(())).unwrap());
        assert!(store.unwritable().is_some());
        // Space back: writable again, the replay written, the generation moved.
        store.inject_write_failure(None);
        let generation = store.generation();
        let replayed = store.clone();
        assert!(store.recover(move || replayed.put_instance("r", "b", &firing())).unwrap());
        assert_eq!(store.unwritable(), None);
        assert_eq!(store.generation(), generation + 1);
        assert_eq!(store.instances_of("r").unwrap().len(), 2);
        assert_eq!(store.write_health().recoveries, 1);
    }

    #[test]
    fn a_store_on_disk_is_opened_again_and_keeps_what_was_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.sled")).unwrap();
        store.put_instance("r", "a", &firing()).unwrap();
        store.flush().unwrap();
        store.inject_write_failure(Some(std::io::ErrorKind::StorageFull));
        assert!(store.put_instance("r", "b", &firing()).is_err());
        store.inject_write_failure(None);
        assert!(store.recover(|| Ok(())).unwrap());
        assert_eq!(store.generation(), 1, "the database was opened again");
        assert_eq!(store.instances_of("r").unwrap().keys().collect::<Vec<_>>(), ["a"]);
        store.put_instance("r", "c", &firing()).unwrap();
        store.flush().unwrap();
        assert_eq!(store.instances_of("r").unwrap().len(), 2);
    }
}
