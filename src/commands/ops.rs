//! The operator verbs added to the control API's first set: `incidents`,
//! `rules`, `instances`, `silence`, `unsilence`, `watch`, `job push`.
//! Tables for people; `--json` prints one JSON document per line.

use std::collections::HashMap;

use serde_json::json;

use super::control::status_error;
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::rfc3339;
use crate::Exit;

/// Labels in a stable order: `{node=gpu-01 netdev=eth0}`.
fn subject(map: &HashMap<String, String>) -> String {
    let mut pairs: Vec<_> = map.iter().collect();
    pairs.sort();
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", parts.join(" "))
}

fn sorted(map: &HashMap<String, String>) -> std::collections::BTreeMap<&String, &String> {
    map.iter().collect()
}

/// `rocemend incidents`.
pub fn incidents(target: &Target, since: Option<i64>, as_json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::ListIncidentsRequest { since_ns: since.unwrap_or(0) };
        connect(target).await?.list_incidents(request).await.map_err(status_error)
    })?;
    let list = reply.into_inner().incidents;
    if as_json {
        for i in &list {
            let v = json!({"id": i.id, "rule": i.rule, "subject": sorted(&i.subject), "started": i.started_ns,
                           "state": i.state, "decisions": i.decision_ids, "last_verdict": i.last_verdict,
                           "actions": i.actions, "drift": i.drift,
                           "resolved_by": (!i.resolved_by.is_empty()).then_some(&i.resolved_by),
                           "resolved_at": (i.resolved_ns > 0).then_some(i.resolved_ns)});
            println!("{v}");
        }
        return Ok(Exit::Ok);
    }
    println!(
        "{:<16}  {:<24}  {:<20}  {:<9}  {:<18}  subject / decisions",
        "INCIDENT", "STARTED", "RULE", "STATE", "LAST VERDICT"
    );
    for i in &list {
        println!(
            "{:<16}  {:<24}  {:<20}  {:<9}  {:<18}  {}  {}",
            i.id,
            rfc3339(i.started_ns),
            i.rule,
            i.state,
            if i.last_verdict.is_empty() { "-" } else { &i.last_verdict },
            subject(&i.subject),
            i.decision_ids.join(",")
        );
        for drift in &i.drift {
            println!("{:<16}  drift: {drift}", "");
        }
        if !i.resolved_by.is_empty() {
            println!("{:<16}  resolved by {} at {}", "", i.resolved_by, rfc3339(i.resolved_ns));
        }
    }
    println!("{} incidents", list.len());
    Ok(Exit::Ok)
}

/// `rocemend rules`: MODE is the mode in effect (global, playbook and
/// rule file, the most conservative), the one decisions are made in.
pub fn rules(target: &Target, as_json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?
        .block_on(async { connect(target).await?.list_rules(pb::ListRulesRequest {}).await.map_err(status_error) })?;
    let list = reply.into_inner().rules;
    if as_json {
        for r in &list {
            let v = json!({"name": r.name, "description": r.description, "severity": r.severity, "mode": r.mode,
                           "declared_mode": r.declared_mode, "health": r.health, "last_error": r.last_error, "last_error_at": r.last_error_ns,
                           "firing": r.firing, "pending": r.pending});
            println!("{v}");
        }
        return Ok(Exit::Ok);
    }
    println!(
        "{:<24}  {:<8}  {:<8}  {:<11}  {:>6}  {:>7}  last error",
        "RULE", "SEVERITY", "MODE", "HEALTH", "FIRING", "PENDING"
    );
    for r in &list {
        let error = if r.last_error.is_empty() {
            "-".to_string()
        } else {
            format!("{} ({})", r.last_error, rfc3339(r.last_error_ns))
        };
        println!(
            "{:<24}  {:<8}  {:<8}  {:<11}  {:>6}  {:>7}  {error}",
            r.name, r.severity, r.mode, r.health, r.firing, r.pending
        );
    }
    let quarantined = list.iter().filter(|r| r.health != "ok").count();
    println!("{} rules, {quarantined} quarantined", list.len());
    Ok(Exit::Ok)
}

/// `rocemend instances`.
pub fn instances(target: &Target, rule: Option<String>, as_json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::ListInstancesRequest { rule: rule.unwrap_or_default() };
        connect(target).await?.list_instances(request).await.map_err(status_error)
    })?;
    let list = reply.into_inner().instances;
    if as_json {
        for i in &list {
            let v = json!({"rule": i.rule, "subject": sorted(&i.subject), "state": i.state, "since": i.since_ns,
                           "active_at": i.active_at_ns, "stale": i.stale});
            println!("{v}");
        }
        return Ok(Exit::Ok);
    }
    println!("{:<24}  {:<9}  {:<24}  {:<5}  subject", "RULE", "STATE", "SINCE", "STALE");
    for i in &list {
        println!(
            "{:<24}  {:<9}  {:<24}  {:<5}  {}",
            i.rule,
            i.state,
            rfc3339(i.since_ns),
            if i.stale { "yes" } else { "no" },
            subject(&i.subject)
        );
    }
    println!("{} instances", list.len());
    Ok(Exit::Ok)
}

/// `rocemend watch`: prints events until the daemon stops or Ctrl-C.
pub fn watch(target: &Target, kinds: Vec<String>, as_json: bool) -> anyhow::Result<Exit> {
    super::runtime()?.block_on(async {
        let mut stream =
            connect(target).await?.watch(pb::WatchRequest { kinds }).await.map_err(status_error)?.into_inner();
        loop {
            let next = tokio::select! {
                next = stream.message() => next.map_err(status_error)?,
                _ = tokio::signal::ctrl_c() => return Ok::<_, anyhow::Error>(()),
            };
            let Some(e) = next else {
                eprintln!("the daemon closed the stream (it is shutting down)");
                return Ok(());
            };
            if as_json {
                println!("{{\"at\":{},\"kind\":{:?},\"event\":{}}}", e.at_ns, e.kind, e.json);
            } else {
                println!("{}  {:<10}  {}", rfc3339(e.at_ns), e.kind, e.text);
            }
        }
    })?;
    Ok(Exit::Ok)
}
