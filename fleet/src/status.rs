//! What `rocemend fleet status` shows, read straight from etcd: each
//! budget's use and who holds its tokens, the fleet breaker, the live
//! daemons and the aggregator leaders.

use std::fmt::Write as _;
use std::time::Duration;

use engine::contracts::FleetBreaker;
use etcd_client::{Client, GetOptions};
use serde::Serialize;

use crate::keys::{now_ms, BreakerValue, Keys, MemberValue, TokenValue};
use crate::session::breaker_of;
use crate::settings::FleetSettings;
use crate::FleetError;

/// One budget cell in use.
#[derive(Debug, Clone, Serialize)]
pub struct CellUse {
    /// `all`, `plane=2`, `switch=leaf-3`.
    pub cell: String,
    /// Its live tokens.
    pub tokens: Vec<TokenValue>,
}

/// One budget.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetUse {
    /// Name.
    pub name: String,
    /// The budget in words.
    pub budget: String,
    /// The limit per cell.
    pub limit: u32,
    /// Cells with live tokens.
    pub cells: Vec<CellUse>,
}

/// The fleet as etcd has it.
#[derive(Debug, Clone, Serialize)]
pub struct FleetStatus {
    /// The endpoints read.
    pub endpoints: Vec<String>,
    /// Budgets and their use.
    pub budgets: Vec<BudgetUse>,
    /// The fleet breaker.
    pub breaker: FleetBreaker,
    /// Its last reset.
    pub last_reset: Option<BreakerValue>,
    /// Live daemons.
    pub members: Vec<MemberValue>,
    /// Each election asked about, with its leader.
    pub leaders: Vec<(String, Option<String>)>,
}

fn err(settings: &FleetSettings, what: &str, e: impl std::fmt::Display) -> FleetError {
    FleetError::Etcd { endpoints: settings.endpoints.join(","), error: format!("{what}: {e}") }
}

async fn get(
    client: &Client,
    settings: &FleetSettings,
    key: String,
    prefix: bool,
) -> Result<Vec<(String, Vec<u8>)>, FleetError> {
    let mut kv = client.kv_client();
    let options = prefix.then(|| GetOptions::new().with_prefix());
    let read = tokio::time::timeout(settings.request_timeout, kv.get(key.clone(), options))
        .await
        .map_err(|_| {
            err(settings, &format!("reading {key}"), format!("no answer within {:?}", settings.request_timeout))
        })?
        .map_err(|e| err(settings, &format!("reading {key}"), e))?;
    Ok(read.kvs().iter().map(|kv| (String::from_utf8_lossy(kv.key()).into_owned(), kv.value().to_vec())).collect())
}

/// Reads the fleet's state; `elections` names the elections to report.
pub async fn read(client: &Client, settings: &FleetSettings, elections: &[String]) -> Result<FleetStatus, FleetError> {
    let keys = Keys::new(&settings.prefix);
    let now = now_ms();
    let mut budgets: Vec<BudgetUse> = settings
        .budgets
        .iter()
        .map(|b| BudgetUse { name: b.name.clone(), budget: b.describe(), limit: b.limit, cells: vec![] })
        .collect();
    for (key, value) in get(client, settings, keys.budgets(), true).await? {
        let Some((budget, cell, _, _)) = keys.parse_token(&key) else { continue };
        let Ok(token) = serde_json::from_slice::<TokenValue>(&value) else { continue };
        if !token.live(now) {
            continue;
        }
        let index = match budgets.iter().position(|b| b.name == budget) {
            Some(i) => i,
            None => {
                // Kept by a daemon configured with a budget this one lacks.
                budgets.push(BudgetUse {
                    name: budget.into(),
                    budget: "not in this config".into(),
                    limit: 0,
                    cells: vec![],
                });
                budgets.len() - 1
            }
        };
        let cells = &mut budgets[index].cells;
        match cells.iter_mut().find(|c| c.cell == cell) {
            Some(c) => c.tokens.push(token),
            None => cells.push(CellUse { cell: cell.into(), tokens: vec![token] }),
        }
    }
    let breaker_kv = get(client, settings, keys.breaker(), false).await?;
    let breaker = breaker_of(breaker_kv.first().map(|(_, v)| v.as_slice()));
    let last_reset = get(client, settings, keys.breaker_reset(), false)
        .await?
        .first()
        .and_then(|(_, v)| serde_json::from_slice(v).ok());
    let members = get(client, settings, keys.members(), true)
        .await?
        .iter()
        .filter_map(|(_, v)| serde_json::from_slice(v).ok())
        .collect();
    let mut leaders = Vec::new();
    for e in elections {
        let who = tokio::time::timeout(Duration::from_secs(2), crate::election::leader(client, &settings.prefix, e))
            .await
            .map_err(|_| err(settings, "reading a leader", "no answer"))??;
        leaders.push((e.clone(), who));
    }
    Ok(FleetStatus { endpoints: settings.endpoints.clone(), budgets, breaker, last_reset, members, leaders })
}

impl FleetStatus {
    /// As text for a terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "etcd: {}", self.endpoints.join(", "));
        let _ = writeln!(out, "daemons with a live session: {}", self.members.len());
        let _ = writeln!(out, "budgets:");
        for b in &self.budgets {
            let used: usize = b.cells.iter().map(|c| c.tokens.len()).sum();
            let _ = writeln!(out, "  {:<10} {} — {} token(s) in use", b.name, b.budget, used);
            for c in &b.cells {
                let holders: Vec<String> =
                    c.tokens.iter().map(|t| format!("{} ({} {})", t.holder, t.kind, t.decision)).collect();
                let _ = writeln!(out, "    {:<16} {}/{}: {}", c.cell, c.tokens.len(), b.limit, holders.join(", "));
            }
        }
        if self.breaker.tripped {
            let _ = writeln!(out, "fleet breaker: TRIPPED by {}: {}", self.breaker.by, self.breaker.reason);
            let _ = writeln!(out, "  reset for the whole fleet: rocemend fleet reset-breaker --by NAME");
        } else {
            let _ = writeln!(out, "fleet breaker: clear");
        }
        if let Some(r) = &self.last_reset {
            let _ = writeln!(out, "  last reset by {}: {}", r.by, r.reason);
        }
        for (e, who) in &self.leaders {
            let _ = writeln!(out, "aggregator leader of {e}: {}", who.as_deref().unwrap_or("none"));
        }
        out
    }
}
