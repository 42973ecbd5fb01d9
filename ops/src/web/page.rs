//! The console's HTML, rendered on the server from a [`Snapshot`] of the
//! control API. The page is the same sections the script fetches again
//! (`/sections`) when an event says something changed: one renderer, so
//! the first paint and the live updates never disagree.

use std::fmt::Write as _;

use engine::dispatch::Decision;
use engine::ledger::{Offender, Standing};
use render::escape;
use serde_json::Value;

use super::fleet::FleetReadError;
use crate::control::pb;
use crate::report::{self, explain_text, rfc3339, short, verdict_line};

/// At most this many incidents and decisions are listed: the newest.
pub const LISTED: usize = 50;

/// What the page shows, read from the control API.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Mode, breaker, approvals, actions in effect, silences, drift, sensors.
    pub status: pb::StatusReply,
    /// Incidents, newest first.
    pub incidents: Vec<pb::Incident>,
    /// Rule instances now: their states.
    pub instances: Vec<pb::Instance>,
    /// Recent decisions, newest first.
    pub decisions: Vec<Decision>,
    /// The fleet as etcd has it (`fleet::status::FleetStatus` as JSON), or
    /// why it could not be read; `None` without `[fleet]`.
    pub fleet: Option<Result<Value, FleetReadError>>,
    /// What could not be read, shown instead of hiding it.
    pub problems: Vec<String>,
}

/// Who is looking: whether the page offers approve and reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Served over TLS with a token configured: writes with the token.
    Writable,
    /// Plain HTTP, or no token configured: nobody writes from the page.
    ReadOnly,
}

/// The whole page: the sections, the live event log and the script.
pub fn full(s: &Snapshot, access: Access) -> String {
    let mut out = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>rocemend console</title>\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <link rel=\"stylesheet\" href=\"/console.css\"><script src=\"/console.js\" defer></script></head><body>",
    );
    let _ = write!(
        out,
        "<header><h1>rocemend</h1><span id=\"live\" class=\"live off\">connecting…</span>{}</header>",
        match access {
            Access::Writable => {
                "<form id=\"auth\" autocomplete=\"off\"><label>token <input id=\"token\" type=\"password\" \
                 placeholder=\"to approve or reject\"></label> <label>as <input id=\"by\" placeholder=\"your name\"></label></form>"
            }
            Access::ReadOnly => "<span id=\"auth\" class=\"readonly\">read-only</span>",
        }
    );
    let _ = write!(out, "<main id=\"sections\" data-access=\"{}\">", access_name(access));
    out.push_str(&sections(s, access));
    out.push_str(
        "</main><section id=\"why\"><h2>Why is this job slow?</h2><form action=\"/why\" target=\"_blank\">\
         <input name=\"job\" placeholder=\"job name\" required> <button>ask</button></form></section>\
         <section><h2>Events</h2><ol id=\"events\" reversed></ol></section>\
         <dialog id=\"explain\"><pre></pre><form method=\"dialog\"><button>close</button></form></dialog></body></html>",
    );
    out
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::Writable => "writable",
        Access::ReadOnly => "read-only",
    }
}

/// The sections, as `/sections` serves them.
pub fn sections(s: &Snapshot, access: Access) -> String {
    let mut out = String::new();
    for problem in &s.problems {
        let _ = write!(out, "<p class=\"problem\">{}</p>", escape(problem));
    }
    daemon(&mut out, &s.status);
    if let Some(f) = &s.fleet {
        fleet(&mut out, f);
    }
    approvals(&mut out, &s.status, access);
    incidents(&mut out, s);
    effects(&mut out, &s.status, access);
    decisions(&mut out, &s.decisions);
    silences(&mut out, &s.status);
    offenders(&mut out, &s.status);
    sensors(&mut out, &s.status);
    out
}

fn json_lines(lines: &[String]) -> Vec<Value> {
    lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// A time in ns since the epoch, as UTC.
fn time(v: &Value) -> String {
    v.as_i64().map(rfc3339).unwrap_or_else(|| "-".into())
}

/// Labels as `k=v` pairs.
fn labels(v: &Value) -> String {
    match v.as_object() {
        Some(map) => map.iter().map(|(k, v)| format!("{k}={}", text(v))).collect::<Vec<_>>().join(" "),
        None => text(v),
    }
}

fn daemon(out: &mut String, status: &pb::StatusReply) {
    let breaker: Value = serde_json::from_str(&status.breaker_json).unwrap_or(Value::Null);
    let tripped = !breaker["tripped_at"].is_null();
    let _ = write!(
        out,
        "<section id=\"daemon\"><h2>Daemon</h2><p>mode <b id=\"mode\">{}</b> · circuit breaker \
         <b id=\"breaker\" class=\"{}\">{}</b> ({} trips in the last {} s) · {} ledger records</p></section>",
        escape(&status.mode),
        if tripped { "bad" } else { "good" },
        if tripped {
            escape(&format!("tripped at {}: {}", time(&breaker["tripped_at"]), text(&breaker["reason"])))
        } else {
            "clear".into()
        },
        status.breaker_trips_in_window,
        status.breaker_window_ns / 1_000_000_000,
        status.ledger_records
    );
    if let Ok(h) = serde_json::from_str::<engine::store::WriteHealth>(&status.ledger_json) {
        if !h.writable {
            let _ = write!(
                out,
                "<p id=\"ledger-unwritable\" class=\"bad\">The ledger cannot be written since {} ({}): \
                 no action or undo is sent until it can; it is retried every second.</p>",
                escape(&h.since.map(engine::time::rfc3339).unwrap_or_default()),
                escape(h.cause.as_deref().unwrap_or("")),
            );
        }
    }
}

fn fleet(out: &mut String, status: &Result<Value, FleetReadError>) {
    out.push_str("<section id=\"fleet\"><h2>Fleet</h2>");
    let f = match status {
        Ok(f) => f,
        Err(why) => {
            let why = why.to_string();
            let _ = write!(out, "<p class=\"problem\">etcd could not be read: {}</p></section>", escape(&why));
            return;
        }
    };
    let b = &f["breaker"];
    let breaker = if b["tripped"].as_bool().unwrap_or(false) {
        format!(
            "<b id=\"fleet-breaker\" class=\"bad\">tripped by {}: {}</b>",
            escape(&text(&b["by"])),
            escape(&text(&b["reason"]))
        )
    } else {
        "<b id=\"fleet-breaker\" class=\"good\">clear</b>".into()
    };
    let members = f["members"].as_array().map_or(0, Vec::len);
    let _ = write!(out, "<p>fleet breaker {breaker} · {members} daemons with a live session</p>");
    out.push_str("<table><tr><th>budget</th><th>limit</th><th>cell</th><th>in use</th><th>held by</th></tr>");
    for budget in f["budgets"].as_array().into_iter().flatten() {
        let cells = budget["cells"].as_array().cloned().unwrap_or_default();
        let name = escape(&text(&budget["name"]));
        let what = escape(&text(&budget["budget"]));
        if cells.is_empty() {
            let _ = write!(out, "<tr><td>{name}</td><td>{what}</td><td>-</td><td>0</td><td></td></tr>");
        }
        for cell in &cells {
            let tokens = cell["tokens"].as_array().cloned().unwrap_or_default();
            let holders: Vec<String> = tokens
                .iter()
                .map(|t| format!("{} ({} {})", text(&t["holder"]), text(&t["kind"]), text(&t["decision"])))
                .collect();
            let _ = write!(
                out,
                "<tr><td>{name}</td><td>{what}</td><td>{}</td><td>{} of {}</td><td>{}</td></tr>",
                escape(&text(&cell["cell"])),
                tokens.len(),
                escape(&text(&budget["limit"])),
                escape(&holders.join(", "))
            );
        }
    }
    out.push_str("</table>");
    for leader in f["leaders"].as_array().into_iter().flatten() {
        let _ = write!(out, "<p>aggregator leader of {}: {}</p>", escape(&text(&leader[0])), escape(&text(&leader[1])));
    }
    out.push_str("</section>");
}

fn approvals(out: &mut String, status: &pb::StatusReply, access: Access) {
    let pending: Vec<Decision> = status.pending_json.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let _ = write!(out, "<section id=\"approvals\"><h2>Awaiting approval ({})</h2>", pending.len());
    if pending.is_empty() {
        out.push_str("<p class=\"empty\">nothing waits for approval</p></section>");
        return;
    }
    out.push_str("<table><tr><th>decision</th><th>rule</th><th>action</th><th>until</th><th></th></tr>");
    for d in &pending {
        let until = match &d.verdict {
            engine::dispatch::Verdict::AwaitingApproval { expires_at } => rfc3339(*expires_at),
            _ => "-".into(),
        };
        let buttons = match access {
            Access::Writable => format!(
                "<button class=\"approve\" data-id=\"{id}\">approve</button> \
                 <button class=\"reject\" data-id=\"{id}\">reject</button>",
                id = escape(&d.id)
            ),
            Access::ReadOnly => "<span class=\"readonly\">read-only</span>".into(),
        };
        let _ = write!(
            out,
            "<tr data-id=\"{id}\"><td><a class=\"explain\" href=\"/decisions/{id}\">{id}</a></td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{buttons}</td></tr>",
            escape(&d.proposal.rule),
            escape(&d.proposal.action.to_string()),
            escape(&until),
            id = escape(&d.id),
        );
    }
    out.push_str("</table></section>");
}

fn incidents(out: &mut String, s: &Snapshot) {
    let _ = write!(out, "<section id=\"incidents\"><h2>Incidents ({})</h2>", s.incidents.len());
    if s.incidents.is_empty() {
        out.push_str("<p class=\"empty\">no incident</p></section>");
        return;
    }
    out.push_str(
        "<table><tr><th>incident</th><th>rule</th><th>subject</th><th>state</th><th>since</th>\
         <th>evidence</th><th>last verdict</th><th>actions</th><th></th></tr>",
    );
    for i in s.incidents.iter().take(LISTED) {
        let newest = i.decision_ids.last().and_then(|id| s.decisions.iter().find(|d| &d.id == id));
        let evidence = newest
            .map(|d| d.proposal.values.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        let stale = if s.instances.iter().any(|n| n.rule == i.rule && n.subject == i.subject && n.stale) {
            " (stale)"
        } else {
            ""
        };
        let mut subject: Vec<(&String, &String)> = i.subject.iter().collect();
        subject.sort();
        let subject: Vec<String> = subject.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            out,
            "<tr data-id=\"{id}\" class=\"{state}\"><td>{id}</td><td>{}</td><td>{}</td><td>{state}{stale}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td><a href=\"/incidents/{id}/timeline\" target=\"_blank\">timeline</a></td></tr>",
            escape(&i.rule),
            escape(&subject.join(" ")),
            escape(&rfc3339(i.started_ns)),
            escape(&evidence),
            escape(&i.last_verdict),
            escape(&i.actions.join("; ")),
            id = escape(&i.id),
            state = escape(&i.state),
        );
    }
    out.push_str("</table></section>");
}

fn effects(out: &mut String, status: &pb::StatusReply, access: Access) {
    let effects = json_lines(&status.in_effect_json);
    let drifted = json_lines(&status.drifted_json);
    let _ = write!(out, "<section id=\"effects\"><h2>Actions in effect ({})</h2>", effects.len());
    if effects.is_empty() {
        out.push_str("<p class=\"empty\">no action in effect</p>");
    } else {
        out.push_str(
            "<table><tr><th>decision</th><th>rule</th><th>action</th><th>since</th><th>drift</th><th></th></tr>",
        );
        for e in &effects {
            let id = text(&e["id"]);
            let drift = drifted
                .iter()
                .find(|d| text(&d["id"]) == id)
                .map(|d| {
                    format!(
                        "{} at {}: {}",
                        text(&d["drift"]["kind"]),
                        time(&d["drift"]["at"]),
                        text(&d["drift"]["found"])
                    )
                })
                .unwrap_or_else(|| "in effect as applied".into());
            let _ = write!(
                out,
                "<tr><td><a class=\"explain\" href=\"/decisions/{id}\">{id}</a></td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&text(&e["rule"])),
                escape(&text(&e["action"]["kind"])),
                escape(&labels(&e["action"]["target"])),
                escape(&time(&e["since"])),
                escape(&drift),
                match access {
                    Access::Writable => format!("<button class=\"undo\" data-id=\"{}\">undo</button>", escape(&id)),
                    Access::ReadOnly => String::new(),
                },
                id = escape(&id),
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
}

fn decisions(out: &mut String, decisions: &[Decision]) {
    let _ = write!(out, "<section id=\"decisions\"><h2>Decisions (newest {})</h2>", decisions.len().min(LISTED));
    if decisions.is_empty() {
        out.push_str("<p class=\"empty\">no decision</p></section>");
        return;
    }
    out.push_str("<table><tr><th>decision</th><th>decided</th><th>rule</th><th>subject</th><th>mode</th><th>action</th><th>verdict</th></tr>");
    for d in decisions.iter().take(LISTED) {
        let _ = write!(
            out,
            "<tr data-id=\"{id}\" data-verdict=\"{}\"><td><a class=\"explain\" href=\"/decisions/{id}\">{id}</a></td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(d.verdict.name()),
            escape(&rfc3339(d.proposal.decided_at)),
            escape(&d.proposal.rule),
            escape(&short(&d.proposal.subject)),
            escape(d.mode.as_str()),
            escape(&d.proposal.action.to_string()),
            escape(&verdict_line(d)),
            id = escape(&d.id),
        );
    }
    out.push_str("</table></section>");
}

fn silences(out: &mut String, status: &pb::StatusReply) {
    let list = json_lines(&status.silences_json);
    let _ = write!(out, "<section id=\"silences\"><h2>Silences ({})</h2>", list.len());
    if list.is_empty() {
        out.push_str("<p class=\"empty\">no silence</p></section>");
        return;
    }
    out.push_str("<table><tr><th>id</th><th>rule</th><th>target</th><th>until</th><th>by</th><th>reason</th></tr>");
    for s in &list {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&text(&s["id"])),
            escape(&text(&s["rule"])),
            escape(&text(&s["target"])),
            escape(&time(&s["until"])),
            escape(&text(&s["by"])),
            escape(&text(&s["reason"])),
        );
    }
    out.push_str("</table></section>");
}

/// One line per subject, as `rocemend status` prints it: the line says
/// the count, the window and the rung together, and a table of its parts
/// would say less.
fn offenders(out: &mut String, status: &pb::StatusReply) {
    let list: Vec<Standing> = status.offenders_json.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let _ = write!(out, "<section id=\"offenders\"><h2>Repeat offenders ({})</h2>", list.len());
    if list.is_empty() {
        out.push_str("<p class=\"empty\">no subject with repeat incidents or a rung that worked</p></section>");
        return;
    }
    out.push_str("<ul>");
    for s in &list {
        let class = if s.repeat_offender { " class=\"bad\"" } else { "" };
        let _ = write!(out, "<li{class}>{}</li>", escape(&report::offenders::standing(s)));
    }
    out.push_str("</ul></section>");
}

fn sensors(out: &mut String, status: &pb::StatusReply) {
    let list = json_lines(&status.sensors_json);
    let _ = write!(out, "<section id=\"sensors\"><h2>Sensors ({})</h2>", list.len());
    out.push_str("<table><tr><th>sensor</th><th>state</th><th>detail</th><th>last read</th><th>samples</th><th>last error</th></tr>");
    for s in &list {
        let state = text(&s["state"]);
        let _ = write!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if state == "up" { "good" } else { "bad" },
            escape(&text(&s["name"])),
            escape(&state),
            escape(&text(&s["detail"])),
            escape(&time(&s["last_ok"])),
            escape(&text(&s["samples"])),
            escape(&text(&s["last_error"])),
        );
    }
    out.push_str("</table></section>");
}

/// `rocemend why`'s answer, as a page of its own.
pub fn why(text: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>rocemend why</title>\
         <link rel=\"stylesheet\" href=\"/console.css\"></head><body><pre class=\"why\">{}</pre></body></html>",
        escape(text)
    )
}

/// One decision and what it is linked to, as `rocemend explain` prints
/// them, for the page's dialog; then what the ledger remembers of its
/// subject when its rule climbs a ladder.
pub fn explain(chain: &[Decision], offender: Option<&Offender>) -> String {
    let mut text: Vec<String> = chain.iter().map(explain_text).collect();
    if let Some(o) = offender {
        text.push(format!("repeats   {} on this subject: {}\n", o.rule, report::offenders::remembered(o)));
    }
    format!("<pre>{}</pre>", escape(&text.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        let pending = serde_json::json!({"tripped_at": null, "reason": ""});
        Snapshot {
            status: pb::StatusReply {
                mode: "enforce".into(),
                breaker_json: pending.to_string(),
                sensors_json: vec![r#"{"name":"job","state":"up","detail":"","last_ok":1,"samples":3}"#.into()],
                silences_json: vec![
                    r#"{"id":"s1","rule":"pfc-storm","target":"<b>","until":1,"by":"ops","reason":"maintenance"}"#
                        .into(),
                ],
                ..Default::default()
            },
            incidents: vec![pb::Incident {
                id: "inc-1".into(),
                rule: "slow-step".into(),
                state: "firing".into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn every_section_is_there_and_text_is_escaped() {
        let html = sections(&snapshot(), Access::ReadOnly);
        for id in ["daemon", "approvals", "incidents", "effects", "decisions", "silences", "sensors"] {
            assert!(html.contains(&format!("<section id=\"{id}\">")), "{id} missing");
        }
        assert!(html.contains("<td>&lt;b&gt;</td>"), "a silence's target is escaped");
        assert!(html.contains("href=\"/incidents/inc-1/timeline\""));
        assert!(html.contains("<b id=\"breaker\" class=\"good\">clear</b>"));
        assert!(!html.contains("id=\"fleet\""), "no fleet section without [fleet]");
        assert!(html.contains("<h2>Repeat offenders (0)</h2><p class=\"empty\">"), "{html}");
    }

    #[test]
    fn a_repeat_offender_is_the_line_status_prints_escaped() {
        let mut s = snapshot();
        s.status.offenders_json = vec![serde_json::json!({
            "rule": "pfc-storm", "subject": {"node": "<n4>"}, "incidents": 3, "within": 3_600_000_000_000i64,
            "repeat": 3, "repeat_offender": true, "latest": 5,
            "worked": {"rung": 1, "kind": "link.isolate", "id": "0000000009", "at": 0},
        })
        .to_string()];
        let html = sections(&s, Access::ReadOnly);
        assert!(
            html.contains(
                "<li class=\"bad\">pfc-storm {node=&quot;&lt;n4&gt;&quot;}: 3 incidents within 1h (repeat offender from 3); \
                 link.isolate worked (0000000009, 1970-01-01T00:00:00.000Z)</li>"
            ),
            "{html}"
        );
    }

    #[test]
    fn the_fleet_section_shows_the_breaker_and_each_cells_tokens() {
        let mut s = snapshot();
        s.fleet = Some(Ok(serde_json::json!({
            "breaker": {"tripped": true, "by": "node-03", "reason": "5 limit hits"},
            "members": [{}, {}],
            "budgets": [{"name": "rail", "budget": "1 at once per plane", "limit": 1, "cells": [
                {"cell": "plane=0", "tokens": [{"holder": "node-03", "kind": "rail.drain", "decision": "d1"}]}
            ]}],
            "leaders": [["pod-a", "agg-1"]],
        })));
        let html = sections(&s, Access::ReadOnly);
        assert!(html.contains("tripped by node-03: 5 limit hits"), "{html}");
        assert!(html.contains("<td>plane=0</td><td>1 of 1</td><td>node-03 (rail.drain d1)</td>"), "{html}");
        assert!(html.contains("aggregator leader of pod-a: agg-1"), "{html}");
        let unreachable = fleet::FleetError::Etcd { endpoints: "127.0.0.1:2379".into(), error: "no answer".into() };
        s.fleet = Some(Err(FleetReadError::Fleet(unreachable)));
        assert!(sections(&s, Access::ReadOnly).contains("etcd could not be read: etcd at 127.0.0.1:2379: no answer"));
    }

    #[test]
    fn a_read_only_page_offers_no_button_and_a_writable_one_asks_for_the_token() {
        let read = full(&snapshot(), Access::ReadOnly);
        assert!(!read.contains("id=\"token\"") && read.contains("read-only"));
        let write = full(&snapshot(), Access::Writable);
        assert!(write.contains("id=\"token\""));
        assert!(!write.contains("<script>"), "no inline script: the CSP allows only /console.js");
    }
}
