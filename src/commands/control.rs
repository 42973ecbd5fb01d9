//! The verbs that talk to a running daemon over its control API.

use anyhow::Context;
use engine::dispatch::Decision;
use engine::policy::BreakerState;

use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::{rfc3339, verdict_line};
use crate::Exit;

pub(super) fn decode<T: serde::de::DeserializeOwned>(text: &str) -> anyhow::Result<T> {
    serde_json::from_str(text).context("the daemon sent a record this version cannot read")
}

/// The daemon's refusal in its own words; INVALID_ARGUMENT (the request
/// names something the daemon does not have) as a usage error, exit 2.
pub(super) fn status_error(e: tonic::Status) -> anyhow::Error {
    match e.code() {
        tonic::Code::InvalidArgument => anyhow::Error::new(super::Refused(e.message().to_string())),
        _ => anyhow::anyhow!("{}", e.message()),
    }
}

/// `rocemend decisions`.
pub fn decisions(
    daemon: &Target,
    since: Option<i64>,
    rule: Option<String>,
    target: Option<String>,
    json: bool,
) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::ListDecisionsRequest {
            since_ns: since.unwrap_or(0),
            rule: rule.unwrap_or_default(),
            target: target.unwrap_or_default(),
        };
        connect(daemon).await?.list_decisions(request).await.map_err(status_error)
    })?;
    let list = reply.into_inner().decisions_json;
    if json {
        for line in &list {
            println!("{line}");
        }
        return Ok(Exit::Ok);
    }
    println!("{:<10}  {:<24}  {:<22}  {:<8}  {:<18}  action / reason", "ID", "DECIDED", "RULE", "MODE", "VERDICT");
    for text in &list {
        let d: Decision = decode(text)?;
        let what = match (&d.undo_of, d.verdict.reason()) {
            (Some(of), _) => format!("undo of {of}: {}", d.proposal.action),
            (None, Some(reason)) => format!("{}  — {reason}", d.proposal.action),
            (None, None) => d.proposal.action.to_string(),
        };
        println!(
            "{:<10}  {:<24}  {:<22}  {:<8}  {:<18}  {what}",
            d.id,
            rfc3339(d.proposal.decided_at),
            d.proposal.rule,
            d.mode.as_str(),
            d.verdict.name()
        );
    }
    println!("{} decisions", list.len());
    Ok(Exit::Ok)
}

/// `rocemend approve ID` / `reject ID`.
pub fn approve(target: &Target, id: &str, by: &str, approve: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let mut client = connect(target).await?;
        let request = pb::DecisionRequest { id: id.to_string(), by: by.to_string() };
        if approve {
            client.approve(request).await.map_err(status_error)
        } else {
            client.reject(request).await.map_err(status_error)
        }
    })?;
    let d: Decision = decode(&reply.into_inner().decision_json)?;
    println!("{}  {}  {}", d.id, d.proposal.action, verdict_line(&d));
    Ok(Exit::Ok)
}

/// `rocemend breaker reset`.
pub fn breaker_reset(target: &Target, by: &str) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        connect(target).await?.reset_breaker(pb::ResetBreakerRequest { by: by.to_string() }).await.map_err(status_error)
    })?;
    let previous: BreakerState = decode(&reply.into_inner().previous_json)?;
    match previous.tripped_at {
        Some(at) => println!("breaker reset (it had tripped at {}: {})", rfc3339(at), previous.reason),
        None => println!("breaker reset (it was not tripped)"),
    }
    Ok(Exit::Ok)
}

/// `rocemend mode MODE`.
pub fn set_mode(target: &Target, mode: engine::Mode, by: &str) -> anyhow::Result<Exit> {
    super::runtime()?.block_on(async {
        let request = pb::SetModeRequest { mode: mode.as_str().to_string(), by: by.to_string() };
        connect(target).await?.set_mode(request).await.map_err(status_error)
    })?;
    println!("mode {mode}");
    Ok(Exit::Ok)
}

/// `rocemend reload [--allow-shrink]`: exits non-zero with the daemon's
/// reasons when it refuses the new rules.
pub fn reload(target: &Target, allow_shrink: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        connect(target).await?.reload(pb::ReloadRequest { allow_shrink }).await.map_err(status_error)
    })?;
    let r = reply.into_inner();
    println!(
        "reloaded: {} unchanged, {} changed, {} added, {} removed",
        r.unchanged,
        r.changed.len(),
        r.added.len(),
        r.removed.len()
    );
    for (what, names) in [("changed", &r.changed), ("added", &r.added), ("removed", &r.removed)] {
        if !names.is_empty() {
            println!("  {what}: {}", names.join(", "));
        }
    }
    Ok(Exit::Ok)
}
