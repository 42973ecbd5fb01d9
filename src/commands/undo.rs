//! `rocemend undo ID` and `rocemend resolve INCIDENT`: an operator's hand
//! on what the daemon did, through its dispatcher, over the control API.

use engine::dispatch::{Decision, Resolution};

use super::control::{decode, status_error};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::rfc3339;
use crate::report::verdict_line;
use crate::Exit;

/// `rocemend undo ID`: the undo's decision, what it found and did.
pub fn undo(target: &Target, id: &str, by: &str) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::DecisionRequest { id: id.to_string(), by: by.to_string() };
        connect(target).await?.undo(request).await.map_err(status_error)
    })?;
    let d: Decision = decode(&reply.into_inner().decision_json)?;
    println!("{}  undo of {id}  {}  {}  ({} mode)", d.id, d.proposal.action, verdict_line(&d), d.mode.as_str());
    for step in d.steps.iter().skip(1) {
        println!("  {}  {}", rfc3339(step.at), step.what);
    }
    // Only a restore that went through ends the action; say so when it did not.
    Ok(if matches!(d.verdict, engine::dispatch::Verdict::Failed { .. }) { Exit::Findings } else { Exit::Ok })
}

/// `rocemend resolve INCIDENT`: the resolution and the decisions it made.
pub fn resolve(target: &Target, id: &str, by: &str) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::ResolveIncidentRequest { id: id.to_string(), by: by.to_string() };
        connect(target).await?.resolve_incident(request).await.map_err(status_error)
    })?;
    let reply = reply.into_inner();
    let r: Resolution = decode(&reply.resolution_json)?;
    println!("{id}  {} on {}  resolved by {} at {}", r.rule, r.subject, r.by, rfc3339(r.at));
    if reply.decisions_json.is_empty() {
        println!("  nothing to undo or expire ([undo] on_resolve lists no kind it put in effect)");
    }
    for text in &reply.decisions_json {
        let d: Decision = decode(text)?;
        let what = match &d.undo_of {
            Some(of) => format!("undo of {of}"),
            None => "request".to_string(),
        };
        println!("  {}  {what}  {}  {}", d.id, d.proposal.action, verdict_line(&d));
    }
    println!("  the rule may fire again if its condition clears and returns (a new incident)");
    Ok(Exit::Ok)
}
