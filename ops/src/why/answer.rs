//! Whether the fabric explains the slowdown, and how sure `why` is.
//!
//! **"Not the fabric".** An element is the answer only when it moved
//! clearly: its score is at least [`FABRIC_SCORE`] (one cause signal, weight
//! 1, about 6 noise floors out of its baseline). A slowdown that nothing on
//! the job's path explains beyond that is the job's own: its input
//! pipeline, its code, a checkpoint to slow storage; the answer says so and
//! names the best element anyway, as a lead.
//!
//! **Confidence.** How far the top element clears that line, times how far
//! it stands above the best element that is a different answer (the same
//! rail on several nodes is one answer: a rail-wide cause). Both are
//! logistic in their measure, fitted on the project's generator
//! (`chaos/sim/src/why_cases.rs`: right answers scored 3.6 and more, healthy
//! fabrics with small distractors 1.3 at most; the measurement is
//! `cargo test --release --test it -- why::scores --ignored --nocapture`).
//! On data that generator does not model the figure is an estimate, not a
//! promise.

use serde::Serialize;

use super::path::Element;
use super::rank::Ranked;

/// The least score of an element that explains a slowdown.
pub const FABRIC_SCORE: f64 = 2.0;

/// What `why` concludes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// An element of the path explains it (the ranking's first); `false`: not the fabric.
    pub fabric: bool,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// The signals that support it, strongest first (the top element's).
    pub evidence: Vec<String>,
    /// When the GPUs of one node lead the ranking together: that node. Its
    /// host (CPU, input pipeline, power, cooling) is the lead, not one GPU
    /// and not the fabric.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// GPUs of one node near the top of the ranking (within half the top
/// score) that make it the node's, not a GPU's: a thermal fault or an XID
/// is one GPU's; a starved or hung host idles all of them (their clocks
/// fall, their utilisation with them).
pub const HOST_GPUS: usize = 4;

/// The node whose GPUs lead the ranking together, if any.
fn host_of(ranking: &[Ranked]) -> Option<String> {
    let Element::Gpu { node, .. } = &ranking.first()?.element else { return None };
    let near = ranking[0].score * 0.5;
    let together = ranking
        .iter()
        .take_while(|e| e.score >= near)
        .filter(|e| matches!(&e.element, Element::Gpu { node: n, .. } if n == node))
        .count();
    (together >= HOST_GPUS).then(|| node.clone())
}

fn logistic(x: f64, middle: f64, steepness: f64) -> f64 {
    1.0 / (1.0 + (-(x - middle) * steepness).exp())
}

/// The group an element answers for: a rail is one answer on every node.
fn answer_of(e: &Element) -> String {
    match e {
        Element::Rail { rail, .. } => format!("rail {rail}"),
        other => other.to_string(),
    }
}

/// The answer for `ranking` (best first).
pub fn answer(ranking: &[Ranked]) -> Answer {
    let Some(top) = ranking.first() else {
        return Answer { fabric: false, confidence: 0.95, evidence: Vec::new(), host: None };
    };
    let strength = logistic(top.score, 2.4, 3.0);
    let mine = answer_of(&top.element);
    let rival = ranking.iter().filter(|e| answer_of(&e.element) != mine).map(|e| e.score).fold(0.0, f64::max);
    let margin = logistic(1.0 - rival / top.score, 0.15, 12.0);
    let evidence =
        top.signals.iter().filter(|s| s.score > 0.0).take(3).map(|s| format!("{}{}", s.metric, s.labels)).collect();
    if let Some(host) = host_of(ranking) {
        return Answer { fabric: false, confidence: 0.8, evidence, host: Some(host) };
    }
    if top.score >= FABRIC_SCORE {
        Answer { fabric: true, confidence: strength * margin, evidence, host: None }
    } else {
        Answer { fabric: false, confidence: 1.0 - strength, evidence, host: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::why::rank::{Effect, Signal};

    fn ranked(node: &str, rail: &str, score: f64) -> Ranked {
        let signal = Signal {
            metric: "ethtool_tx_prio_pause_duration_us".into(),
            labels: String::new(),
            rate: true,
            effect: Effect { baseline: 0.0, regression: 1.0, z: 1.0 },
            moved_at: None,
            lead_ns: None,
            peer_z: None,
            score,
        };
        Ranked { element: Element::Rail { node: node.into(), rail: rail.into() }, score, signals: vec![signal] }
    }

    #[test]
    fn a_clear_cause_is_sure_a_close_rival_is_not_and_a_faint_one_is_not_the_fabric() {
        let clear = answer(&[ranked("a", "3", 7.0), ranked("b", "3", 3.5), ranked("c", "5", 1.0)]);
        assert!(clear.fabric && clear.confidence > 0.9, "{clear:?}");
        let rivals = answer(&[ranked("a", "3", 5.0), ranked("b", "5", 4.9)]);
        assert!(rivals.fabric && rivals.confidence < 0.3, "{rivals:?}");
        let faint = answer(&[ranked("a", "3", 1.2)]);
        assert!(!faint.fabric && faint.confidence > 0.9, "{faint:?}");
        assert!(!answer(&[]).fabric);
    }

    fn gpu(node: &str, gpu: &str, score: f64) -> Ranked {
        Ranked { element: Element::Gpu { node: node.into(), gpu: gpu.into() }, ..ranked(node, "0", score) }
    }

    #[test]
    fn the_gpus_of_one_node_moving_together_are_its_host_and_one_gpu_is_itself() {
        let host: Vec<Ranked> = (0..5).map(|g| gpu("n7", &g.to_string(), 2.7 - 0.1 * g as f64)).collect();
        let a = answer(&host);
        assert!(!a.fabric && a.host.as_deref() == Some("n7"), "{a:?}");
        let one = answer(&[gpu("n7", "3", 6.0), gpu("n7", "1", 1.0), gpu("n7", "2", 0.9), gpu("n7", "4", 0.9)]);
        assert!(one.fabric && one.host.is_none(), "{one:?}");
    }
}
