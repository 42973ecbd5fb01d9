//! What the ledger holds in memory until it is known to be on disk.
//!
//! sled buffers writes and flushes them every half second by itself, or
//! when asked. When a write or a flush fails (a full disk), sled refuses
//! every later write until the database is opened again, and what it
//! buffered since its last flush is lost with the old handle. So the
//! ledger keeps two sets of records, each the latest version of a record:
//!
//! - *unflushed*: written into sled since the ledger's last successful
//!   flush (the dispatcher flushes on its tick, and before every actuator
//!   call);
//! - *unsaved*: refused by sled, or unflushed when a flush failed. Reads
//!   see them over what is on disk, so an undo finds what its original
//!   changed even when that outcome never reached the disk.
//!
//! When the store recovers, both are written again through the new handle
//! ([`super::Ledger::recover`]). Both are bounded: past [`MAX_UNSAVED`]
//! the oldest records that are not live (a restart does not need them:
//! held, suppressed, undone) are forgotten and counted as lost; live ones
//! (intents, actions in effect) are never dropped, and there are as many of
//! them as actions in effect.

use std::collections::BTreeMap;

use crate::contracts::Decision;

/// Records kept in memory for a store that cannot be written: a storm's
/// worth of decisions (at about 2 KiB each, 20 MiB), while the disk is full.
pub const MAX_UNSAVED: usize = 10_000;

/// See the module's documentation.
#[derive(Debug, Default)]
pub(super) struct Journal {
    pub unsaved: BTreeMap<String, Decision>,
    pub unflushed: BTreeMap<String, Decision>,
    /// Records forgotten past [`MAX_UNSAVED`] since the daemon started.
    pub lost: u64,
}

impl Journal {
    /// `d` is written into sled (not yet flushed).
    pub fn written(&mut self, d: &Decision) {
        self.unsaved.remove(&d.id);
        self.unflushed.insert(d.id.clone(), d.clone());
    }

    /// sled refused `d`.
    pub fn refused(&mut self, d: &Decision) {
        self.unflushed.remove(&d.id);
        self.unsaved.insert(d.id.clone(), d.clone());
        self.bound();
    }

    /// A flush succeeded: everything written is on disk.
    pub fn flushed(&mut self) {
        self.unflushed.clear();
    }

    /// A flush failed: what was written since the last one may not be on disk.
    pub fn flush_failed(&mut self) {
        for (id, d) in std::mem::take(&mut self.unflushed) {
            self.unsaved.entry(id).or_insert(d);
        }
        self.bound();
    }

    /// What to write again after the store is opened again, in id order.
    pub fn replay(&self) -> Vec<Decision> {
        let mut all = self.unflushed.clone();
        all.extend(self.unsaved.iter().map(|(k, v)| (k.clone(), v.clone())));
        all.into_values().collect()
    }

    /// Forgets the oldest records that are not live past [`MAX_UNSAVED`].
    fn bound(&mut self) {
        while self.unsaved.len() > MAX_UNSAVED {
            let oldest = self.unsaved.iter().find(|(_, d)| !super::is_live(d)).map(|(id, _)| id.clone());
            let Some(id) = oldest else { break };
            self.unsaved.remove(&id);
            self.lost += 1;
            if self.lost == 1 || self.lost.is_power_of_two() {
                tracing::error!(
                    message =
                        "Ledger records forgotten: the state database cannot be written and too many wait in memory.",
                    lost = self.lost,
                    kept = MAX_UNSAVED,
                );
            }
        }
    }
}
