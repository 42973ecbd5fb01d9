//! Subjects on escalation ladders in one line each: how `status`, the
//! console and `explain` say how often a subject's incidents came back
//! and which rung last worked on it.

use std::time::Duration;

use engine::ledger::{Offender, Standing, Worked};

use super::rfc3339;

/// `pfc-storm {netdev="eth3",node="node-04"}: 3 incidents within 1h
/// (repeat offender from 3); link.isolate worked (0000000009, 2026-…)`.
pub fn standing(s: &Standing) -> String {
    let within = humantime::format_duration(Duration::from_nanos(s.within.max(0) as u64));
    let repeat = match (s.repeat, s.repeat_offender) {
        (0, _) => "repeats not counted".to_string(),
        (n, true) => format!("repeat offender from {n}"),
        (n, false) => format!("not a repeat offender before {n}"),
    };
    format!("{} {}: {} within {within} ({repeat}){}", s.rule, s.subject, incidents(s.incidents), worked(&s.worked))
}

/// What the ledger remembers of a decision's subject, for `explain`:
/// `2 incidents remembered, the latest 2026-…; link.isolate worked (…)`.
/// Firings older than the ladder's window are dropped when the next one
/// is counted, so this is the count as of the latest.
pub fn remembered(o: &Offender) -> String {
    let latest = o.firings.last().map(|&t| format!(", the latest {}", rfc3339(t))).unwrap_or_default();
    format!("{} remembered{latest}{}", incidents(o.firings.len()), worked(&o.worked))
}

fn incidents(n: usize) -> String {
    if n == 1 {
        "1 incident".to_string()
    } else {
        format!("{n} incidents")
    }
}

fn worked(w: &Option<Worked>) -> String {
    match w {
        Some(w) => format!("; {} worked ({}, {})", w.kind, w.id, rfc3339(w.at)),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::{Labels, SECOND};

    fn worked_at(at: i64) -> Option<Worked> {
        Some(Worked { rung: 1, kind: "link.isolate".into(), id: "0000000009".into(), at })
    }

    #[test]
    fn a_standing_says_its_count_its_window_whether_it_repeats_and_what_worked() {
        let subject = Labels([("node", "node-04"), ("netdev", "eth3")].map(|(k, v)| (k.into(), v.into())).into());
        let mut s = Standing {
            rule: "pfc-storm".into(),
            subject,
            incidents: 3,
            within: 3600 * SECOND,
            repeat: 3,
            repeat_offender: true,
            latest: Some(10 * SECOND),
            worked: worked_at(5 * SECOND),
        };
        assert_eq!(
            standing(&s),
            "pfc-storm {netdev=\"eth3\",node=\"node-04\"}: 3 incidents within 1h (repeat offender from 3); \
             link.isolate worked (0000000009, 1970-01-01T00:00:05.000Z)"
        );
        (s.incidents, s.repeat_offender, s.worked) = (2, false, None);
        assert!(standing(&s).ends_with(": 2 incidents within 1h (not a repeat offender before 3)"), "{}", standing(&s));
        s.repeat = 0;
        assert!(standing(&s).ends_with("(repeats not counted)"), "{}", standing(&s));
    }

    #[test]
    fn a_remembered_subject_names_its_latest_incident() {
        let mut o = Offender::new("pfc-storm", &Labels::default());
        o.firings = vec![SECOND, 2 * SECOND];
        o.worked = worked_at(3 * SECOND);
        assert_eq!(
            remembered(&o),
            "2 incidents remembered, the latest 1970-01-01T00:00:02.000Z; \
             link.isolate worked (0000000009, 1970-01-01T00:00:03.000Z)"
        );
    }
}
