//! `rocemend explain ID`: one decision with its evidence and every step.

use super::control::{decode, status_error, verdict_line};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::{rfc3339, short};
use crate::Exit;
use engine::dispatch::Decision;

/// `rocemend explain ID`.
pub fn explain(target: &Target, id: &str, json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        connect(target).await?.explain(pb::ExplainRequest { id: id.to_string() }).await.map_err(status_error)
    })?;
    let chain = reply.into_inner().decisions_json;
    if json {
        for line in &chain {
            println!("{line}");
        }
        return Ok(Exit::Ok);
    }
    for (i, text) in chain.iter().enumerate() {
        let d: Decision = decode(text)?;
        if i > 0 {
            println!();
        }
        print_decision(&d);
    }
    Ok(Exit::Ok)
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
