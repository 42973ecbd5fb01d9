//! The etcd v3 [`Coordinator`]: tokens from shared budgets in one
//! transaction each, under the daemon's lease; the fleet breaker.

use std::sync::Arc;
use std::time::Duration;

use engine::contracts::{
    Admission, Adopted, CoordinationError, Coordinator, FleetBreaker, Health, NotOwner, Release, Token, TokenRequest,
};
use engine::dispatch::Decision;
use etcd_client::{Client, Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use tokio::task::JoinHandle;

use crate::client::{connect_client, connect_election_client};
use crate::handover::Handover;
use crate::keys::{now_ms, BreakerValue, TokenValue};
use crate::session::{breaker_of, run_session, watch_breaker, Shared};
use crate::settings::{Budget, FleetSettings};
use crate::FleetError;

/// The etcd coordinator. Its background tasks (session, breaker watch) stop
/// when it is dropped.
pub struct EtcdCoordinator {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    /// Won aggregator leadership, when `aggregator` is configured.
    leadership: Arc<tokio::sync::Mutex<Option<crate::election::Leadership>>>,
    /// This aggregator's share of the switches, when `shard` is configured,
    /// and the records of what it left in effect on them.
    shard: Option<(Arc<crate::shard::Shard>, Arc<Handover>)>,
}

impl Drop for EtcdCoordinator {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl EtcdCoordinator {
    /// Starts the session and the breaker watch in the background.
    pub async fn start(settings: FleetSettings) -> Result<EtcdCoordinator, FleetError> {
        let client = connect_client(&settings).await?;
        let shared = Arc::new(Shared::new(client, settings));
        let mut tasks = vec![tokio::spawn(run_session(shared.clone())), tokio::spawn(watch_breaker(shared.clone()))];
        let leadership = Arc::new(tokio::sync::Mutex::new(None));
        if let Some(election) = shared.settings.aggregator.clone() {
            let client = connect_election_client(&shared.settings).await?;
            tasks.push(tokio::spawn(crate::election::keep_campaigning(
                client,
                shared.settings.clone(),
                election,
                leadership.clone(),
            )));
        }
        Ok(EtcdCoordinator { shared, tasks, leadership, shard: None })
    }

    /// Changes only the switches `shard` owns (`fleet.shard`): every switch
    /// action, local ones too, is held unless the claim is confirmed with
    /// etcd right before it. What it executes on a switch is recorded for
    /// the switch's next owner, and what the previous owners left on the
    /// switches it takes over is adopted ([`crate::handover`]); `node` is
    /// the `node` label of this daemon's switch series.
    pub fn with_shard(mut self, shard: Arc<crate::shard::Shard>, node: &str) -> EtcdCoordinator {
        let s = &self.shared.settings;
        let handover = Arc::new(Handover::new(self.shared.client.clone(), &s.prefix, &shard, node, s.request_timeout));
        self.tasks.push(tokio::spawn(handover.clone().follow(shard.clone())));
        self.shard = Some((shard, handover));
        self
    }

    /// The shard this aggregator shares its switches through, if any.
    pub fn shard(&self) -> Option<&Arc<crate::shard::Shard>> {
        self.shard.as_ref().map(|(shard, _)| shard)
    }

    /// Waits until the session is up, at most `timeout`.
    pub async fn ready(&self, timeout: Duration) -> Result<(), FleetError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.shared.health() {
                Health::Reachable => return Ok(()),
                Health::Unreachable(why) if tokio::time::Instant::now() >= deadline => {
                    return Err(FleetError::Etcd { endpoints: self.shared.settings.endpoints.join(","), error: why })
                }
                Health::Unreachable(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// The settings.
    pub fn settings(&self) -> &FleetSettings {
        &self.shared.settings
    }

    /// The client, for status and elections.
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// Keys of the tokens this daemon holds.
    pub fn held(&self) -> Vec<String> {
        self.shared.held_keys()
    }

    /// The session lease (for tests and status), if there is a session.
    pub fn lease(&self) -> Option<i64> {
        self.shared.lease()
    }

    /// On an aggregator, a switch change (a kind a `per = "switch"` budget
    /// counts) needs leadership, confirmed with etcd right before.
    async fn standby(&self, budgets: &[&Budget]) -> Option<Admission> {
        let election = self.shared.settings.aggregator.as_ref()?;
        if !budgets.iter().any(|b| b.per == crate::settings::Per::Switch) {
            return None;
        }
        let leads = match &*self.leadership.lock().await {
            Some(l) => l.confirm().await,
            None => false,
        };
        if leads {
            return None;
        }
        let leader = crate::election::leader(&self.shared.client, &self.shared.settings.prefix, election)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "nobody".into());
        Some(Admission::Refused(format!(
            "standby aggregator of {election}: {leader} leads, and only the leader changes switch configuration"
        )))
    }

    /// Whether this daemon leads its aggregator election (no network call).
    pub async fn leads(&self) -> bool {
        self.leadership.lock().await.as_ref().is_some_and(|l| l.is_leader())
    }

    fn refused_by_breaker(b: &FleetBreaker) -> Admission {
        Admission::Refused(format!("fleet circuit breaker tripped by {}: {}", b.by, b.reason))
    }

    /// What a budget's cell holds now: its guard's revision, the holders of
    /// its live tokens, and the deletes of its expired ones.
    async fn read_cell(&self, b: &Budget, cell: &str, guard: &str, now: u64) -> Result<Held, String> {
        let s = &self.shared;
        let read =
            s.get("reading a budget", &s.keys.cell(&b.name, cell), Some(GetOptions::new().with_prefix())).await?;
        let mut held = Held { guard_revision: 0, holders: Vec::new(), expired: Vec::new() };
        for item in read.kvs() {
            let key = String::from_utf8_lossy(item.key());
            if key == guard {
                held.guard_revision = item.mod_revision();
            } else if let Some((_, _, holder, _)) = s.keys.parse_token(&key) {
                match serde_json::from_slice::<TokenValue>(item.value()) {
                    Ok(t) if !t.live(now) => held.expired.push(TxnOp::delete(item.key().to_vec(), None)),
                    // Unreadable tokens count: fail safe.
                    _ => held.holders.push(holder.to_string()),
                }
            }
        }
        Ok(held)
    }

    /// One attempt after another until a transaction goes through or a
    /// budget is found full. Bounded by the caller's timeout.
    async fn take(&self, request: &TokenRequest, budgets: &[&Budget], lease: i64) -> Result<Admission, String> {
        let s = &self.shared;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let now = now_ms();
            let mut compares = vec![Compare::version(s.keys.breaker(), CompareOp::Equal, 0)];
            let mut ops = Vec::new();
            let mut taken = Vec::new();
            let mut names = Vec::new();
            for b in budgets {
                let cell = b.cell(&request.impact);
                let guard = s.keys.guard(&b.name, &cell);
                let Held { guard_revision, mut holders, expired } = self.read_cell(b, &cell, &guard, now).await?;
                ops.extend(expired);
                let in_use = holders.len();
                if in_use as u32 >= b.limit {
                    holders.sort();
                    holders.dedup();
                    return Ok(Admission::Refused(format!(
                        "fleet budget {} ({}) exhausted in {cell}: {} of {} in use, held by {}",
                        b.name,
                        b.describe(),
                        in_use,
                        b.limit,
                        if holders.is_empty() { "nobody".into() } else { holders.join(", ") }
                    )));
                }
                compares.push(Compare::mod_revision(guard.clone(), CompareOp::Equal, guard_revision));
                ops.push(TxnOp::put(guard, request.decision.clone(), None));
                let key = s.keys.token(&b.name, &cell, &s.settings.identity, &request.decision);
                let value = TokenValue {
                    holder: s.settings.identity.clone(),
                    decision: request.decision.clone(),
                    kind: request.kind.clone(),
                    taken_at_ms: now,
                    expires_at_ms: b.window.map(|w| now + w.as_millis() as u64),
                };
                let value = serde_json::to_string(&value).unwrap_or_default();
                ops.push(TxnOp::put(key.clone(), value.clone(), Some(PutOptions::new().with_lease(lease))));
                taken.push((key, value));
                names.push(format!("{} ({cell})", b.name));
            }
            let txn = Txn::new().when(compares).and_then(ops);
            let response = s.txn("taking a budget token", txn).await?;
            if response.succeeded() {
                for (k, v) in &taken {
                    s.hold(k.clone(), v.clone());
                }
                if attempt > 1 {
                    tracing::debug!(message = "Fleet token taken after contention.", attempt);
                }
                return Ok(Admission::Granted(Token {
                    decision: request.decision.clone(),
                    holder: s.settings.identity.clone(),
                    budgets: names,
                    keys: taken.into_iter().map(|(k, _)| k).collect(),
                }));
            }
            // Another daemon took a token between our read and our write, or
            // the breaker tripped: look again.
            let breaker = s.get("reading the fleet breaker", &s.keys.breaker(), None).await?;
            let state = breaker_of(breaker.kvs().first().map(|kv| kv.value()));
            if state.tripped {
                s.set_breaker(state.clone());
                return Ok(Self::refused_by_breaker(&state));
            }
            tokio::time::sleep(Duration::from_micros(200 * u64::from(attempt.min(10)))).await;
        }
    }
}

/// A budget cell as read: see `EtcdCoordinator::read_cell`.
struct Held {
    guard_revision: i64,
    holders: Vec<String>,
    expired: Vec<TxnOp>,
}

#[async_trait::async_trait]
impl Coordinator for EtcdCoordinator {
    fn name(&self) -> &str {
        "etcd"
    }

    fn identity(&self) -> &str {
        &self.shared.settings.identity
    }

    async fn acquire(&self, request: &TokenRequest) -> Admission {
        let s = &self.shared;
        let breaker = s.breaker();
        if breaker.tripped {
            return Self::refused_by_breaker(&breaker);
        }
        let budgets: Vec<&Budget> = s.settings.budgets_for(&request.kind).collect();
        if budgets.is_empty() {
            // Fleet-scoped, but no budget counts this kind.
            return Admission::Granted(Token {
                decision: request.decision.clone(),
                holder: s.settings.identity.clone(),
                budgets: vec![],
                keys: vec![],
            });
        }
        if let Health::Unreachable(why) = s.health() {
            return Admission::Unavailable(why);
        }
        if let Some(refused) = self.standby(&budgets).await {
            return refused;
        }
        let Some(lease) = s.lease() else {
            return Admission::Unavailable("no session with etcd".into());
        };
        // Contention retries included, the whole take is bounded.
        match tokio::time::timeout(s.settings.request_timeout * 2, self.take(request, &budgets, lease)).await {
            Ok(Ok(admission)) => admission,
            Ok(Err(why)) => Admission::Unavailable(why),
            Err(_) => Admission::Unavailable(format!(
                "taking a budget token at {}: no answer within {:?}",
                s.settings.endpoints.join(","),
                s.settings.request_timeout * 2
            )),
        }
    }

    async fn release(&self, token: &Token, why: Release) -> Result<(), CoordinationError> {
        let s = &self.shared;
        let keys: Vec<&String> = token
            .keys
            .iter()
            .filter(|k| match why {
                Release::NotDone => true,
                // Windowed tokens keep counting until their window ends.
                Release::Undone => s
                    .keys
                    .parse_token(k)
                    .and_then(|(budget, ..)| s.settings.budgets.iter().find(|b| b.name == budget))
                    .is_none_or(|b| b.window.is_none()),
            })
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        let ops: Vec<TxnOp> = keys.iter().map(|k| TxnOp::delete(k.as_str(), None)).collect();
        s.txn("giving a token back", Txn::new().and_then(ops)).await.map_err(CoordinationError::Unavailable)?;
        for k in keys {
            s.forget(k);
        }
        Ok(())
    }

    fn breaker(&self) -> FleetBreaker {
        self.shared.breaker()
    }

    async fn switch_changed(&self, decision: &Decision, switch: &str) {
        if let Some((_, handover)) = &self.shard {
            handover.record(decision, switch).await;
        }
    }

    async fn switch_restored(&self, action: &engine::Action, switch: &str) {
        if let Some((_, handover)) = &self.shard {
            handover.forget(action, switch).await;
        }
    }

    fn take_adopted(&self) -> Vec<Adopted> {
        self.shard.as_ref().map(|(_, handover)| handover.take()).unwrap_or_default()
    }

    async fn may_change_switch(&self, switch: &str) -> Result<(), NotOwner> {
        let Some((shard, _)) = &self.shard else { return Ok(()) };
        if shard.confirm(switch).await {
            return Ok(());
        }
        let owner = match shard.holder(switch).await {
            Some(holder) if holder == shard.identity() => {
                "this aggregator's claim, not confirmed under a live lease".to_string()
            }
            Some(holder) => holder,
            None => "nobody yet".to_string(),
        };
        Err(NotOwner { switch: switch.to_string(), group: shard.group().to_string(), owner })
    }

    async fn trip(&self, reason: &str) -> Result<(), CoordinationError> {
        let s = &self.shared;
        let value = BreakerValue { by: s.settings.identity.clone(), reason: reason.to_string(), at_ms: now_ms() };
        let json = serde_json::to_string(&value).unwrap_or_default();
        // The first trip stands: a second daemon tripping does not rewrite who and why.
        let txn = Txn::new()
            .when(vec![Compare::version(s.keys.breaker(), CompareOp::Equal, 0)])
            .and_then(vec![TxnOp::put(s.keys.breaker(), json.clone(), None)]);
        let r = s.txn("tripping the fleet breaker", txn).await.map_err(CoordinationError::Unavailable)?;
        if r.succeeded() {
            s.set_breaker(breaker_of(Some(json.as_bytes())));
            tracing::warn!(message = "Fleet breaker tripped by this daemon.", %reason);
        }
        Ok(())
    }

    async fn reset(&self, by: &str) -> Result<FleetBreaker, CoordinationError> {
        reset_breaker(&self.shared.client, &self.shared.keys, by, self.shared.settings.request_timeout)
            .await
            .map_err(|e| CoordinationError::Unavailable(e.to_string()))
    }

    fn health(&self) -> Health {
        self.shared.health()
    }
}

/// Resets the fleet breaker for every daemon, recording who did it; returns
/// the state it had. Used by `rocemend fleet reset-breaker`.
pub async fn reset_breaker(
    client: &Client,
    keys: &crate::keys::Keys,
    by: &str,
    timeout: Duration,
) -> Result<FleetBreaker, FleetError> {
    let mut kv = client.kv_client();
    let bounded = |e: String| FleetError::Etcd { endpoints: "etcd".into(), error: e };
    let got = tokio::time::timeout(timeout, kv.get(keys.breaker(), None))
        .await
        .map_err(|_| bounded(format!("reading the breaker: no answer within {timeout:?}")))?
        .map_err(|e| bounded(format!("reading the breaker: {e}")))?;
    let old = breaker_of(got.kvs().first().map(|kv| kv.value()));
    if !old.tripped {
        return Ok(old);
    }
    let record = BreakerValue {
        by: by.to_string(),
        reason: format!("reset; tripped by {}: {}", old.by, old.reason),
        at_ms: now_ms(),
    };
    let txn = Txn::new().and_then(vec![
        TxnOp::delete(keys.breaker(), None),
        TxnOp::put(keys.breaker_reset(), serde_json::to_string(&record).unwrap_or_default(), None),
    ]);
    tokio::time::timeout(timeout, kv.txn(txn))
        .await
        .map_err(|_| bounded(format!("resetting the breaker: no answer within {timeout:?}")))?
        .map_err(|e| bounded(format!("resetting the breaker: {e}")))?;
    tracing::warn!(message = "Fleet breaker reset.", %by, was_tripped_by = %old.by);
    Ok(old)
}
