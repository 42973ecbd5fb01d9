//! Switch ownership sharded between switch aggregators, through etcd.
//!
//! When a fabric outgrows one aggregator, several share its switches: each
//! switch's gNMI subscription and its switch actions belong to exactly one
//! aggregator at a time. Nothing here is a protocol of our own: leases,
//! transactions and a watch of etcd do all of it.
//!
//! # Design
//!
//! - **Membership.** Each aggregator of a shard group registers at
//!   `<prefix>shard/<group>/members/<identity>` under a lease of its own
//!   (`lease_ttl` of the `[fleet]` table, kept alive every third of it), and
//!   watches `<prefix>shard/<group>/`: the members and the claims.
//! - **Assignment.** Rendezvous (highest-random-weight) hashing of (switch,
//!   member) over the live members ([`owner_of`], [`weight`]): a join or a
//!   leave moves only the switches that must move. The hash is fixed (FNV-1a
//!   and the splitmix64 finaliser), so aggregators built by different
//!   compilers agree.
//! - **Ownership** is a claim, `<prefix>shard/<group>/owner/<switch>` =
//!   identity, put under the owner's lease in a transaction that succeeds
//!   only if the key does not exist (`create_revision == 0`). The claim, not
//!   the hash, makes ownership exclusive: two aggregators can disagree about
//!   the membership for a moment, never both hold a claim.
//! - **Rebalance** on every change of the members, of the claims or of the
//!   switch list, and every 500 ms: a switch the hash no longer gives us
//!   leaves the owned set at once, then its claim is released (deleted in a
//!   transaction comparing the value to our identity); a free switch the
//!   hash gives us is claimed; one the hash gives us while another still
//!   holds it is claimed once that claim goes (its holder lets go on its own
//!   rebalance, or its lease expires if it died: within `lease_ttl`).
//! - **What callers see.** The owned set, published through a
//!   [`tokio::sync::watch::Receiver`] ([`Shard::subscribe`]) for a sensor
//!   to subscribe and unsubscribe; [`Shard::owns`] (no network call) and
//!   [`Shard::confirm`] (re-reads the claim from etcd, as
//!   [`crate::election::Leadership::confirm`] does for leadership) for
//!   actuators, right before a switch action.
//! - **Fail safe.** The owned set holds only switches claimed under the
//!   current lease, for as long as that lease is known to live: it is
//!   emptied at once when the keep-alive fails, and at the latest when the
//!   last keep-alive answer (counted from when it was sent, so earlier than
//!   etcd counts) runs out, whether or not the keep-alive has noticed. A new
//!   session revokes the old lease first, then claims again.
//!
//! Every aggregator of a group must be given the same switch list (the
//! inventory) and a distinct identity: a switch the hash gives to an
//! aggregator that does not list it stays unowned until the lists agree.
//!
//! # Use
//!
//! A gNMI sensor follows the owned set; a switch actuator confirms right
//! before it writes:
//!
//! ```no_run
//! # use std::collections::BTreeSet;
//! # use std::sync::Arc;
//! # use fleet::shard::Shard;
//! # async fn subscribe(_switch: &str) {}
//! # async fn unsubscribe(_switch: &str) {}
//! # async fn escalate_pfc_watchdog(_switch: &str) {}
//! # async fn example(settings: fleet::FleetSettings, inventory: Vec<String>) -> Result<(), fleet::FleetError> {
//! let shard = Arc::new(Shard::start(&settings, "pod-a", inventory).await?);
//!
//! // The gNMI sensor: a subscription for each owned switch, none for others.
//! let mut owned = shard.subscribe();
//! tokio::spawn(async move {
//!     let mut subscribed = BTreeSet::new();
//!     loop {
//!         let now: BTreeSet<String> = owned.borrow_and_update().clone();
//!         for gone in subscribed.difference(&now) {
//!             unsubscribe(gone).await;
//!         }
//!         for new in now.difference(&subscribed) {
//!             subscribe(new).await;
//!         }
//!         subscribed = now;
//!         if owned.changed().await.is_err() {
//!             break;
//!         }
//!     }
//! });
//!
//! // A switch actuator: ask etcd right before the write.
//! if shard.confirm("leaf-07").await {
//!     escalate_pfc_watchdog("leaf-07").await;
//! } else {
//!     // Held: another aggregator owns leaf-07, or our claim is not confirmed.
//! }
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use tokio::sync::{oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::keys::{now_ms, Keys, MemberValue, ShardKey};
use crate::settings::FleetSettings;
use crate::FleetError;

mod rendezvous;

pub use rendezvous::{owner_of, weight};

/// Subtracted from a lease's known end: the owned set empties this much
/// before the lease could expire.
const MARGIN: Duration = Duration::from_millis(100);

/// A rebalance runs at least this often (a claim that failed on a transient
/// error is tried again).
const TICK: Duration = Duration::from_millis(500);

/// The session's lease, as far as this aggregator knows.
struct LeaseState {
    lease: Option<i64>,
    /// Before this instant the lease certainly lives.
    until: Instant,
}

/// A claim as read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim {
    identity: String,
    lease: i64,
}

struct Inner {
    client: Client,
    keys: Keys,
    group: String,
    identity: String,
    ttl: Duration,
    request_timeout: Duration,
    endpoints: Vec<String>,
    state: Mutex<LeaseState>,
    owned: watch::Sender<BTreeSet<String>>,
    members: Mutex<BTreeSet<String>>,
    switches: Mutex<BTreeSet<String>>,
    switches_changed: Notify,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inner {
    /// The lease, while it certainly lives.
    fn live_lease(&self) -> Option<i64> {
        let state = lock(&self.state);
        state.lease.filter(|_| Instant::now() < state.until)
    }

    /// Publishes `owned` if the session's lease is still `lease` and lives;
    /// the empty set otherwise.
    fn publish(&self, lease: i64, owned: BTreeSet<String>) {
        let state = lock(&self.state);
        let live = state.lease == Some(lease) && Instant::now() < state.until;
        let owned = if live { owned } else { BTreeSet::new() };
        self.owned.send_if_modified(|now| {
            if *now == owned {
                return false;
            }
            let (gained, lost) = (owned.difference(now).count(), now.difference(&owned).count());
            tracing::info!(message = "Owned switches changed.", group = %self.group, owned = owned.len(), gained, lost);
            *now = owned;
            true
        });
    }

    fn begin(&self, lease: i64, until: Instant) {
        *lock(&self.state) = LeaseState { lease: Some(lease), until };
    }

    fn renewed(&self, lease: i64, until: Instant) {
        let mut state = lock(&self.state);
        if state.lease == Some(lease) {
            state.until = until;
        }
    }

    /// The session is lost (or ending): nothing is owned any more.
    fn lose(&self, why: &str) {
        let mut state = lock(&self.state);
        state.lease = None;
        self.owned.send_if_modified(|now| {
            if now.is_empty() {
                return false;
            }
            tracing::warn!(message = "Shard session lost: no switch owned.", group = %self.group, dropped = now.len(), %why);
            now.clear();
            true
        });
    }

    async fn bounded<T, F, Fut>(&self, what: &str, attempt: F) -> Result<T, String>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        crate::retry::call(what, &self.endpoints, self.request_timeout, attempt).await
    }

    async fn txn(&self, what: &str, txn: Txn) -> Result<etcd_client::TxnResponse, String> {
        let kv = self.client.kv_client();
        self.bounded(what, || {
            let (mut kv, txn) = (kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// This aggregator's share of a shard group's switches. Its background task
/// stops when it is dropped, without releasing anything, as when the
/// process dies: its claims go when its lease lapses. [`Shard::leave`]
/// hands them over at once.
pub struct Shard {
    inner: Arc<Inner>,
    task: JoinHandle<()>,
}

impl Drop for Shard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Shard {
    /// Joins the shard group `group` as `settings.identity`, sharing
    /// `switches` (the inventory; every aggregator of the group is given the
    /// same) under a lease of `settings.lease_ttl`, on a client of its own.
    /// The session is started in the background; see [`Shard::ready`].
    pub async fn start(
        settings: &FleetSettings,
        group: &str,
        switches: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Shard, FleetError> {
        if group.is_empty() || group.contains('/') {
            return Err(FleetError::ShardGroup(group.to_string()));
        }
        let switches = checked(switches)?;
        let client = crate::client::connect_client(settings).await?;
        let (owned, _) = watch::channel(BTreeSet::new());
        let inner = Arc::new(Inner {
            client,
            keys: Keys::new(&settings.prefix),
            group: group.to_string(),
            identity: settings.identity.clone(),
            ttl: settings.lease_ttl,
            request_timeout: settings.request_timeout,
            endpoints: settings.endpoints.clone(),
            state: Mutex::new(LeaseState { lease: None, until: Instant::now() }),
            owned,
            members: Mutex::new(BTreeSet::new()),
            switches: Mutex::new(switches),
            switches_changed: Notify::new(),
        });
        let task = tokio::spawn(run(inner.clone()));
        Ok(Shard { inner, task })
    }

    /// Waits until the session is up (registered, under a live lease), at
    /// most `timeout`.
    pub async fn ready(&self, timeout: Duration) -> Result<(), FleetError> {
        let deadline = Instant::now() + timeout;
        while self.inner.live_lease().is_none() {
            if Instant::now() >= deadline {
                return Err(FleetError::Etcd {
                    endpoints: self.inner.endpoints.join(","),
                    error: format!("no shard session within {timeout:?}"),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// The owned set, as it changes: a sensor subscribes to these switches
    /// and to no others.
    pub fn subscribe(&self) -> watch::Receiver<BTreeSet<String>> {
        self.inner.owned.subscribe()
    }

    /// The switches owned now.
    pub fn owned(&self) -> BTreeSet<String> {
        if self.inner.live_lease().is_none() {
            return BTreeSet::new();
        }
        self.inner.owned.borrow().clone()
    }

    /// Whether this aggregator owns `switch` (no network call): claimed
    /// under a lease that certainly lives, and the hash still gives it here.
    pub fn owns(&self, switch: &str) -> bool {
        self.inner.live_lease().is_some() && self.inner.owned.borrow().contains(switch)
    }

    /// Asks etcd whether this aggregator owns `switch`: [`Shard::owns`], and
    /// the claim read now holds our identity under our live lease. Call it
    /// right before a switch action.
    pub async fn confirm(&self, switch: &str) -> bool {
        let Some(lease) = self.inner.live_lease() else { return false };
        if !self.owns(switch) {
            return false;
        }
        let key = self.inner.keys.shard_owner(&self.inner.group, switch);
        let mut kv = self.inner.client.kv_client();
        let read = tokio::time::timeout(self.inner.request_timeout, kv.get(key, None)).await;
        let ours = match read {
            Ok(Ok(r)) => {
                r.kvs().first().is_some_and(|kv| kv.value() == self.inner.identity.as_bytes() && kv.lease() == lease)
            }
            _ => false,
        };
        ours && self.inner.live_lease() == Some(lease)
    }

    /// Who holds `switch`'s claim, read from etcd now: `None` when nobody
    /// does, or etcd did not answer. For the reason an action is held.
    pub async fn holder(&self, switch: &str) -> Option<String> {
        let key = self.inner.keys.shard_owner(&self.inner.group, switch);
        let mut kv = self.inner.client.kv_client();
        let read = tokio::time::timeout(self.inner.request_timeout, kv.get(key, None)).await.ok()?.ok()?;
        read.kvs().first().map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
    }

    /// The live members of the group, as last seen.
    pub fn members(&self) -> BTreeSet<String> {
        lock(&self.inner.members).clone()
    }

    /// Replaces the switch list (the inventory changed). Switches no longer
    /// listed leave the owned set and are released.
    pub fn set_switches(&self, switches: impl IntoIterator<Item = impl Into<String>>) -> Result<(), FleetError> {
        *lock(&self.inner.switches) = checked(switches)?;
        self.inner.switches_changed.notify_one();
        Ok(())
    }

    /// This aggregator's identity.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The shard group.
    pub fn group(&self) -> &str {
        &self.inner.group
    }

    /// Leaves the group now (a clean stop): the owned set empties, then the
    /// lease is revoked, which deletes the membership and every claim at
    /// once, so the others take the switches over without waiting for it to
    /// lapse.
    pub async fn leave(&self) -> Result<(), FleetError> {
        self.task.abort();
        let lease = lock(&self.inner.state).lease;
        self.inner.lose("leaving the shard group");
        let Some(lease) = lease else { return Ok(()) };
        let leases = self.inner.client.lease_client();
        self.inner
            .bounded("revoking the shard lease", || {
                let mut leases = leases.clone();
                async move { leases.revoke(lease).await }
            })
            .await
            .map(|_| ())
            .map_err(|error| FleetError::Etcd { endpoints: self.inner.endpoints.join(","), error })
    }
}

fn checked(switches: impl IntoIterator<Item = impl Into<String>>) -> Result<BTreeSet<String>, FleetError> {
    let switches: BTreeSet<String> = switches.into_iter().map(Into::into).collect();
    if switches.iter().any(String::is_empty) {
        return Err(FleetError::EmptySwitchName);
    }
    Ok(switches)
}

/// Sessions, one after another, for as long as the task runs.
async fn run(inner: Arc<Inner>) {
    let mut delays = crate::retry::reconnect_delays();
    let mut previous = None;
    loop {
        let started = Instant::now();
        let why = session(&inner, &mut previous).await;
        inner.lose(&why);
        tracing::debug!(message = "Shard session ended; starting another.", group = %inner.group, %why);
        if started.elapsed() > inner.ttl {
            delays = crate::retry::reconnect_delays();
        }
        tokio::time::sleep(delays.next().unwrap_or(crate::retry::RECONNECT_MAX)).await;
    }
}

/// One session: a lease, the membership under it, then the watch and the
/// rebalances until the lease is lost. Returns why it ended.
async fn session(inner: &Arc<Inner>, previous: &mut Option<i64>) -> String {
    let leases = inner.client.lease_client();
    // Claims of a lost session may outlive it (etcd restarted, or the
    // keep-alive stream broke while the lease lived): give them back first.
    if let Some(old) = previous.take() {
        let revoked = inner
            .bounded("revoking the previous shard lease", || {
                let mut leases = leases.clone();
                async move { leases.revoke(old).await }
            })
            .await;
        if let Err(why) = revoked {
            // Not found (it expired) is the common case; otherwise its
            // claims lapse with it, and the rebalance deletes ours it sees.
            tracing::debug!(message = "Previous shard lease not revoked.", %why);
        }
    }
    let ttl = inner.ttl.as_secs().max(2) as i64;
    let sent = Instant::now();
    let granted = match inner
        .bounded("granting a shard lease", || {
            let mut leases = leases.clone();
            async move { leases.grant(ttl, None).await }
        })
        .await
    {
        Ok(g) => g,
        Err(why) => return why,
    };
    let lease = granted.id();
    *previous = Some(lease);
    let until = sent + Duration::from_secs(granted.ttl().max(0) as u64).saturating_sub(MARGIN);
    let member = MemberValue { identity: inner.identity.clone(), since_ms: now_ms(), pid: std::process::id() };
    let key = inner.keys.shard_member(&inner.group, &inner.identity);
    let value = serde_json::to_string(&member).unwrap_or_default();
    let put = Txn::new().and_then(vec![TxnOp::put(key, value, Some(PutOptions::new().with_lease(lease)))]);
    if let Err(why) = inner.txn("registering in the shard group", put).await {
        return why;
    }
    let (keeper, stream) = match inner
        .bounded("starting the shard lease keep-alive", || {
            let mut leases = leases.clone();
            async move { leases.keep_alive(lease).await }
        })
        .await
    {
        Ok(k) => k,
        Err(why) => return why,
    };
    inner.begin(lease, until);
    tracing::info!(message = "Shard session established.", group = %inner.group, lease = format!("{lease:x}"));
    let (lost_tx, mut lost_rx) = oneshot::channel();
    let _keeper = AbortOnDrop(tokio::spawn(keep_alive(inner.clone(), lease, keeper, stream, lost_tx)));
    loop {
        match follow(inner, lease, &mut lost_rx).await {
            Ended::Lost(why) => return why,
            Ended::Watch(why) => {
                tracing::debug!(message = "Shard watch ended; reading again.", group = %inner.group, %why);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Keeps the lease alive every third of its TTL; on failure, or when no
/// answer comes before the lease could expire, empties the owned set and
/// says so on `lost`.
async fn keep_alive(
    inner: Arc<Inner>,
    lease: i64,
    mut keeper: etcd_client::LeaseKeeper,
    mut stream: etcd_client::LeaseKeepAliveStream,
    lost: oneshot::Sender<String>,
) {
    let period = inner.ttl / 3;
    let why = loop {
        let until = lock(&inner.state).until;
        tokio::time::sleep(period.min(until.saturating_duration_since(Instant::now()))).await;
        let sent = Instant::now();
        let answer = tokio::time::timeout_at(until, async {
            keeper.keep_alive().await.map_err(|e| format!("shard lease keep-alive: {e}"))?;
            match stream.message().await {
                Ok(Some(r)) if r.ttl() > 0 => Ok(r.ttl()),
                Ok(Some(_)) => Err("the shard lease expired".to_string()),
                Ok(None) => Err("the shard lease keep-alive stream closed".to_string()),
                Err(e) => Err(format!("shard lease keep-alive: {e}")),
            }
        })
        .await;
        match answer {
            Ok(Ok(ttl)) => inner.renewed(lease, sent + Duration::from_secs(ttl as u64).saturating_sub(MARGIN)),
            Ok(Err(why)) => break why,
            Err(_) => break "no shard lease keep-alive answer before the lease could expire".to_string(),
        }
    };
    inner.lose(&why);
    let _ = lost.send(why);
}

enum Ended {
    /// The lease is lost: a new session.
    Lost(String),
    /// The watch failed: read again, same lease.
    Watch(String),
}

/// The group as seen through the watch: members, claims, and the revision
/// last applied to each key (an event older than what a transaction of ours
/// already applied is ignored).
#[derive(Default)]
struct View {
    members: BTreeSet<String>,
    claims: BTreeMap<String, Claim>,
    revisions: BTreeMap<String, i64>,
}

impl View {
    /// `key` at `revision`: its value and lease, or deleted (`None`).
    fn apply(&mut self, keys: &Keys, group: &str, key: &str, revision: i64, now: Option<(&[u8], i64)>) {
        let Some(parsed) = keys.parse_shard(group, key) else { return };
        if self.revisions.get(key).is_some_and(|&r| r >= revision) {
            return;
        }
        self.revisions.insert(key.to_string(), revision);
        match (parsed, now) {
            (ShardKey::Member(id), Some(_)) => {
                self.members.insert(id.to_string());
            }
            (ShardKey::Member(id), None) => {
                self.members.remove(id);
            }
            (ShardKey::Owner(switch), Some((value, lease))) => {
                let identity = String::from_utf8_lossy(value).into_owned();
                self.claims.insert(switch.to_string(), Claim { identity, lease });
            }
            (ShardKey::Owner(switch), None) => {
                self.claims.remove(switch);
            }
        }
    }
}

/// Reads the group, then follows it: a rebalance after every change.
async fn follow(inner: &Arc<Inner>, lease: i64, lost: &mut oneshot::Receiver<String>) -> Ended {
    let prefix = inner.keys.shard(&inner.group);
    let kv = inner.client.kv_client();
    let read = inner
        .bounded("reading the shard group", || {
            let (mut kv, prefix) = (kv.clone(), prefix.clone());
            async move { kv.get(prefix, Some(GetOptions::new().with_prefix())).await }
        })
        .await;
    let read = match read {
        Ok(r) => r,
        Err(why) => return Ended::Watch(why),
    };
    let mut view = View::default();
    for kv in read.kvs() {
        let key = String::from_utf8_lossy(kv.key());
        view.apply(&inner.keys, &inner.group, &key, kv.mod_revision(), Some((kv.value(), kv.lease())));
    }
    let revision = read.header().map(|h| h.revision()).unwrap_or(0);
    let watch = inner.client.watch_client();
    let options = WatchOptions::new().with_prefix().with_start_revision(revision + 1);
    let stream = inner
        .bounded("watching the shard group", || {
            let (mut watch, prefix, options) = (watch.clone(), prefix.clone(), options.clone());
            async move { watch.watch(prefix, Some(options)).await }
        })
        .await;
    let mut stream = match stream {
        Ok(s) => s,
        Err(why) => return Ended::Watch(why),
    };
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        *lock(&inner.members) = view.members.clone();
        if !view.members.contains(&inner.identity) {
            // Our membership was deleted under a live lease: nothing is
            // assigned to us any more; register again in a new session.
            return Ended::Lost("this aggregator's membership key was deleted".into());
        }
        rebalance(inner, lease, &mut view).await;
        tokio::select! {
            why = &mut *lost => {
                return Ended::Lost(why.unwrap_or_else(|_| "the shard lease keep-alive stopped".into()));
            }
            message = stream.message() => match message {
                Ok(Some(response)) => {
                    if response.canceled() {
                        return Ended::Watch(format!("shard watch canceled: {}", response.cancel_reason()));
                    }
                    for event in response.events() {
                        let Some(kv) = event.kv() else { continue };
                        let key = String::from_utf8_lossy(kv.key());
                        let now = match event.event_type() {
                            EventType::Put => Some((kv.value(), kv.lease())),
                            EventType::Delete => None,
                        };
                        view.apply(&inner.keys, &inner.group, &key, kv.mod_revision(), now);
                    }
                }
                Ok(None) => return Ended::Watch("shard watch closed".into()),
                Err(e) => return Ended::Watch(format!("shard watch: {e}")),
            },
            () = inner.switches_changed.notified() => {}
            _ = tick.tick() => {}
        }
    }
}

/// The switches the hash gives this aggregator among `view`'s members.
fn assigned(inner: &Inner, view: &View, switches: &BTreeSet<String>) -> BTreeSet<String> {
    switches
        .iter()
        .filter(|s| owner_of(s, view.members.iter().map(String::as_str)) == Some(inner.identity.as_str()))
        .cloned()
        .collect()
}

/// Claimed under `lease` and assigned here.
fn owned_of(inner: &Inner, view: &View, lease: i64, assigned: &BTreeSet<String>) -> BTreeSet<String> {
    assigned
        .iter()
        .filter(|s| view.claims.get(*s).is_some_and(|c| c.identity == inner.identity && c.lease == lease))
        .cloned()
        .collect()
}

/// Releases what is no longer ours, claims what is free and ours, and
/// publishes the owned set before (stop acting first) and after. Stops at
/// the first failed request: the next rebalance tries again.
async fn rebalance(inner: &Inner, lease: i64, view: &mut View) {
    let switches = lock(&inner.switches).clone();
    let assigned = assigned(inner, view, &switches);
    inner.publish(lease, owned_of(inner, view, lease, &assigned));

    let release: Vec<(String, i64)> = view
        .claims
        .iter()
        .filter(|(s, c)| c.identity == inner.identity && (c.lease != lease || !assigned.contains(*s)))
        .map(|(s, c)| (s.clone(), c.lease))
        .collect();
    for (switch, held_under) in release {
        if inner.live_lease() != Some(lease) {
            return;
        }
        let key = inner.keys.shard_owner(&inner.group, &switch);
        let txn = Txn::new()
            .when(vec![
                Compare::value(key.clone(), CompareOp::Equal, inner.identity.clone()),
                Compare::lease(key.clone(), CompareOp::Equal, held_under),
            ])
            .and_then(vec![TxnOp::delete(key.clone(), None)]);
        match inner.txn("releasing a switch", txn).await {
            Ok(r) => {
                if r.succeeded() {
                    let revision = r.header().map(|h| h.revision()).unwrap_or(0);
                    view.apply(&inner.keys, &inner.group, &key, revision, None);
                    tracing::debug!(message = "Switch released.", group = %inner.group, %switch);
                }
                // Otherwise it changed under us: the watch says how.
            }
            Err(why) => {
                tracing::debug!(message = "Releasing a switch failed; trying again.", %switch, %why);
                return;
            }
        }
    }

    let free: Vec<String> = assigned.iter().filter(|s| !view.claims.contains_key(*s)).cloned().collect();
    for switch in free {
        if inner.live_lease() != Some(lease) {
            return;
        }
        let key = inner.keys.shard_owner(&inner.group, &switch);
        let txn = Txn::new()
            .when(vec![Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then(vec![TxnOp::put(key.clone(), inner.identity.clone(), Some(PutOptions::new().with_lease(lease)))])
            .or_else(vec![TxnOp::get(key.clone(), None)]);
        match inner.txn("claiming a switch", txn).await {
            Ok(r) if r.succeeded() => {
                let revision = r.header().map(|h| h.revision()).unwrap_or(0);
                view.apply(&inner.keys, &inner.group, &key, revision, Some((inner.identity.as_bytes(), lease)));
                tracing::debug!(message = "Switch claimed.", group = %inner.group, %switch);
            }
            Ok(r) => {
                // Held by another: note it; its delete will come through the watch.
                for op in r.op_responses() {
                    if let TxnOpResponse::Get(got) = op {
                        for kv in got.kvs() {
                            view.apply(
                                &inner.keys,
                                &inner.group,
                                &key,
                                kv.mod_revision(),
                                Some((kv.value(), kv.lease())),
                            );
                        }
                    }
                }
            }
            Err(why) => {
                tracing::debug!(message = "Claiming a switch failed; trying again.", %switch, %why);
                return;
            }
        }
    }
    inner.publish(lease, owned_of(inner, view, lease, &assigned));
}
