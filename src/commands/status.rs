//! `rocemend status`: the daemon's mode, breaker, rules, actions in effect
//! and requests waiting, over its control API.

use super::control::{decode, status_error, verdict_line};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::rfc3339;
use crate::Exit;
use engine::dispatch::Decision;
use engine::policy::{BreakerState, Effect};

/// `rocemend status`.
pub fn status(target: &Target, json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?
        .block_on(async { connect(target).await?.status(pb::StatusRequest {}).await.map_err(status_error) })?;
    let s = reply.into_inner();
    if json {
        println!(
            "{{\"mode\":{:?},\"breaker\":{},\"pending\":[{}],\"in_effect\":[{}],\"drifted\":[{}],\"sensors\":[{}],\"silences\":[{}],\"ledger_records\":{}}}",
            s.mode,
            s.breaker_json,
            s.pending_json.join(","),
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
        println!("  {}  {}  {}  ({})", d.id, d.proposal.rule, d.proposal.action, verdict_line(&d));
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
    println!("silences  {}", s.silences_json.len());
    for text in &s.silences_json {
        let x: engine::dispatch::Silence = decode(text)?;
        println!("  {}  {}  by {}  {}", x.id, super::silence::scope(&x), x.by, x.reason);
    }
    Ok(Exit::Ok)
}
