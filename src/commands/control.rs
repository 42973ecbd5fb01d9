//! The verbs that talk to a running daemon over its control API: each one
//! call, its reply printed as `ops::control::view` tells it (`--json`: the
//! daemon's own records, one per line).

use engine::Mode;
use ops::control::client::{Address, Blocking, WatchEnd};
use ops::control::{pb, view};

use super::Exit;

/// `rocemend status`.
pub fn status(address: &Address, json: bool) -> anyhow::Result<Exit> {
    let s = Blocking::connect(address)?.call(async |c| c.status(pb::StatusRequest {}).await)?;
    print!("{}", if json { view::status_json(&s)? } else { view::status(&s)? });
    Ok(Exit::Ok)
}

/// `rocemend decisions`.
pub fn decisions(
    address: &Address,
    since: Option<i64>,
    rule: Option<String>,
    target: Option<String>,
    json: bool,
) -> anyhow::Result<Exit> {
    let mut request = pb::ListDecisionsRequest {
        since_ns: since.unwrap_or(0),
        rule: rule.unwrap_or_default(),
        target: target.unwrap_or_default(),
        ..pb::ListDecisionsRequest::default()
    };
    // Page by page (a reply is bounded, the ledger is not): JSON lines are
    // printed as they come; the table needs every row for its widths.
    let mut daemon = Blocking::connect(address)?;
    let mut table = Vec::new();
    loop {
        let page = daemon.call(async |c| c.list_decisions(request.clone()).await)?;
        if json {
            print!("{}", view::lines(&page.decisions_json));
        } else {
            table.extend(page.decisions_json);
        }
        if page.next_after.is_empty() {
            break;
        }
        request.after = page.next_after;
    }
    if !json {
        print!("{}", view::decisions(&table)?);
    }
    Ok(Exit::Ok)
}

/// `rocemend explain ID`.
pub fn explain(address: &Address, id: &str, json: bool) -> anyhow::Result<Exit> {
    let request = pb::ExplainRequest { id: id.to_string() };
    let reply = Blocking::connect(address)?.call(async |c| c.explain(request).await)?;
    // `--json` stays the decisions, one a line, as before: a reader of
    // decisions is not handed another record's shape.
    let text = if json {
        view::lines(&reply.decisions_json)
    } else {
        view::explain(&reply.decisions_json, &reply.offender_json)?
    };
    print!("{text}");
    Ok(Exit::Ok)
}

/// `rocemend approve ID` / `reject ID`.
pub fn approve(address: &Address, id: &str, by: &str, approve: bool) -> anyhow::Result<Exit> {
    let request = pb::DecisionRequest { id: id.to_string(), by: by.to_string() };
    let mut daemon = Blocking::connect(address)?;
    let reply = if approve {
        daemon.call(async |c| c.approve(request).await)?
    } else {
        daemon.call(async |c| c.reject(request).await)?
    };
    print!("{}", view::decided(&reply.decision_json)?);
    Ok(Exit::Ok)
}

/// `rocemend undo ID`: exit 1 when the restore failed (the action is
/// still in effect).
pub fn undo(address: &Address, id: &str, by: &str) -> anyhow::Result<Exit> {
    let request = pb::DecisionRequest { id: id.to_string(), by: by.to_string() };
    let reply = Blocking::connect(address)?.call(async |c| c.undo(request).await)?;
    let (text, failed) = view::undone(id, &reply.decision_json)?;
    print!("{text}");
    Ok(if failed { Exit::Findings } else { Exit::Ok })
}

/// `rocemend resolve INCIDENT`.
pub fn resolve(address: &Address, id: &str, by: &str) -> anyhow::Result<Exit> {
    let request = pb::ResolveIncidentRequest { id: id.to_string(), by: by.to_string() };
    let reply = Blocking::connect(address)?.call(async |c| c.resolve_incident(request).await)?;
    print!("{}", view::resolved(id, &reply)?);
    Ok(Exit::Ok)
}

/// `rocemend breaker reset`.
pub fn breaker_reset(address: &Address, by: &str) -> anyhow::Result<Exit> {
    let request = pb::ResetBreakerRequest { by: by.to_string() };
    let reply = Blocking::connect(address)?.call(async |c| c.reset_breaker(request).await)?;
    print!("{}", view::breaker_reset(&reply.previous_json)?);
    Ok(Exit::Ok)
}

/// `rocemend mode MODE`.
pub fn set_mode(address: &Address, mode: Mode, by: &str) -> anyhow::Result<Exit> {
    let request = pb::SetModeRequest { mode: mode.as_str().to_string(), by: by.to_string() };
    Blocking::connect(address)?.call(async |c| c.set_mode(request).await)?;
    println!("mode {mode}");
    Ok(Exit::Ok)
}

/// `rocemend reload [--allow-shrink]`: exits non-zero with the daemon's
/// reasons when it refuses the new rules.
pub fn reload(address: &Address, allow_shrink: bool) -> anyhow::Result<Exit> {
    let reply = Blocking::connect(address)?.call(async |c| c.reload(pb::ReloadRequest { allow_shrink }).await)?;
    print!("{}", view::reloaded(&reply));
    Ok(Exit::Ok)
}

/// `rocemend incidents`.
pub fn incidents(address: &Address, since: Option<i64>, json: bool) -> anyhow::Result<Exit> {
    let request = pb::ListIncidentsRequest { since_ns: since.unwrap_or(0) };
    let list = Blocking::connect(address)?.call(async |c| c.list_incidents(request).await)?.incidents;
    print!("{}", if json { view::incidents_json(&list) } else { view::incidents(&list) });
    Ok(Exit::Ok)
}

/// `rocemend rules`.
pub fn rules(address: &Address, json: bool) -> anyhow::Result<Exit> {
    let list = Blocking::connect(address)?.call(async |c| c.list_rules(pb::ListRulesRequest {}).await)?.rules;
    print!("{}", if json { view::rules_json(&list) } else { view::rules(&list) });
    Ok(Exit::Ok)
}

/// `rocemend instances`.
pub fn instances(address: &Address, rule: Option<String>, json: bool) -> anyhow::Result<Exit> {
    let request = pb::ListInstancesRequest { rule: rule.unwrap_or_default() };
    let list = Blocking::connect(address)?.call(async |c| c.list_instances(request).await)?.instances;
    print!("{}", if json { view::instances_json(&list) } else { view::instances(&list) });
    Ok(Exit::Ok)
}

/// `rocemend silence`.
pub fn silence(address: &Address, request: pb::SilenceRequest, json: bool) -> anyhow::Result<Exit> {
    let record = Blocking::connect(address)?.call(async |c| c.silence(request).await)?.silence_json;
    if json {
        println!("{record}");
    } else {
        print!("{}", view::silenced(&record)?);
    }
    Ok(Exit::Ok)
}

/// `rocemend unsilence ID`.
pub fn unsilence(address: &Address, id: &str) -> anyhow::Result<Exit> {
    let request = pb::UnsilenceRequest { id: id.to_string() };
    Blocking::connect(address)?.call(async |c| c.unsilence(request).await)?;
    println!("{id} lifted");
    Ok(Exit::Ok)
}

/// `rocemend watch`: prints events until the daemon stops or Ctrl-C.
pub fn watch(address: &Address, kinds: Vec<String>, json: bool) -> anyhow::Result<Exit> {
    let end = Blocking::connect(address)?.watch(kinds, |e| print!("{}", view::event(&e, json)))?;
    if end == WatchEnd::Closed {
        eprintln!("the daemon closed the stream (it is shutting down)");
    }
    Ok(Exit::Ok)
}

/// `rocemend job push`.
pub fn job_push(address: &Address, request: pb::PushJobRequest) -> anyhow::Result<Exit> {
    let reply = Blocking::connect(address)?.call(async |c| c.push_job(request).await)?;
    println!("{} samples", reply.samples);
    Ok(Exit::Ok)
}
