//! `rocemend status`: the daemon's mode, breaker, rules, actions in effect
//! and requests waiting, over its control API.

use super::control::{decode, status_error};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::rfc3339;
use crate::report::verdict_line;
use crate::Exit;
use engine::dispatch::{Decision, Verdict};
use engine::policy::{BreakerState, Effect};

/// `rocemend status`.
pub fn status(target: &Target, json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?
        .block_on(async { connect(target).await?.status(pb::StatusRequest {}).await.map_err(status_error) })?;
    let s = reply.into_inner();
    if json {
        println!(
            "{{\"mode\":{:?},\"breaker\":{},\"breaker_trips\":{},\"pending\":[{}],\"pending_expiry\":{},\"in_effect\":[{}],\"drifted\":[{}],\"sensors\":[{}],\"silences\":[{}],\"ledger_records\":{}}}",
            s.mode,
            s.breaker_json,
            breaker_trips_json(&s)?,
            s.pending_json.join(","),
            pending_expiry_json(&s.pending_json)?,
            s.in_effect_json.join(","),
            s.drifted_json.join(","),
            s.sensors_json.join(","),
            s.silences_json.join(","),
            s.ledger_records
        );
        return Ok(Exit::Ok);
    }
    let breaker: BreakerState = decode(&s.breaker_json)?;
    println!("mode      {}", s.mode);
    match breaker.tripped_at {
        Some(at) => println!("breaker   TRIPPED at {}: {}", rfc3339(at), breaker.reason),
        None => println!("breaker   closed"),
    }
    let window = engine::time::Span(s.breaker_window_ns);
    println!("  trips   {} within the last {window} ({} kept)", s.breaker_trips_in_window, breaker.trips.len());
    for trip in breaker.trips.iter().rev().take(TRIPS_SHOWN) {
        println!("  {}  {}", rfc3339(trip.at), trip.reason);
    }
    println!("ledger    {} records", s.ledger_records);
    println!("sensors   {}", s.sensors_json.len());
    for text in &s.sensors_json {
        let h: engine::SensorHealth = decode(text)?;
        let state = serde_json::to_value(h.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let last = h.last_ok.map(|t| format!("last read {}", rfc3339(t))).unwrap_or_else(|| "never read".into());
        let error = h.last_error.as_deref().map(|e| format!("; last error: {e}")).unwrap_or_default();
        println!("  {:<16} {:<11} {} samples  {last}{error}", h.name, state, h.samples);
    }
    println!("pending   {}", s.pending_json.len());
    for p in &s.pending_json {
        let d: Decision = decode(p)?;
        let expires = expires_at(&d).map(|t| format!("expires {}", rfc3339(t))).unwrap_or_default();
        println!("  {}  {}  {}  {expires}  ({})", d.id, d.proposal.rule, d.proposal.action, verdict_line(&d));
    }
    println!("in effect {}", s.in_effect_json.len());
    for e in &s.in_effect_json {
        let e: Effect = decode(e)?;
        println!("  {}  {}  {}  since {}", e.id, e.rule, e.action, rfc3339(e.since));
    }
    println!("drifted   {}", s.drifted_json.len());
    for text in &s.drifted_json {
        let x: engine::dispatch::Drifted = decode(text)?;
        let then = match &x.reapplied_by {
            Some(id) => format!("re-applied as {id}"),
            None => "left alone".to_string(),
        };
        let (kind, found) = (x.drift.kind.name(), &x.drift.found);
        println!("  {}  {}  {kind} at {}: {found}; {then}", x.id, x.action, rfc3339(x.drift.at));
    }
    println!("silences  {} (kept across restarts)", s.silences_json.len());
    for text in &s.silences_json {
        let x: engine::dispatch::Silence = decode(text)?;
        println!("  {}  {}  by {}  {}", x.id, super::silence::scope(&x), x.by, x.reason);
    }
    Ok(Exit::Ok)
}

/// Trips listed in the table; `--json` has every one the daemon keeps.
const TRIPS_SHOWN: usize = 5;

/// When a request awaiting approval expires.
fn expires_at(d: &Decision) -> Option<engine::Nanos> {
    match d.verdict {
        Verdict::AwaitingApproval { expires_at } => Some(expires_at),
        _ => None,
    }
}

/// `{"window_ns": …, "in_window": n, "last": [{"at": RFC 3339, "at_ns", "reason"}]}`, newest last.
fn breaker_trips_json(s: &pb::StatusReply) -> anyhow::Result<serde_json::Value> {
    let breaker: BreakerState = decode(&s.breaker_json)?;
    let last: Vec<serde_json::Value> = breaker
        .trips
        .iter()
        .map(|t| serde_json::json!({"at": rfc3339(t.at), "at_ns": t.at, "reason": t.reason}))
        .collect();
    Ok(serde_json::json!({"window_ns": s.breaker_window_ns, "in_window": s.breaker_trips_in_window, "last": last}))
}

/// `[{"id", "expires_at": RFC 3339 UTC, "expires_at_ns"}]` for the requests awaiting approval.
fn pending_expiry_json(pending: &[String]) -> anyhow::Result<serde_json::Value> {
    let mut out = Vec::new();
    for text in pending {
        let d: Decision = decode(text)?;
        if let Some(t) = expires_at(&d) {
            out.push(serde_json::json!({"id": d.id, "expires_at": rfc3339(t), "expires_at_ns": t}));
        }
    }
    Ok(serde_json::Value::Array(out))
}
