//! The control API's replies as the verbs print them: tables and lines for
//! people, and with `--json` one JSON document per line. Each function
//! returns the whole text; the verb prints it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use engine::dispatch::{Decision, Drifted, Resolution, Silence, Verdict};
use engine::ledger::{Offender, Standing};
use engine::policy::{BreakerState, Effect};
use engine::{Nanos, SensorHealth};
use serde_json::json;

use super::{decode, pb, DecodeError};
use crate::report::table::Table;
use crate::report::{explain_text, offenders, rfc3339, verdict_line};

/// Lines as the daemon sent them (`--json`: its own records).
pub fn lines(records: &[String]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// Labels in a stable order: `{node=gpu-01 netdev=eth0}`.
fn subject(map: &HashMap<String, String>) -> String {
    let parts: Vec<String> = sorted(map).iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", parts.join(" "))
}

fn sorted(map: &HashMap<String, String>) -> BTreeMap<&String, &String> {
    map.iter().collect()
}

/// Jobs a row of `decisions` names under it; `explain` names them all.
const JOBS_IN_A_ROW: usize = 8;

/// `rocemend decisions`: one row per decision (the running jobs its action
/// touches on a line under it), then how many.
pub fn decisions(records: &[String]) -> Result<String, DecodeError> {
    let mut t = Table::new(["ID", "DECIDED", "RULE", "MODE", "VERDICT", "action / reason"]);
    for text in records {
        let d: Decision = decode(text)?;
        let what = match (&d.undo_of, d.verdict.reason()) {
            (Some(of), _) => format!("undo of {of}: {}", d.proposal.action),
            (None, Some(reason)) => format!("{}  — {reason}", d.proposal.action),
            (None, None) => d.proposal.action.to_string(),
        };
        let decided = rfc3339(d.proposal.decided_at);
        let notes = match d.proposal.jobs.len() {
            0 => vec![],
            n => vec![format!("touches {n} running jobs: {}", d.proposal.job_list(JOBS_IN_A_ROW))],
        };
        let row = [
            d.id.clone(),
            decided,
            d.proposal.rule.clone(),
            d.mode.as_str().to_string(),
            d.verdict.name().into(),
            what,
        ];
        t.row_with_notes(row, notes);
    }
    Ok(format!("{}{} decisions\n", t.render(), records.len()))
}

/// `rocemend explain ID`: the decision and those linked to it, a blank line
/// apart; then, for a rule on an escalation ladder, what the ledger
/// remembers of the subject (`offender_json`, empty otherwise).
pub fn explain(chain: &[String], offender_json: &str) -> Result<String, DecodeError> {
    let texts: Vec<String> =
        chain.iter().map(|text| decode(text).map(|d: Decision| explain_text(&d))).collect::<Result<_, _>>()?;
    let mut out = texts.join("\n");
    if !offender_json.is_empty() {
        let o: Offender = decode(offender_json)?;
        let _ = writeln!(out, "\nrepeats   {} on this subject: {}", o.rule, offenders::remembered(&o));
    }
    Ok(out)
}

/// `rocemend approve` / `reject`: the decision as it now stands.
pub fn decided(record: &str) -> Result<String, DecodeError> {
    let d: Decision = decode(record)?;
    Ok(format!("{}  {}  {}\n", d.id, d.proposal.action, verdict_line(&d)))
}

/// `rocemend breaker reset`: what the breaker was.
pub fn breaker_reset(previous: &str) -> Result<String, DecodeError> {
    let previous: BreakerState = decode(previous)?;
    Ok(match previous.tripped_at {
        Some(at) => format!("breaker reset (it had tripped at {}: {})\n", rfc3339(at), previous.reason),
        None => "breaker reset (it was not tripped)\n".to_string(),
    })
}

/// `rocemend reload`: what changed.
pub fn reloaded(r: &pb::ReloadReply) -> String {
    let mut out = format!(
        "reloaded: {} unchanged, {} changed, {} added, {} removed\n",
        r.unchanged,
        r.changed.len(),
        r.added.len(),
        r.removed.len()
    );
    for (what, names) in [("changed", &r.changed), ("added", &r.added), ("removed", &r.removed)] {
        if !names.is_empty() {
            let _ = writeln!(out, "  {what}: {}", names.join(", "));
        }
    }
    out
}

/// `rocemend incidents`: one row per incident, its drifts and who resolved
/// it under it, then how many.
pub fn incidents(list: &[pb::Incident]) -> String {
    let mut t = Table::new(["INCIDENT", "STARTED", "RULE", "STATE", "LAST VERDICT", "subject / decisions"]);
    for i in list {
        let mut notes: Vec<String> = i.drift.iter().map(|drift| format!("drift: {drift}")).collect();
        if !i.resolved_by.is_empty() {
            notes.push(format!("resolved by {} at {}", i.resolved_by, rfc3339(i.resolved_ns)));
        }
        let verdict = if i.last_verdict.is_empty() { "-" } else { &i.last_verdict };
        let what = format!("{}  {}", subject(&i.subject), i.decision_ids.join(","));
        let row = [i.id.clone(), rfc3339(i.started_ns), i.rule.clone(), i.state.clone(), verdict.to_string(), what];
        t.row_with_notes(row, notes);
    }
    format!("{}{} incidents\n", t.render(), list.len())
}

/// `rocemend incidents --json`.
pub fn incidents_json(list: &[pb::Incident]) -> String {
    let one = |i: &pb::Incident| {
        json!({"id": i.id, "rule": i.rule, "subject": sorted(&i.subject), "started": i.started_ns,
               "state": i.state, "decisions": i.decision_ids, "last_verdict": i.last_verdict,
               "actions": i.actions, "drift": i.drift,
               "resolved_by": (!i.resolved_by.is_empty()).then_some(&i.resolved_by),
               "resolved_at": (i.resolved_ns > 0).then_some(i.resolved_ns)})
    };
    list.iter().map(|i| format!("{}\n", one(i))).collect()
}

/// `rocemend rules`: MODE is the mode in effect (global, playbook and rule
/// file, the most conservative), the one decisions are made in. Then each
/// rule's record over the ledger's decisions: PROPOSED and EXECUTED,
/// EFFECTIVE of the outcome checks judged (`3/4 75%`), HARMFUL, and TO
/// EFFECT, the median time to effect of the effective ones.
pub fn rules(list: &[pb::Rule]) -> String {
    let header = [
        "RULE",
        "SEVERITY",
        "MODE",
        "HEALTH",
        "FIRING",
        "PENDING",
        "PROPOSED",
        "EXECUTED",
        "EFFECTIVE",
        "HARMFUL",
        "TO EFFECT",
        "last error",
    ];
    let mut t = Table::new(header).right(&[4, 5, 6, 7, 8, 9, 10]);
    for r in list {
        let error = if r.last_error.is_empty() {
            "-".to_string()
        } else {
            format!("{} ({})", r.last_error, rfc3339(r.last_error_ns))
        };
        t.row([
            r.name.clone(),
            r.severity.clone(),
            r.mode.clone(),
            r.health.clone(),
            r.firing.to_string(),
            r.pending.to_string(),
            r.proposals.to_string(),
            r.executed.to_string(),
            effective_cell(r),
            r.harmful.to_string(),
            to_effect_cell(r),
            error,
        ]);
    }
    let quarantined = list.iter().filter(|r| r.health != "ok").count();
    format!("{}{} rules, {quarantined} quarantined\n", t.render(), list.len())
}

/// Effective of the outcome checks judged, and the share: `3/4 75%`; `-`
/// when none was judged.
fn effective_cell(r: &pb::Rule) -> String {
    let judged = r.effective + r.ineffective + r.harmful + r.unread;
    match r.effective_percent {
        Some(percent) if judged > 0 => format!("{}/{judged} {percent:.0}%", r.effective),
        _ => "-".to_string(),
    }
}

/// The median time to effect, `4.2 s` as `explain` writes a time to effect;
/// `-` when no action of the rule was effective.
fn to_effect_cell(r: &pb::Rule) -> String {
    if r.effective == 0 {
        return "-".to_string();
    }
    format!("{:.1} s", r.median_time_to_effect_ns as f64 / 1e9)
}

/// `rocemend rules --json`: every field of the reply; `effective_percent`
/// and `median_time_to_effect_ns` are null when there is no measure.
pub fn rules_json(list: &[pb::Rule]) -> String {
    let one = |r: &pb::Rule| {
        json!({"name": r.name, "description": r.description, "severity": r.severity, "mode": r.mode,
               "declared_mode": r.declared_mode, "health": r.health, "last_error": r.last_error, "last_error_at": r.last_error_ns,
               "firing": r.firing, "pending": r.pending,
               "proposals": r.proposals, "executed": r.executed, "effective": r.effective,
               "ineffective": r.ineffective, "harmful": r.harmful, "unread": r.unread,
               "effective_percent": r.effective_percent,
               "median_time_to_effect_ns": (r.effective > 0).then_some(r.median_time_to_effect_ns)})
    };
    list.iter().map(|r| format!("{}\n", one(r))).collect()
}

/// `rocemend instances`.
pub fn instances(list: &[pb::Instance]) -> String {
    let mut t = Table::new(["RULE", "STATE", "SINCE", "STALE", "subject"]);
    for i in list {
        let stale = if i.stale { "yes" } else { "no" };
        t.row([i.rule.clone(), i.state.clone(), rfc3339(i.since_ns), stale.to_string(), subject(&i.subject)]);
    }
    format!("{}{} instances\n", t.render(), list.len())
}

/// `rocemend instances --json`.
pub fn instances_json(list: &[pb::Instance]) -> String {
    let one = |i: &pb::Instance| {
        json!({"rule": i.rule, "subject": sorted(&i.subject), "state": i.state, "since": i.since_ns,
               "active_at": i.active_at_ns, "stale": i.stale})
    };
    list.iter().map(|i| format!("{}\n", one(i))).collect()
}

/// One event of `rocemend watch`, a line.
pub fn event(e: &pb::Event, as_json: bool) -> String {
    if as_json {
        format!("{{\"at\":{},\"kind\":{:?},\"event\":{}}}\n", e.at_ns, e.kind, e.json)
    } else {
        format!("{}  {:<10}  {}\n", rfc3339(e.at_ns), e.kind, e.text)
    }
}

/// What a silence holds and for how long: `rule R  target T  until U`.
pub fn silence_scope(s: &Silence) -> String {
    let (rule, target) = (s.rule.as_deref().unwrap_or("*"), s.target.as_deref().unwrap_or("*"));
    format!("rule {rule}  target {target}  until {}", rfc3339(s.until))
}

/// `rocemend silence`: the silence as set.
pub fn silenced(record: &str) -> Result<String, DecodeError> {
    let s: Silence = decode(record)?;
    Ok(format!("{}  silenced {} (lift early: rocemend unsilence {})\n", s.id, silence_scope(&s), s.id))
}

/// `rocemend undo ID`: the undo's decision and what it found and did; and
/// whether the restore failed (the action is still in effect).
pub fn undone(id: &str, record: &str) -> Result<(String, bool), DecodeError> {
    let d: Decision = decode(record)?;
    let mut out =
        format!("{}  undo of {id}  {}  {}  ({} mode)\n", d.id, d.proposal.action, verdict_line(&d), d.mode.as_str());
    for step in d.steps.iter().skip(1) {
        let _ = writeln!(out, "  {}  {}", rfc3339(step.at), step.what);
    }
    Ok((out, matches!(d.verdict, Verdict::Failed { .. })))
}

/// `rocemend resolve INCIDENT`: the resolution and the decisions it made.
pub fn resolved(id: &str, reply: &pb::ResolveIncidentReply) -> Result<String, DecodeError> {
    let r: Resolution = decode(&reply.resolution_json)?;
    let mut out = format!("{id}  {} on {}  resolved by {} at {}\n", r.rule, r.subject, r.by, rfc3339(r.at));
    if reply.decisions_json.is_empty() {
        out.push_str("  nothing to undo or expire ([undo] on_resolve lists no kind it put in effect)\n");
    }
    for text in &reply.decisions_json {
        let d: Decision = decode(text)?;
        let what = match &d.undo_of {
            Some(of) => format!("undo of {of}"),
            None => "request".to_string(),
        };
        let _ = writeln!(out, "  {}  {what}  {}  {}", d.id, d.proposal.action, verdict_line(&d));
    }
    out.push_str("  the rule may fire again if its condition clears and returns (a new incident)\n");
    Ok(out)
}

/// Trips listed by `rocemend status`; `--json` has every one the daemon keeps.
const TRIPS_SHOWN: usize = 5;

/// When a request awaiting approval expires.
fn expires_at(d: &Decision) -> Option<Nanos> {
    match d.verdict {
        Verdict::AwaitingApproval { expires_at } => Some(expires_at),
        _ => None,
    }
}

/// `rocemend status`: mode, breaker, ledger, sensors, requests waiting,
/// actions in effect and drifted, silences, repeat offenders.
pub fn status(s: &pb::StatusReply) -> Result<String, DecodeError> {
    let mut out = String::new();
    let breaker: BreakerState = decode(&s.breaker_json)?;
    let _ = writeln!(out, "mode      {}", s.mode);
    match breaker.tripped_at {
        Some(at) => out.push_str(&format!("breaker   TRIPPED at {}: {}\n", rfc3339(at), breaker.reason)),
        None => out.push_str("breaker   closed\n"),
    }
    let window = engine::time::Span(s.breaker_window_ns);
    let _ = writeln!(
        out,
        "  trips   {} within the last {window} ({} kept)",
        s.breaker_trips_in_window,
        breaker.trips.len()
    );
    for trip in breaker.trips.iter().rev().take(TRIPS_SHOWN) {
        let _ = writeln!(out, "  {}  {}", rfc3339(trip.at), trip.reason);
    }
    let _ = writeln!(out, "ledger    {} records{}", s.ledger_records, ledger_health_line(&s.ledger_json));
    let _ = writeln!(out, "sensors   {}", s.sensors_json.len());
    for text in &s.sensors_json {
        let h: SensorHealth = decode(text)?;
        let state = serde_json::to_value(h.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let last = h.last_ok.map(|t| format!("last read {}", rfc3339(t))).unwrap_or_else(|| "never read".into());
        let error = h.last_error.as_deref().map(|e| format!("; last error: {e}")).unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {:<11} {} samples  {last}{error}", h.name, state, h.samples);
    }
    let _ = writeln!(out, "pending   {}", s.pending_json.len());
    for p in &s.pending_json {
        let d: Decision = decode(p)?;
        let expires = expires_at(&d).map(|t| format!("expires {}", rfc3339(t))).unwrap_or_default();
        let _ =
            writeln!(out, "  {}  {}  {}  {expires}  ({})", d.id, d.proposal.rule, d.proposal.action, verdict_line(&d));
    }
    let _ = writeln!(out, "in effect {}", s.in_effect_json.len());
    for e in &s.in_effect_json {
        let e: Effect = decode(e)?;
        let _ = writeln!(out, "  {}  {}  {}  since {}", e.id, e.rule, e.action, rfc3339(e.since));
    }
    let _ = writeln!(out, "drifted   {}", s.drifted_json.len());
    for text in &s.drifted_json {
        let x: Drifted = decode(text)?;
        let then = match &x.reapplied_by {
            Some(id) => format!("re-applied as {id}"),
            None => "left alone".to_string(),
        };
        let (kind, found) = (x.drift.kind.name(), &x.drift.found);
        let _ = writeln!(out, "  {}  {}  {kind} at {}: {found}; {then}", x.id, x.action, rfc3339(x.drift.at));
    }
    let _ = writeln!(out, "silences  {} (kept across restarts)", s.silences_json.len());
    for text in &s.silences_json {
        let x: Silence = decode(text)?;
        let _ = writeln!(out, "  {}  {}  by {}  {}", x.id, silence_scope(&x), x.by, x.reason);
    }
    let _ = writeln!(
        out,
        "offenders {} (repeat incidents on a ladder, or a rung that worked, within its window)",
        s.offenders_json.len()
    );
    for text in &s.offenders_json {
        let x: Standing = decode(text)?;
        let _ = writeln!(out, "  {}", offenders::standing(&x));
    }
    Ok(out)
}

/// `; UNWRITABLE since …` when the ledger cannot be written, else nothing.
fn ledger_health_line(ledger_json: &str) -> String {
    let Ok(h) = serde_json::from_str::<engine::store::WriteHealth>(ledger_json) else { return String::new() };
    if h.writable {
        return String::new();
    }
    let since = h.since.map(rfc3339).unwrap_or_default();
    let cause = h.cause.unwrap_or_default();
    format!("; UNWRITABLE since {since} ({cause}): no action or undo is sent until it can be written")
}

/// `rocemend status --json`: one document.
pub fn status_json(s: &pb::StatusReply) -> Result<String, DecodeError> {
    Ok(format!(
        "{{\"mode\":{:?},\"breaker\":{},\"breaker_trips\":{},\"pending\":[{}],\"pending_expiry\":{},\"in_effect\":[{}],\"drifted\":[{}],\"sensors\":[{}],\"silences\":[{}],\"offenders\":[{}],\"ledger_records\":{},\"ledger\":{}}}\n",
        s.mode,
        s.breaker_json,
        breaker_trips_json(s)?,
        s.pending_json.join(","),
        pending_expiry_json(&s.pending_json)?,
        s.in_effect_json.join(","),
        s.drifted_json.join(","),
        s.sensors_json.join(","),
        s.silences_json.join(","),
        s.offenders_json.join(","),
        s.ledger_records,
        if s.ledger_json.is_empty() { "null" } else { &s.ledger_json }
    ))
}

/// `{"window_ns": …, "in_window": n, "last": [{"at": RFC 3339, "at_ns", "reason"}]}`, newest last.
fn breaker_trips_json(s: &pb::StatusReply) -> Result<serde_json::Value, DecodeError> {
    let breaker: BreakerState = decode(&s.breaker_json)?;
    let last: Vec<serde_json::Value> =
        breaker.trips.iter().map(|t| json!({"at": rfc3339(t.at), "at_ns": t.at, "reason": t.reason})).collect();
    Ok(json!({"window_ns": s.breaker_window_ns, "in_window": s.breaker_trips_in_window, "last": last}))
}

/// `[{"id", "expires_at": RFC 3339 UTC, "expires_at_ns"}]` for the requests awaiting approval.
fn pending_expiry_json(pending: &[String]) -> Result<serde_json::Value, DecodeError> {
    let mut out = Vec::new();
    for text in pending {
        let d: Decision = decode(text)?;
        if let Some(t) = expires_at(&d) {
            out.push(json!({"id": d.id, "expires_at": rfc3339(t), "expires_at_ns": t}));
        }
    }
    Ok(serde_json::Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_table_starts_each_row_with_the_rule_and_counts_the_quarantined() {
        let rule = |name: &str, health: &str| pb::Rule {
            name: name.into(),
            severity: "critical".into(),
            mode: "shadow".into(),
            health: health.into(),
            firing: 2,
            ..Default::default()
        };
        let text = rules(&[rule("slow-step", "ok"), rule("pfc-storm", "quarantined")]);
        let row = text.lines().find(|l| l.starts_with("slow-step")).unwrap();
        assert!(row.contains(" shadow "), "{row}");
        assert!(text.ends_with("2 rules, 1 quarantined\n"), "{text}");
    }

    #[test]
    fn a_rules_record_shows_its_share_effective_and_a_rule_never_judged_shows_no_share() {
        let judged = pb::Rule {
            name: "pfc-storm".into(),
            severity: "critical".into(),
            mode: "enforce".into(),
            health: "ok".into(),
            proposals: 9,
            executed: 5,
            effective: 3,
            ineffective: 1,
            effective_percent: Some(75.0),
            median_time_to_effect_ns: 4_200_000_000,
            ..Default::default()
        };
        let never = pb::Rule {
            name: "slow-step".into(),
            severity: "warning".into(),
            mode: "shadow".into(),
            health: "ok".into(),
            proposals: 2,
            ..Default::default()
        };
        let text = rules(&[judged.clone(), never.clone()]);
        let row =
            |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap().split_whitespace().collect::<Vec<_>>();
        assert_eq!(row("pfc-storm")[4..], ["0", "0", "9", "5", "3/4", "75%", "0", "4.2", "s", "-"], "{text}");
        assert_eq!(row("slow-step")[4..], ["0", "0", "2", "0", "-", "0", "-", "-"], "{text}");
        let json: Vec<serde_json::Value> =
            rules_json(&[judged, never]).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            (json[0]["effective_percent"].as_f64(), json[0]["median_time_to_effect_ns"].as_i64()),
            (Some(75.0), Some(4_200_000_000))
        );
        assert_eq!((json[0]["ineffective"].as_u64(), json[0]["unread"].as_u64()), (Some(1), Some(0)));
        assert!(json[1]["effective_percent"].is_null() && json[1]["median_time_to_effect_ns"].is_null(), "{}", json[1]);
    }

    #[test]
    fn a_decision_touching_jobs_names_them_on_a_line_under_its_row() {
        let record =
            |id: &str, jobs: &[&str]| serde_json::to_string(&crate::report::tests::decision(id, jobs)).unwrap();
        let text = decisions(&[record("0000000001", &["eval-c", "train-a"]), record("0000000002", &[])]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("0000000001"), "{text}");
        assert_eq!(lines[2].trim_start(), "touches 2 running jobs: eval-c, train-a", "{text}");
        assert!(lines[3].starts_with("0000000002"), "no line under a decision touching no job: {text}");
    }

    /// A status reply with one repeat offender on which link.isolate worked.
    fn status_with_an_offender() -> pb::StatusReply {
        let subject = [("node", "node-04"), ("netdev", "eth3"), ("prio", "3")].map(|(k, v)| (k.into(), v.into()));
        let standing = Standing {
            rule: "pfc-storm".into(),
            subject: engine::Labels(subject.into()),
            incidents: 3,
            within: 3600 * engine::SECOND,
            repeat: 3,
            repeat_offender: true,
            latest: Some(1_200 * engine::SECOND),
            worked: Some(engine::ledger::Worked {
                rung: 1,
                kind: "link.isolate".into(),
                id: "0000000009".into(),
                at: 613 * engine::SECOND,
            }),
        };
        pb::StatusReply {
            mode: "enforce".into(),
            breaker_json: r#"{"tripped_at":null,"reason":"","trips":[]}"#.into(),
            offenders_json: vec![serde_json::to_string(&standing).unwrap()],
            ..Default::default()
        }
    }

    #[test]
    fn status_lists_a_repeat_offender_with_its_count_window_and_the_rung_that_worked() {
        let text = status(&status_with_an_offender()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.starts_with("offenders 1 ")).expect(&text);
        assert_eq!(
            lines[at + 1],
            "  pfc-storm {netdev=\"eth3\",node=\"node-04\",prio=\"3\"}: 3 incidents within 1h \
             (repeat offender from 3); link.isolate worked (0000000009, 1970-01-01T00:10:13.000Z)"
        );
        assert_eq!(lines.len(), at + 2, "the offender is the last line: {text}");

        let doc: serde_json::Value = serde_json::from_str(&status_json(&status_with_an_offender()).unwrap()).unwrap();
        let o = &doc["offenders"][0];
        assert_eq!((o["rule"].as_str(), o["subject"]["node"].as_str()), (Some("pfc-storm"), Some("node-04")), "{doc}");
        assert_eq!((o["incidents"].as_u64(), o["within"].as_i64()), (Some(3), Some(3600 * engine::SECOND)));
        assert_eq!((o["repeat"].as_u64(), o["repeat_offender"].as_bool()), (Some(3), Some(true)));
        assert_eq!(
            (o["worked"]["kind"].as_str(), o["worked"]["id"].as_str()),
            (Some("link.isolate"), Some("0000000009"))
        );
        assert_eq!(o["worked"]["at"].as_i64(), Some(613 * engine::SECOND));
    }

    #[test]
    fn status_says_there_is_no_offender_and_json_has_an_empty_list() {
        let none = pb::StatusReply { offenders_json: vec![], ..status_with_an_offender() };
        assert!(status(&none).unwrap().lines().any(|l| l.starts_with("offenders 0 ")));
        let doc: serde_json::Value = serde_json::from_str(&status_json(&none).unwrap()).unwrap();
        assert_eq!(doc["offenders"], serde_json::json!([]));
    }

    #[test]
    fn explain_ends_with_what_the_ledger_remembers_of_a_ladder_rules_subject() {
        let d = serde_json::to_string(&crate::report::tests::decision("0000000011", &[])).unwrap();
        assert!(!explain(std::slice::from_ref(&d), "").unwrap().contains("repeats"), "no record, no line");
        let mut o = Offender::new("pfc-storm", &engine::Labels::default());
        o.firings = vec![engine::SECOND, 2 * engine::SECOND];
        let text = explain(&[d], &serde_json::to_string(&o).unwrap()).unwrap();
        assert!(
            text.ends_with(
                "\nrepeats   pfc-storm on this subject: 2 incidents remembered, the latest 1970-01-01T00:00:02.000Z\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_incidents_drift_and_resolution_are_lines_under_it() {
        let incident = pb::Incident {
            id: "inc-0123456789ab".into(),
            rule: "pfc-storm".into(),
            state: "resolved".into(),
            drift: vec!["d1 reverted: pfcwd off".into()],
            resolved_by: "oncall".into(),
            resolved_ns: 1,
            ..Default::default()
        };
        let text = incidents(&[incident]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("inc-0123456789ab  1970-01-01T00:00:00.000Z  pfc-storm  resolved  -"), "{text}");
        assert_eq!(lines[2], format!("{:18}drift: d1 reverted: pfcwd off", ""));
        assert!(lines[3].trim_start().starts_with("resolved by oncall at"), "{text}");
        assert_eq!(lines[4], "1 incidents");
    }
}
