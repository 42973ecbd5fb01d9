//! Actions in effect on a switch, handed from one aggregator to the next.
//!
//! Aggregators that share their switches ([`crate::shard`]) change each
//! switch from its owner only. When the owner dies, or leaves, the switch
//! moves, and so must what the owner left in effect there: otherwise the
//! escalated PFC watchdog or the lowered ECN threshold is never undone, and
//! the next owner, finding the change in place, could not tell it from an
//! operator's.
//!
//! - **Recorded** by the owner right after it executes a switch action, at
//!   `<prefix>handover/<group>/<switch>/<action>`, keyed by the action (its
//!   kind and target: one of each is in effect at a time, and decision ids
//!   are each daemon's own): the executed decision, who took it and the
//!   `node` label of its series. Without a lease: the record must outlive
//!   its aggregator, since its death is what hands the switch over.
//!   Deleted when the action is undone or found gone; written again by the
//!   adopter, in its name.
//! - **Adopted** by the next owner: when a switch enters its owned set, it
//!   reads the switch's records and hands each to its dispatcher
//!   ([`engine::contracts::Coordinator::take_adopted`]), which records it
//!   in its own ledger and counts it in effect; it is then reverified, and
//!   undone when the new owner's instance of its rule resolves, as if the
//!   new owner had taken it. A subject's `node` label that was the previous
//!   owner's becomes this aggregator's, since every aggregator labels its
//!   switch series with its own node: that is what lets the new owner's
//!   instance of the rule match it.
//! - **Best effort, said loudly.** A record that cannot be written is
//!   logged as an error: the action stays in effect and in the ledger of the
//!   aggregator that took it, where an operator finds it with `rocemend
//!   status` and undoes it by hand. A read that fails is tried again every
//!   second while the switch stays ours.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::contracts::Adopted;
use engine::dispatch::Decision;
use engine::Action;
use etcd_client::{Client, GetOptions};
use serde::{Deserialize, Serialize};

use crate::keys::Keys;
use crate::shard::Shard;

/// How often a switch whose records could not be read is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// What is stored for one action in effect.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The aggregator that took it.
    pub by: String,
    /// The `node` label its series carried there.
    pub node: String,
    /// The executed decision.
    pub decision: Decision,
}

/// The records of one shard group: written, deleted, and read for the
/// switches taken over.
pub struct Handover {
    client: Client,
    keys: Keys,
    group: String,
    identity: String,
    node: String,
    request_timeout: Duration,
    adopted: Mutex<Vec<Adopted>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Handover {
    /// The records of `shard`'s group, kept by this aggregator, whose switch
    /// series carry the `node` label `node`.
    pub fn new(client: Client, prefix: &str, shard: &Shard, node: &str, request_timeout: Duration) -> Handover {
        Handover {
            client,
            keys: Keys::new(prefix),
            group: shard.group().to_string(),
            identity: shard.identity().to_string(),
            node: node.to_string(),
            request_timeout,
            adopted: Mutex::new(Vec::new()),
        }
    }

    /// Records the executed `decision` on `switch`.
    pub async fn record(&self, decision: &Decision, switch: &str) {
        let record = Record { by: self.identity.clone(), node: self.node.clone(), decision: decision.clone() };
        let key = self.keys.handover(&self.group, switch, &decision.proposal.action.dedup_key());
        let value = match serde_json::to_string(&record) {
            Ok(v) => v,
            Err(error) => {
                tracing::error!(message = "Could not encode an action's hand-over record.", id = %decision.id, %error);
                return;
            }
        };
        let mut kv = self.client.kv_client();
        match tokio::time::timeout(self.request_timeout, kv.put(key, value, None)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => self.unrecorded(&decision.id, switch, &e.to_string()),
            Err(_) => self.unrecorded(&decision.id, switch, &format!("no answer within {:?}", self.request_timeout)),
        }
    }

    fn unrecorded(&self, id: &str, switch: &str, why: &str) {
        tracing::error!(
            message = "Could not record an action in effect for the switch's next owner; if this aggregator \
                       dies, undo it by hand.",
            %id,
            %switch,
            error = %why
        );
    }

    /// Deletes the record of `action` on `switch`.
    pub async fn forget(&self, action: &Action, switch: &str) {
        let id = action.dedup_key();
        let key = self.keys.handover(&self.group, switch, &id);
        let mut kv = self.client.kv_client();
        match tokio::time::timeout(self.request_timeout, kv.delete(key, None)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(message = "Could not delete a hand-over record.", %id, %switch, error = %e),
            Err(_) => tracing::warn!(message = "Could not delete a hand-over record: no answer.", %id, %switch),
        }
    }

    /// The records read so far for switches taken over, drained.
    pub fn take(&self) -> Vec<Adopted> {
        std::mem::take(&mut *lock(&self.adopted))
    }

    /// Reads the records of every switch that enters `shard`'s owned set,
    /// for as long as the shard runs.
    pub async fn follow(self: Arc<Self>, shard: Arc<Shard>) {
        let mut owned = shard.subscribe();
        let mut read: BTreeSet<String> = BTreeSet::new();
        loop {
            let now = owned.borrow_and_update().clone();
            // A switch that left may come back with new records.
            read.retain(|s| now.contains(s));
            let unread: Vec<&String> = now.iter().filter(|s| !read.contains(*s)).collect();
            for switch in unread {
                match self.read(switch).await {
                    Ok(found) => {
                        lock(&self.adopted).extend(found);
                        read.insert(switch.clone());
                    }
                    Err(error) => tracing::warn!(
                        message = "Could not read the actions in effect on a switch taken over; trying again.",
                        %switch,
                        %error
                    ),
                }
            }
            let pending = now.len() != read.len();
            tokio::select! {
                changed = owned.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(RETRY), if pending => {}
            }
        }
    }

    /// The records of `switch`, as adoptions.
    async fn read(&self, switch: &str) -> Result<Vec<Adopted>, String> {
        let mut kv = self.client.kv_client();
        let prefix = self.keys.handovers(&self.group, switch);
        let answer = tokio::time::timeout(self.request_timeout, kv.get(prefix, Some(GetOptions::new().with_prefix())))
            .await
            .map_err(|_| format!("no answer within {:?}", self.request_timeout))?
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for kv in answer.kvs() {
            match serde_json::from_slice::<Record>(kv.value()) {
                Ok(record) => out.push(self.adoption(record, switch)),
                Err(error) => tracing::error!(
                    message = "A hand-over record does not parse; left in place for an operator.",
                    key = %String::from_utf8_lossy(kv.key()),
                    %error
                ),
            }
        }
        Ok(out)
    }

    fn adoption(&self, record: Record, switch: &str) -> Adopted {
        let mut decision = record.decision;
        if decision.proposal.subject.get("node") == Some(record.node.as_str()) {
            decision.proposal.subject.insert("node", self.node.clone());
        }
        Adopted { decision, from: record.by, switch: switch.to_string() }
    }
}
