//! The daemon's session with etcd, kept in the background: a lease with
//! keep-alive (the daemon's tokens and membership live under it), the
//! health the dispatcher reads without a network call, and a watch on the
//! fleet breaker so every daemon sees a trip within a second.
//!
//! When etcd cannot be reached the session marks itself unreachable and
//! tries again, backing off to one second; when etcd returns it takes a new
//! lease and puts the tokens it still holds back under it, so a partition
//! does not make this daemon's actions in effect vanish from the budget.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::contracts::{FleetBreaker, Health};
use etcd_client::{
    Client, EventType, GetOptions, GetResponse, LeaseKeepAliveStream, LeaseKeeper, PutOptions, Txn, TxnOp, TxnResponse,
    WatchOptions,
};

use crate::keys::{now_ms, BreakerValue, Keys, MemberValue, TokenValue};
use crate::settings::FleetSettings;

/// State shared by the coordinator and its background tasks.
pub(crate) struct Shared {
    pub client: Client,
    pub settings: FleetSettings,
    pub keys: Keys,
    lease: Mutex<Option<i64>>,
    health: Mutex<Health>,
    breaker: Mutex<FleetBreaker>,
    /// Token keys this daemon holds, with their values: put back under a
    /// new lease after a lost session.
    held: Mutex<BTreeMap<String, String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    pub fn new(client: Client, settings: FleetSettings) -> Shared {
        Shared {
            client,
            keys: Keys::new(&settings.prefix),
            settings,
            lease: Mutex::new(None),
            health: Mutex::new(Health::Unreachable("no session with etcd yet".into())),
            breaker: Mutex::new(FleetBreaker::default()),
            held: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn lease(&self) -> Option<i64> {
        *lock(&self.lease)
    }

    pub fn health(&self) -> Health {
        lock(&self.health).clone()
    }

    pub fn breaker(&self) -> FleetBreaker {
        lock(&self.breaker).clone()
    }

    pub fn set_breaker(&self, state: FleetBreaker) {
        *lock(&self.breaker) = state;
    }

    /// Remembers a token taken; windowed tokens whose window has ended are
    /// dropped from memory here, so the map stays as small as the budget.
    pub fn hold(&self, key: String, value: String) {
        let now = now_ms();
        let mut held = lock(&self.held);
        held.retain(|_, v| serde_json::from_str::<TokenValue>(v).map(|t| t.live(now)).unwrap_or(true));
        held.insert(key, value);
    }

    pub fn forget(&self, key: &str) {
        lock(&self.held).remove(key);
    }

    pub fn held_keys(&self) -> Vec<String> {
        lock(&self.held).keys().cloned().collect()
    }

    fn unreachable(&self, why: String) {
        *lock(&self.lease) = None;
        let mut health = lock(&self.health);
        if *health == Health::Reachable {
            tracing::warn!(message = "etcd unreachable: fleet-scoped actions are held.", %why);
        }
        *health = Health::Unreachable(why);
    }

    fn reachable(&self, lease: i64) {
        *lock(&self.lease) = Some(lease);
        let mut health = lock(&self.health);
        if *health != Health::Reachable {
            tracing::info!(message = "etcd session established.", lease = format!("{lease:x}"));
        }
        *health = Health::Reachable;
    }

    /// Runs `attempt` with the request timeout, again while it fails
    /// before reaching etcd (see [`crate::retry`]); an error names `what`.
    pub async fn bounded<T, F, Fut>(&self, what: &str, attempt: F) -> Result<T, String>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        crate::retry::call(what, &self.settings.endpoints, self.settings.request_timeout, attempt).await
    }

    /// A bounded read of `key` (with `options`), sent again after any failure of the transport
    /// ([`crate::retry::read`]).
    pub async fn get(&self, what: &str, key: &str, options: Option<GetOptions>) -> Result<GetResponse, String> {
        let kv = self.client.kv_client();
        let settings = &self.settings;
        crate::retry::read(what, &settings.endpoints, settings.request_timeout, || {
            let (mut kv, options) = (kv.clone(), options.clone());
            async move { kv.get(key, options).await }
        })
        .await
    }

    /// A bounded transaction.
    pub async fn txn(&self, what: &str, txn: Txn) -> Result<TxnResponse, String> {
        let kv = self.client.kv_client();
        self.bounded(what, || {
            let (mut kv, txn) = (kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
    }
}

/// Keeps the session alive for as long as the task runs.
pub(crate) async fn run_session(shared: Arc<Shared>) {
    let mut delays = crate::retry::reconnect_delays();
    loop {
        let why = match open(&shared).await {
            Ok((lease, keeper, stream)) => {
                delays = crate::retry::reconnect_delays();
                shared.reachable(lease);
                keep(&shared, keeper, stream).await
            }
            Err(why) => why,
        };
        shared.unreachable(why);
        tokio::time::sleep(delays.next().unwrap_or(crate::retry::RECONNECT_MAX)).await;
    }
}

async fn open(shared: &Shared) -> Result<(i64, LeaseKeeper, LeaseKeepAliveStream), String> {
    let ttl = shared.settings.lease_ttl.as_secs() as i64;
    let leases = shared.client.lease_client();
    let lease = shared
        .bounded("granting a lease", || {
            let mut leases = leases.clone();
            async move { leases.grant(ttl, None).await }
        })
        .await?
        .id();
    let member =
        MemberValue { identity: shared.settings.identity.clone(), since_ms: now_ms(), pid: std::process::id() };
    let with_lease = || Some(PutOptions::new().with_lease(lease));
    let mut ops = vec![TxnOp::put(
        shared.keys.member(&shared.settings.identity),
        serde_json::to_string(&member).unwrap_or_default(),
        with_lease(),
    )];
    // Tokens still held (a lost session): back under the new lease, except
    // windowed ones whose window has ended.
    let now = now_ms();
    {
        let mut held = lock(&shared.held);
        held.retain(|_, v| serde_json::from_str::<TokenValue>(v).map(|t| t.live(now)).unwrap_or(true));
        for (k, v) in held.iter() {
            ops.push(TxnOp::put(k.clone(), v.clone(), with_lease()));
        }
    }
    shared.txn("registering the session", Txn::new().and_then(ops)).await?;
    let (keeper, stream) = shared
        .bounded("starting lease keep-alive", || {
            let mut leases = leases.clone();
            async move { leases.keep_alive(lease).await }
        })
        .await?;
    Ok((lease, keeper, stream))
}

/// Refreshes the lease every third of its TTL until that fails; returns why.
async fn keep(shared: &Shared, mut keeper: LeaseKeeper, mut stream: LeaseKeepAliveStream) -> String {
    let period = shared.settings.lease_ttl / 3;
    loop {
        tokio::time::sleep(period).await;
        if let Err(e) = keeper.keep_alive().await {
            return format!("lease keep-alive: {e}");
        }
        match tokio::time::timeout(shared.settings.request_timeout, stream.message()).await {
            Ok(Ok(Some(r))) if r.ttl() > 0 => {}
            Ok(Ok(Some(_))) => return "the session lease expired".into(),
            Ok(Ok(None)) => return "the lease keep-alive stream closed".into(),
            Ok(Err(e)) => return format!("lease keep-alive: {e}"),
            Err(_) => return format!("no lease keep-alive answer within {:?}", shared.settings.request_timeout),
        }
    }
}

/// Keeps the cached fleet breaker current: read it, then watch it.
pub(crate) async fn watch_breaker(shared: Arc<Shared>) {
    loop {
        if let Err(why) = watch_once(&shared).await {
            tracing::debug!(message = "Fleet breaker watch ended; starting again.", %why);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The breaker as its key's value says (`None`: not tripped).
pub(crate) fn breaker_of(value: Option<&[u8]>) -> FleetBreaker {
    match value {
        None => FleetBreaker::default(),
        Some(bytes) => match serde_json::from_slice::<BreakerValue>(bytes) {
            Ok(v) => FleetBreaker { tripped: true, by: v.by, reason: v.reason, at: Some(v.at_ms as i64 * 1_000_000) },
            // Unreadable, yet present: tripped, fail safe.
            Err(e) => FleetBreaker {
                tripped: true,
                by: "unknown".into(),
                reason: format!("unreadable breaker record: {e}"),
                at: None,
            },
        },
    }
}

async fn watch_once(shared: &Shared) -> Result<(), String> {
    let key = shared.keys.breaker();
    let got = shared.get("reading the fleet breaker", &key, None).await?;
    shared.set_breaker(breaker_of(got.kvs().first().map(|kv| kv.value())));
    let revision = got.header().map(|h| h.revision()).unwrap_or(0);
    let watch = shared.client.watch_client();
    let options = WatchOptions::new().with_start_revision(revision + 1);
    let mut stream = shared
        .bounded("watching the fleet breaker", || {
            let (mut watch, key, options) = (watch.clone(), key.clone(), options.clone());
            async move { watch.watch(key, Some(options)).await }
        })
        .await?;
    loop {
        let Some(response) = stream.message().await.map_err(|e| format!("breaker watch: {e}"))? else {
            return Err("breaker watch closed".into());
        };
        if response.canceled() {
            return Err(format!("breaker watch canceled: {}", response.cancel_reason()));
        }
        for event in response.events() {
            let state = match event.event_type() {
                EventType::Put => breaker_of(event.kv().map(|kv| kv.value())),
                EventType::Delete => FleetBreaker::default(),
            };
            if state.tripped {
                tracing::warn!(message = "Fleet breaker tripped.", by = %state.by, reason = %state.reason);
            } else {
                tracing::warn!(message = "Fleet breaker reset.");
            }
            shared.set_breaker(state);
        }
    }
}
