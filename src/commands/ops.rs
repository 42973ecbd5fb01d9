//! The operator verbs added to the control API's first set: `incidents`,
//! `rules`, `instances`, `silence`, `unsilence`, `watch`, `job push`.
//! Tables for people; `--json` prints one JSON document per line.

use std::collections::HashMap;

use serde_json::json;

use super::control::{decode, status_error};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::rfc3339;
use crate::Outcome;

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
pub fn incidents(target: &Target, since: Option<i64>, as_json: bool) -> anyhow::Result<Outcome> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::ListIncidentsRequest { since_ns: since.unwrap_or(0) };
        connect(target).await?.list_incidents(request).await.map_err(status_error)
    })?;
    let list = reply.into_inner().incidents;
    if as_json {
        for i in &list {
            let v = json!({"id": i.id, "rule": i.rule, "subject": sorted(&i.subject), "started": i.started_ns,
                           "state": i.state, "decisions": i.decision_ids, "last_verdict": i.last_verdict,
                           "actions": i.actions});
            println!("{v}");
        }
        return Ok(Outcome::Ok);
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
    }
    println!("{} incidents", list.len());
    Ok(Outcome::Ok)
}

/// `rocemend rules`.
pub fn rules(target: &Target, as_json: bool) -> anyhow::Result<Outcome> {
    let reply = super::runtime()?
        .block_on(async { connect(target).await?.list_rules(pb::ListRulesRequest {}).await.map_err(status_error) })?;
    let list = reply.into_inner().rules;
    if as_json {
        for r in &list {
            let v = json!({"name": r.name, "description": r.description, "severity": r.severity, "mode": r.mode,
                           "health": r.health, "last_error": r.last_error, "last_error_at": r.last_error_ns,
                           "firing": r.firing, "pending": r.pending});
            println!("{v}");
        }
        return Ok(Outcome::Ok);
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
    Ok(Outcome::Ok)
}

/// `rocemend instances`.
pub fn instances(target: &Target, rule: Option<String>, as_json: bool) -> anyhow::Result<Outcome> {
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
        return Ok(Outcome::Ok);
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
    Ok(Outcome::Ok)
}

/// What `rocemend silence` asks for.
pub struct SilenceArgs {
    /// Only this rule.
    pub rule: Option<String>,
    /// Only targets containing this text.
    pub target: Option<String>,
    /// How long.
    pub duration: String,
    /// Why.
    pub reason: String,
    /// Who.
    pub by: String,
}

/// `rocemend silence`.
pub fn silence(target: &Target, args: SilenceArgs, as_json: bool) -> anyhow::Result<Outcome> {
    if args.rule.is_none() && args.target.is_none() {
        anyhow::bail!(
            "silence what? give --rule, --target or both (to silence everything, use `rocemend mode shadow`)"
        );
    }
    let reply = super::runtime()?.block_on(async {
        let request = pb::SilenceRequest {
            rule: args.rule.unwrap_or_default(),
            target: args.target.unwrap_or_default(),
            duration: args.duration,
            by: args.by,
            reason: args.reason,
        };
        connect(target).await?.silence(request).await.map_err(status_error)
    })?;
    let text = reply.into_inner().silence_json;
    if as_json {
        println!("{text}");
        return Ok(Outcome::Ok);
    }
    let s: engine::dispatch::Silence = decode(&text)?;
    println!(
        "{}  silenced rule {} target {} until {} (lift early: rocemend unsilence {})",
        s.id,
        s.rule.as_deref().unwrap_or("*"),
        s.target.as_deref().unwrap_or("*"),
        rfc3339(s.until),
        s.id
    );
    Ok(Outcome::Ok)
}

/// `rocemend unsilence ID`.
pub fn unsilence(target: &Target, id: &str) -> anyhow::Result<Outcome> {
    super::runtime()?.block_on(async {
        connect(target).await?.unsilence(pb::UnsilenceRequest { id: id.to_string() }).await.map_err(status_error)
    })?;
    println!("{id} lifted");
    Ok(Outcome::Ok)
}

/// `rocemend watch`: prints events until the daemon stops or Ctrl-C.
pub fn watch(target: &Target, kinds: Vec<String>, as_json: bool) -> anyhow::Result<Outcome> {
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
    Ok(Outcome::Ok)
}

/// What `rocemend job push` sends.
pub struct JobArgs {
    /// Job id.
    pub job: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Step time, seconds.
    pub step_time: Option<f64>,
    /// NCCL bus bandwidth, GB/s.
    pub busbw: Option<f64>,
    /// NCCL algorithm bandwidth, GB/s.
    pub algbw: Option<f64>,
}

/// `rocemend job push`.
pub fn job_push(target: &Target, args: JobArgs) -> anyhow::Result<Outcome> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::PushJobRequest {
            job: args.job,
            nodes: args.nodes,
            at_ns: 0,
            step_time_seconds: args.step_time,
            busbw_gbps: args.busbw,
            algbw_gbps: args.algbw,
        };
        connect(target).await?.push_job(request).await.map_err(status_error)
    })?;
    println!("{} samples", reply.into_inner().samples);
    Ok(Outcome::Ok)
}
