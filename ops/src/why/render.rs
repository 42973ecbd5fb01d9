//! The answer as text (a verdict line, a ranked table, the decisions, the
//! command to see it) or as one JSON document with the same content.

use std::fmt::Write;

use engine::{Nanos, MS, SECOND};

use super::path::Element;
use super::rank::{Ranked, Signal};
use super::Report;
use crate::time::rfc3339;

/// Elements shown in the text table.
const SHOWN: usize = 8;
/// Signals shown per element.
const SIGNALS: usize = 3;

/// `HH:MM:SS.mmm` in UTC.
pub fn clock(t: Nanos) -> String {
    let text = rfc3339(t);
    text.split_once('T').map(|(_, c)| c.trim_end_matches('Z').to_string()).unwrap_or(text)
}

/// A duration the way an SRE says it: `180 ms`, `2.4 s`, `3 min 5 s`.
pub fn duration(ns: Nanos) -> String {
    let a = ns.abs();
    if a < SECOND {
        format!("{} ms", a / MS)
    } else if a < 60 * SECOND {
        format!("{:.1} s", a as f64 / SECOND as f64)
    } else {
        format!("{} min {} s", a / (60 * SECOND), (a % (60 * SECOND)) / SECOND)
    }
}

/// A value in 3 significant figures, without noise for small integers.
pub fn value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(0.01..100_000.0).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// `0 → 9.99e5/s`, and for pause durations what it means.
fn movement(s: &Signal) -> String {
    let unit = if s.rate { "/s" } else { "" };
    let mut out = format!("{} → {}{unit}", value(s.effect.baseline), value(s.effect.regression));
    if s.rate && s.metric.ends_with("pause_duration_us") {
        let _ = write!(out, " ({:.0} % of the time)", (s.effect.regression / 1e4).min(100.0));
    }
    out
}

fn lead(s: &Signal) -> String {
    match s.lead_ns {
        Some(l) if l >= 0 => format!("{} before", duration(l)),
        Some(l) => format!("{} after", duration(l)),
        None => "—".into(),
    }
}

/// The element, with its devices when it is a rail.
fn element_name(r: &Report, e: &Ranked) -> String {
    match r.path.cable(&e.element) {
        Some(c) => {
            let port = match (&c.switch, &c.port) {
                (Some(s), Some(p)) => format!(" ↔ {s} {p}"),
                _ => String::new(),
            };
            format!("{} ({}/{}{port})", e.element, c.rdma_dev, c.netdev)
        }
        None => e.element.to_string(),
    }
}

/// Labels that tell a series apart; the inventory's (rack, plane, peer…)
/// only repeat what the element already says.
const SHORT_LABELS: [&str; 8] = ["node", "netdev", "gpu", "switch", "port", "prio", "queue", "xid"];

/// `metric{node=…,netdev=…}` with [`SHORT_LABELS`] only.
fn signal_name(s: &Signal) -> String {
    // A NIC series' `gpu` and `switch` are the inventory's, not its own.
    let pairs: Vec<(&str, &str)> =
        s.labels.trim_matches(['{', '}']).split(',').filter_map(|kv| kv.split_once('=')).collect();
    let nic = pairs.iter().any(|(k, _)| ["netdev", "rdma_dev"].contains(k));
    let labels: Vec<String> = pairs
        .into_iter()
        .filter(|(k, _)| SHORT_LABELS.contains(k) && !(nic && ["gpu", "switch"].contains(k)))
        .map(|(k, v)| format!("{k}={}", v.trim_matches('"')))
        .collect();
    format!("{}{{{}}}", s.metric, labels.join(","))
}

/// The one-line answer.
pub fn verdict(r: &Report) -> String {
    let rise = format!("{} rose {:.0} %", signal_word(r), r.signal.slowdown * 100.0);
    let Some(top) = r.ranking.first() else {
        return format!(
            "not the fabric: job {}: the {rise} from {}, but no signal on its path moved ({} series compared); look at the job's input pipeline or its code",
            r.job,
            clock(r.windows.rise_at),
            r.compared
        );
    };
    let s = &top.signals[0];
    let when = match (s.moved_at, s.lead_ns) {
        (Some(m), Some(l)) if l >= 0 => format!(" from {}, {} before the {rise}", clock(m), duration(l)),
        (Some(m), Some(l)) => format!(" from {}, {} after the {rise}", clock(m), duration(l)),
        _ => format!(" while the {rise}"),
    };
    let mut out = format!("{}: {} {}{when}", element_name(r, top), signal_name(s), movement(s));
    if let Some(c) = collision_behind(r, top) {
        out = format!("{c}; {out}");
    }
    let sure = r.answer.confidence * 100.0;
    out = if let Some(node) = &r.answer.host {
        format!(
            "not the fabric: the GPUs of {node} moved together (best: {out}): its host — CPU, input pipeline, power or \
             cooling — slowed the job, not one GPU and not the network (confidence {sure:.0} %)"
        )
    } else if r.answer.fabric {
        format!("{out} (confidence {sure:.0} %)")
    } else {
        format!(
            "not the fabric: no element on the job's path moved enough to explain it (best: {out}, score {:.1} < {}); \
             look at the job's input pipeline or its code (confidence {sure:.0} %)",
            top.score,
            super::answer::FABRIC_SCORE
        )
    };
    if let Some(d) = r.decisions.first() {
        let _ = write!(out, "; {} ({}, {}) at {}", d.action, d.verdict, d.rule, clock(d.decided_at));
        match d.recovered_at {
            Some(t) => {
                let _ = write!(out, ", the job back to its baseline {} later", duration(t - d.decided_at));
            }
            None => out.push_str(", the job not back to its baseline by the end of the recording"),
        }
    }
    out
}

/// The ECMP collision behind `top`: for a plane, on the leaf its strongest signal names (a hot
/// uplink's marks); for a leaf, on itself; for a NIC, on the leaf it is cabled to. A collision
/// elsewhere (another leaf of the plane, whose healthy spread happens to be uneven) is listed,
/// not blamed.
pub fn collision_behind<'a>(r: &'a Report, top: &Ranked) -> Option<&'a super::ecmp::Collision> {
    let named = |c: &&super::ecmp::Collision| {
        top.signals.first().is_some_and(|s| s.labels.contains(&format!("switch=\"{}\"", c.switch)))
    };
    let behind = |c: &&super::ecmp::Collision| match &top.element {
        // The plane's uplinks: the leaf its strongest signal names, not any leaf of the plane.
        Element::Plane { plane } => c.plane.as_ref() == Some(plane) && named(c),
        Element::Switch { switch } => *switch == c.switch,
        rail @ Element::Rail { .. } => r.path.cable(rail).is_some_and(|cable| cable.switch.as_ref() == Some(&c.switch)),
        _ => false,
    };
    r.ecmp.iter().filter(behind).find(named).or_else(|| r.ecmp.iter().find(behind))
}

fn signal_word(r: &Report) -> &'static str {
    if r.signal.metric == super::BUSBW {
        "slowdown (NCCL bus bandwidth)"
    } else {
        "step time"
    }
}

/// The commands that show the regression on a timeline.
pub fn commands(r: &Report) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in &r.decisions {
        let c = format!("rocemend timeline --incident {}", d.incident);
        if !out.contains(&c) {
            out.push(c);
        }
    }
    let (a, b) = (
        r.windows.baseline.0.max(r.windows.regression.0 - (r.windows.regression.1 - r.windows.regression.0)),
        r.windows.regression.1,
    );
    out.push(format!("rocemend timeline --job {} --from {} --to {}", r.job, rfc3339(a), rfc3339(b + SECOND)));
    out
}

/// The first line: the job, its signal, the windows and how they were found.
fn header(r: &Report) -> String {
    let mut out = String::new();
    let w = &r.windows;
    let how = match (w.detected, w.stalled) {
        (true, true) => "stalled: no step ended in it",
        (true, false) => "found in the step time",
        (false, _) => "as given; baseline: the span before",
    };
    let unit = if r.signal.metric == super::BUSBW { " GB/s" } else { " s" };
    if w.peers_only {
        let _ = writeln!(
            out,
            "job {} on {}: {} {}{unit}, never faster in the recording ({} to {}): each element against its peers in the job (the same counter of the other NICs, GPUs, uplinks), not against its past; columns: the peers' median → its own",
            r.job,
            r.nodes.join(", "),
            r.signal.metric,
            value(r.signal.levels.regression),
            clock(w.regression.0),
            clock(w.regression.1),
        );
    } else {
        let _ = writeln!(
            out,
            "job {} on {}: {} {} → {}{unit} ({:+.0} %) from {} to {} ({how}; baseline {} – {})",
            r.job,
            r.nodes.join(", "),
            r.signal.metric,
            value(r.signal.levels.baseline),
            value(r.signal.levels.regression),
            r.signal.slowdown * 100.0,
            clock(w.regression.0),
            clock(w.regression.1),
            clock(w.baseline.0),
            clock(w.baseline.1),
        );
    }
    out
}

/// The whole answer as text.
pub fn text(r: &Report) -> String {
    let mut out = header(r);
    let _ = writeln!(out, "\nverdict: {}\n", verdict(r));
    let _ = writeln!(out, "{:<4} {:<56} {:>6}  top signals (baseline → regression, moved)", "rank", "element", "score");
    for (i, e) in r.ranking.iter().take(SHOWN).enumerate() {
        for (k, s) in e.signals.iter().take(SIGNALS).enumerate() {
            let (rank, name, score) = if k == 0 {
                ((i + 1).to_string(), element_name(r, e), format!("{:.1}", e.score))
            } else {
                (String::new(), String::new(), String::new())
            };
            let _ = writeln!(out, "{rank:<4} {name:<56} {score:>6}  {} {} ({})", signal_name(s), movement(s), lead(s));
        }
    }
    if r.ranking.len() > SHOWN {
        let _ = writeln!(out, "     … {} more elements moved less", r.ranking.len() - SHOWN);
    }
    let _ = writeln!(out, "     ({} series on the job's path compared)", r.compared);
    if !r.ecmp.is_empty() {
        let _ = writeln!(out, "\nleaves spreading the job's traffic unevenly over their uplinks:");
        for c in &r.ecmp {
            let _ = writeln!(out, "  {c}");
        }
    }
    let _ = writeln!(out, "\ndecisions in the window:");
    if r.decisions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for d in &r.decisions {
        let effect = match d.recovered_at {
            Some(t) => format!("job back to baseline {} later", duration(t - d.decided_at)),
            None => "job not back to baseline by the end of the recording".into(),
        };
        let _ = writeln!(
            out,
            "  {}  {:<24} {} {}  {}  {}  {}",
            clock(d.decided_at),
            d.rule,
            d.action,
            d.target,
            d.verdict,
            d.incident,
            effect
        );
    }
    let _ = writeln!(out, "\nsee it:");
    for c in commands(r) {
        let _ = writeln!(out, "  {c}");
    }
    out
}

/// The whole answer as one JSON document.
pub fn json(r: &Report) -> serde_json::Value {
    let mut doc = serde_json::to_value(r).unwrap_or_default();
    if let Some(map) = doc.as_object_mut() {
        map.insert("verdict".into(), verdict(r).into());
        map.insert("commands".into(), commands(r).into());
        let names: Vec<String> = r.ranking.iter().map(|e| element_name(r, e)).collect();
        if let Some(ranking) = map.get_mut("ranking").and_then(|v| v.as_array_mut()) {
            for (e, name) in ranking.iter_mut().zip(names) {
                e["name"] = name.into();
            }
        }
        if let Some(found) = map.get_mut("ecmp").and_then(|v| v.as_array_mut()) {
            for (e, c) in found.iter_mut().zip(&r.ecmp) {
                e["text"] = c.to_string().into();
            }
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_durations_and_clocks_read_like_an_sre_writes_them() {
        assert_eq!(value(0.0), "0");
        assert_eq!(value(0.5), "0.5");
        assert_eq!(value(1234.4), "1234");
        assert_eq!(value(999_000.0), "9.99e5");
        assert_eq!(duration(180 * MS), "180 ms");
        assert_eq!(duration(-2_400 * MS), "2.4 s");
        assert_eq!(duration(185 * SECOND), "3 min 5 s");
        assert_eq!(clock(1_700_000_000 * SECOND + 250 * MS), "22:13:20.250");
    }
}
