//! What `rocemend demo` prints as the daemon runs: each fault, transition
//! and decision as it happens, the read-back of each switch action, and
//! which decision first answered which fault.

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::dispatch::{Decision, Verdict};
use engine::runtime::DaemonEvent;
use engine::{EngineEvent, Nanos, Note};

use super::readback::ReadBack;
use ops::report::{is_notable, ms, offset, short, verdict};

/// Prints the daemon's events of a demo run.
pub(super) struct Printer {
    /// The recording's first timestamp: offsets are printed from it.
    pub t0: Nanos,
    /// The faults announced so far.
    pub faults: Vec<Note>,
    /// Fault index → (rule, decision time) of the first decision about it.
    pub first_decision: BTreeMap<usize, (String, Nanos)>,
    /// Reads switch actions back.
    pub readback: Arc<ReadBack>,
    /// The runtime, to read back from inside the synchronous observer.
    pub handle: tokio::runtime::Handle,
    /// Actions (and undos) executed.
    pub executed: usize,
}

impl Printer {
    pub fn print(&mut self, event: &DaemonEvent) {
        match event {
            DaemonEvent::Note(n) if n.kind == "fault" => {
                say!("{}  FAULT     {}", offset(n.ts, self.t0), n.text);
                self.faults.push(n.clone());
            }
            DaemonEvent::Note(n) => say!("{}  {:<9} {}", offset(n.ts, self.t0), n.kind, n.text),
            DaemonEvent::Engine(EngineEvent::Transition { rule, subject, to, at, values, .. }) if is_notable(*to) => {
                let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={}", compact(*v))).collect();
                say!("{}  {:<9} {rule} {}  {}", offset(*at, self.t0), to.as_str(), short(subject), values.join(" "));
            }
            DaemonEvent::Engine(EngineEvent::SensorStale { rule, subject, at, .. }) => {
                say!("{}  stale     {rule} {}: no action on missing data", offset(*at, self.t0), short(subject));
            }
            DaemonEvent::Engine(EngineEvent::Quarantined { rule, error, at }) => {
                say!("{}  QUARANTINED {rule}: {error}", offset(*at, self.t0));
            }
            DaemonEvent::Decision(d) => self.decision(d),
            DaemonEvent::SensorExited { sensor, error: Some(error) } => say!("sensor {sensor} stopped: {error}"),
            _ => {}
        }
    }

    fn decision(&mut self, d: &Decision) {
        let p = &d.proposal;
        let what = if d.undo_of.is_some() { "undo    " } else { "decide  " };
        say!("{}  {what}  {} [{}] {}", offset(p.decided_at, self.t0), p.action, d.mode.as_str(), verdict(d));
        if let Verdict::Executed { outcome } = &d.verdict {
            self.executed += 1;
            for request in &outcome.requests {
                say!("           sent {request}");
            }
            // The observer is synchronous; the read-back is a gNMI Get on
            // this runtime, so it waits here, off the runtime's workers.
            let (readback, handle) = (self.readback.clone(), self.handle.clone());
            // An action is verified against its outcome; after an undo the
            // values are shown as they are.
            let applied = if d.undo_of.is_some() { None } else { Some(outcome) };
            let line = tokio::task::block_in_place(|| handle.block_on(readback.line(&p.action, applied)));
            if let Some(line) = line {
                say!("           {line}");
            }
        }
        if d.undo_of.is_some() {
            return;
        }
        let fault = self
            .faults
            .iter()
            .enumerate()
            .rev()
            .find(|(_, f)| p.subject.contains_all(&f.labels) && f.ts <= p.decided_at);
        if let Some((i, f)) = fault {
            self.first_decision.entry(i).or_insert_with(|| {
                say!("           detected {} after the fault's first sample", ms(p.decided_at - f.ts));
                (p.rule.clone(), p.decided_at)
            });
        }
    }
}

fn compact(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-3) {
        format!("{v:.2e}")
    } else {
        format!("{v:.3}")
    }
}
