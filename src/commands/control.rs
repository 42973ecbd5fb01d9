//! The verbs that talk to a running daemon over its control API.

use anyhow::Context;
use engine::dispatch::Decision;
use engine::policy::{BreakerState, Effect};

use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::{rfc3339, short};
use crate::Outcome;

pub(super) fn decode<T: serde::de::DeserializeOwned>(text: &str) -> anyhow::Result<T> {
    serde_json::from_str(text).context("the daemon sent a record this version cannot read")
}

pub(super) fn status_error(e: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{}", e.message())
}

/// `rocemend status`.
pub fn status(target: &Target, json: bool) -> anyhow::Result<Outcome> {
    let reply = super::runtime()?
        .block_on(async { connect(target).await?.status(pb::StatusRequest {}).await.map_err(status_error) })?;
    let s = reply.into_inner();
    if json {
        println!(
            "{{\"mode\":{:?},\"breaker\":{},\"pending\":[{}],\"in_effect\":[{}],\"silences\":[{}],\"ledger_records\":{}}}",
            s.mode,
            s.breaker_json,
            s.pending_json.join(","),
            s.in_effect_json.join(","),
            s.silences_json.join(","),
            s.ledger_records
        );
        return Ok(Outcome::Ok);
    }
    let breaker: BreakerState = decode(&s.breaker_json)?;
    println!("mode      {}", s.mode);
    match breaker.tripped_at {
        Some(at) => println!("breaker   TRIPPED at {}: {}", rfc3339(at), breaker.reason),
        None => println!("breaker   closed"),
    }
    println!("ledger    {} records", s.ledger_records);
    println!("pending   {}", s.pending_json.len());
    for p in &s.pending_json {
        let d: Decision = decode(p)?;
        println!("  {}  {}  {}  ({})", d.id, d.proposal.rule, d.proposal.action, verdict_line(&d));
    }
    println!("in effect {}", s.in_effect_json.len());
    for e in &s.in_effect_json {
        let e: Effect = decode(e)?;
        println!("  {}  {}  {}  since {}", e.id, e.rule, e.action, rfc3339(e.since));
    }
    println!("silences  {}", s.silences_json.len());
    for text in &s.silences_json {
        let x: engine::dispatch::Silence = decode(text)?;
        println!(
            "  {}  rule {}  target {}  until {}  by {}  {}",
            x.id,
            x.rule.as_deref().unwrap_or("*"),
            x.target.as_deref().unwrap_or("*"),
            rfc3339(x.until),
            x.by,
            x.reason
        );
    }
    Ok(Outcome::Ok)
}

pub(super) fn verdict_line(d: &Decision) -> String {
    match d.verdict.reason() {
        Some(reason) => format!("{}: {reason}", d.verdict.name()),
        None => d.verdict.name().to_string(),
    }
}

/// `rocemend decisions`.
pub fn decisions(
    daemon: &Target,
    since: Option<i64>,
    rule: Option<String>,
    target: Option<String>,
    json: bool,
) -> anyhow::Result<Outcome> {
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
        return Ok(Outcome::Ok);
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
    Ok(Outcome::Ok)
}

/// `rocemend explain ID`.
pub fn explain(target: &Target, id: &str, json: bool) -> anyhow::Result<Outcome> {
    let reply = super::runtime()?.block_on(async {
        connect(target).await?.explain(pb::ExplainRequest { id: id.to_string() }).await.map_err(status_error)
    })?;
    let chain = reply.into_inner().decisions_json;
    if json {
        for line in &chain {
            println!("{line}");
        }
        return Ok(Outcome::Ok);
    }
    for (i, text) in chain.iter().enumerate() {
        let d: Decision = decode(text)?;
        if i > 0 {
            println!();
        }
        print_decision(&d);
    }
    Ok(Outcome::Ok)
}

fn print_decision(d: &Decision) {
    let p = &d.proposal;
    println!("decision  {}{}", d.id, d.undo_of.as_ref().map(|o| format!(" (undo of {o})")).unwrap_or_default());
    println!("rule      {} (sha256 {})", p.rule, p.rule_hash);
    println!("subject   {} {}", short(&p.subject), p.subject);
    println!("action    {}", p.action);
    let values: Vec<String> = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("evidence  {}", values.join("  "));
    println!(
        "times     fault seen {}  last sample {}  decided {}",
        rfc3339(p.active_at),
        rfc3339(p.sample_at),
        rfc3339(p.decided_at)
    );
    println!("          dispatched {}  finished {}", rfc3339(d.dispatched_at), rfc3339(d.finished_at));
    println!(
        "mode      {}   actuator {}   destructive {}",
        d.mode.as_str(),
        d.actuator.as_deref().unwrap_or("-"),
        d.destructive
    );
    println!("verdict   {}", verdict_line(d));
    if let Some(by) = &d.undone_by {
        println!("undone by {by}");
    }
    println!("history");
    for step in &d.steps {
        println!("  {}  {}", rfc3339(step.at), step.what);
    }
}

/// `rocemend approve ID` / `reject ID`.
pub fn approve(target: &Target, id: &str, by: &str, approve: bool) -> anyhow::Result<Outcome> {
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
    Ok(Outcome::Ok)
}

/// `rocemend breaker reset`.
pub fn breaker_reset(target: &Target, by: &str) -> anyhow::Result<Outcome> {
    let reply = super::runtime()?.block_on(async {
        connect(target).await?.reset_breaker(pb::ResetBreakerRequest { by: by.to_string() }).await.map_err(status_error)
    })?;
    let previous: BreakerState = decode(&reply.into_inner().previous_json)?;
    match previous.tripped_at {
        Some(at) => println!("breaker reset (it had tripped at {}: {})", rfc3339(at), previous.reason),
        None => println!("breaker reset (it was not tripped)"),
    }
    Ok(Outcome::Ok)
}

/// `rocemend mode MODE`.
pub fn set_mode(target: &Target, mode: &str) -> anyhow::Result<Outcome> {
    super::runtime()?.block_on(async {
        connect(target).await?.set_mode(pb::SetModeRequest { mode: mode.to_string() }).await.map_err(status_error)
    })?;
    println!("mode {mode}");
    Ok(Outcome::Ok)
}

/// `rocemend reload`.
pub fn reload(target: &Target) -> anyhow::Result<Outcome> {
    super::runtime()?
        .block_on(async { connect(target).await?.reload(pb::ReloadRequest {}).await.map_err(status_error) })?;
    println!("reload requested");
    Ok(Outcome::Ok)
}
