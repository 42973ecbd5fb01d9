//! Leader election for switch aggregators, with etcd's election API.
//!
//! Two aggregators watching the same switches both see every fault; only
//! the leader may change switch configuration. Each candidate campaigns
//! under a lease of its own; the election makes one of them leader. If the
//! leader dies its lease lapses, its leader key goes with it, and the
//! standby's pending campaign returns: it takes over within one lease TTL.
//!
//! Leadership is checked again right before each change
//! ([`Leadership::confirm`]): a leader that lost its lease while it was
//! paused (a long GC, a partition) finds out before it writes, not after.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, LeaderKey};
use tokio::task::JoinHandle;

use crate::keys::Keys;
use crate::FleetError;

/// A candidate in one election.
pub struct Candidate {
    client: Client,
    name: String,
    identity: String,
    ttl: Duration,
}

/// Won leadership. Dropping it stops the keep-alive without resigning, as
/// when the process dies: the standby takes over once the lease lapses.
pub struct Leadership {
    client: Client,
    key: LeaderKey,
    lease: i64,
    alive: Arc<AtomicBool>,
    keepalive: JoinHandle<()>,
    identity: String,
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.keepalive.abort();
    }
}

fn etcd(what: &str, e: impl std::fmt::Display) -> FleetError {
    FleetError::Etcd { endpoints: "etcd".into(), error: format!("{what}: {e}") }
}

impl Candidate {
    /// A candidate named `identity` in the election `election` (e.g.
    /// `switch-aggregator/pod-a`) under `prefix`, with a lease of `ttl`.
    pub fn new(client: Client, prefix: &str, election: &str, identity: &str, ttl: Duration) -> Candidate {
        Candidate { client, name: Keys::new(prefix).election(election), identity: identity.to_string(), ttl }
    }

    /// Campaigns until this candidate leads. Returns when it does.
    pub async fn campaign(&self) -> Result<Leadership, FleetError> {
        let ttl = self.ttl.as_secs().max(2) as i64;
        let mut leases = self.client.lease_client();
        let lease = leases.grant(ttl, None).await.map_err(|e| etcd("granting a lease", e))?.id();
        let (mut keeper, mut stream) =
            leases.keep_alive(lease).await.map_err(|e| etcd("starting lease keep-alive", e))?;
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        let period = self.ttl / 3;
        // The lease must stay alive while the campaign waits, and after.
        let keepalive = tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let ok =
                    keeper.keep_alive().await.is_ok() && matches!(stream.message().await, Ok(Some(r)) if r.ttl() > 0);
                if !ok {
                    flag.store(false, Ordering::SeqCst);
                    return;
                }
            }
        });
        let mut election = self.client.election_client();
        // A standby's campaign blocks until the leader goes; the client's
        // per-request timeout cuts it off (and a member may fail under it),
        // so campaign again (same lease, same key: etcd keeps our place in
        // line) for as long as the lease lives.
        let key = loop {
            let lapsed = async {
                while alive.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            let result = tokio::select! {
                r = election.campaign(self.name.clone(), self.identity.clone(), lease) => r,
                () = lapsed => {
                    keepalive.abort();
                    return Err(etcd("campaign", "the lease lapsed while waiting"));
                }
            };
            match result {
                Ok(mut r) => break r.take_leader().ok_or_else(|| etcd("campaign", "no leader key in the answer"))?,
                Err(e) if alive.load(Ordering::SeqCst) => {
                    let timed_out = matches!(&e, etcd_client::Error::GRpcStatus(s)
                        if matches!(s.code(), tonic::Code::Cancelled | tonic::Code::DeadlineExceeded));
                    if !timed_out {
                        tracing::debug!(message = "Campaign interrupted; campaigning again.", error = %e);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                Err(e) => {
                    keepalive.abort();
                    return Err(etcd("campaign (the lease lapsed)", e));
                }
            }
        };
        tracing::info!(message = "Elected leader.", election = %self.name, identity = %self.identity);
        Ok(Leadership { client: self.client.clone(), key, lease, alive, keepalive, identity: self.identity.clone() })
    }
}

impl Leadership {
    /// Whether the lease is still kept alive (no network call).
    pub fn is_leader(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Asks etcd whether this candidate still leads: the election's leader
    /// key must be ours. Call right before changing a switch.
    pub async fn confirm(&self) -> bool {
        if !self.is_leader() {
            return false;
        }
        let mut election = self.client.election_client();
        match tokio::time::timeout(Duration::from_secs(2), election.leader(self.key.name().to_vec())).await {
            Ok(Ok(r)) => r.kv().is_some_and(|kv| kv.key() == self.key.key() && kv.lease() == self.lease),
            _ => false,
        }
    }

    /// This leader's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Steps down now (a clean stop): the standby takes over at once.
    pub async fn resign(self) -> Result<(), FleetError> {
        let mut election = self.client.election_client();
        let options = etcd_client::ResignOptions::new().with_leader(self.key.clone());
        election.resign(Some(options)).await.map_err(|e| etcd("resign", e))?;
        let mut leases = self.client.lease_client();
        leases.revoke(self.lease).await.map_err(|e| etcd("revoking the lease", e))?;
        Ok(())
    }
}

/// The leader of `election` under `prefix`, if any.
pub async fn leader(client: &Client, prefix: &str, election: &str) -> Result<Option<String>, FleetError> {
    let mut e = client.election_client();
    match e.leader(Keys::new(prefix).election(election)).await {
        Ok(r) => Ok(r.kv().map(|kv| String::from_utf8_lossy(kv.value()).into_owned())),
        // etcd answers "election: no leader" as an error.
        Err(err) if err.to_string().contains("no leader") => Ok(None),
        Err(err) => Err(etcd("reading the leader", err)),
    }
}

/// Campaigns in `election` for as long as the task runs: after a win,
/// watches the lease, and campaigns again once it is lost.
pub(crate) async fn keep_campaigning(
    client: Client,
    settings: crate::settings::FleetSettings,
    election: String,
    slot: Arc<tokio::sync::Mutex<Option<Leadership>>>,
) {
    let candidate = Candidate::new(client, &settings.prefix, &election, &settings.identity, settings.lease_ttl);
    loop {
        match candidate.campaign().await {
            Ok(won) => {
                *slot.lock().await = Some(won);
                loop {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    if !slot.lock().await.as_ref().is_some_and(|l| l.is_leader()) {
                        break;
                    }
                }
                tracing::warn!(message = "Aggregator leadership lost; campaigning again.", %election);
                *slot.lock().await = None;
            }
            Err(error) => {
                tracing::debug!(message = "Aggregator campaign failed; trying again.", %election, %error);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
