//! What a timeline is about, its focus: everything, one node, one job, or
//! the subject of one incident. A focus decides, from labels alone, whether
//! a series, a rule instance, a decision or a note belongs on the page.
//!
//! A node's page also shows the switch ports facing its NICs: a PFC storm
//! is seen on both ends of the cable, and the switch end is often the only
//! one that says which way the pause frames go. The far end comes from the
//! `peer_node` label the daemon adds to switch-port series when it has an
//! inventory, or, for a recording made without one, from the inventory
//! given to the timeline.

use std::collections::BTreeSet;

use engine::{Labels, Topology};

/// What to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Focus {
    /// Everything.
    All,
    /// One node's series, and the switch ports facing its NICs.
    Node(String),
    /// One job's signals, and what `Node` keeps for each of its nodes.
    Job {
        /// The job id.
        job: String,
        /// Its nodes, as its `job_node_info` series say.
        nodes: BTreeSet<String>,
    },
    /// One switch, or one port of it (incidents whose subject is a switch
    /// port), and the NIC cabled to that port.
    Switch {
        /// Switch name.
        switch: String,
        /// Port, if the subject names one.
        port: Option<String>,
    },
}

impl Focus {
    /// The focus of an incident on `subject`: its node, else its switch,
    /// else its job (whose nodes `job_nodes` finds), else everything.
    pub fn of_subject(subject: &Labels, job_nodes: impl Fn(&str) -> BTreeSet<String>) -> Focus {
        if let Some(node) = subject.get("node") {
            Focus::Node(node.to_string())
        } else if let Some(switch) = subject.get("switch") {
            Focus::Switch { switch: switch.to_string(), port: subject.get("port").map(str::to_string) }
        } else if let Some(job) = subject.get("job") {
            Focus::Job { job: job.to_string(), nodes: job_nodes(job) }
        } else {
            Focus::All
        }
    }

    /// Whether something labelled `labels` belongs to the focus.
    pub fn keeps(&self, labels: &Labels, topology: Option<&Topology>) -> bool {
        match self {
            Focus::All => true,
            Focus::Node(node) => labels.get("node") == Some(node.as_str()) || faces(labels, node, topology),
            Focus::Job { job, nodes } => match labels.get("job") {
                Some(j) => j == job,
                None => nodes.iter().any(|n| labels.get("node") == Some(n.as_str()) || faces(labels, n, topology)),
            },
            Focus::Switch { switch, port } => {
                labels.get("switch") == Some(switch.as_str())
                    && port.as_ref().is_none_or(|p| {
                        // A switch series names its `port`; a NIC series the
                        // inventory enriched names the far end as `switch_port`.
                        labels.get("port").or_else(|| labels.get("switch_port")) == Some(p.as_str())
                    })
            }
        }
    }

    /// Said in the page's header.
    pub fn describe(&self) -> String {
        match self {
            Focus::All => "everything recorded".into(),
            Focus::Node(n) => format!("node {n} and the switch ports facing its NICs"),
            Focus::Job { job, nodes } => {
                format!(
                    "job {job} on {}, and the switch ports facing them",
                    nodes.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            }
            Focus::Switch { switch, port: Some(p) } => format!("switch {switch} port {p} and the NIC cabled to it"),
            Focus::Switch { switch, port: None } => format!("switch {switch}"),
        }
    }
}

/// Whether `labels` are a switch port's whose far end is a NIC of `node`.
fn faces(labels: &Labels, node: &str, topology: Option<&Topology>) -> bool {
    if labels.get("switch").is_none() || labels.get("port").is_none() {
        return false;
    }
    if let Some(peer) = labels.get("peer_node") {
        return peer == node;
    }
    topology.and_then(|t| t.peer(labels)).is_some_and(|peer| peer.get("node") == Some(node))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(pairs.iter().copied())
    }

    fn example() -> Topology {
        Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example").unwrap()
    }

    #[test]
    fn a_node_keeps_its_series_and_the_switch_ports_facing_it_only() {
        let t = example();
        let s = Focus::Node("node-02".into());
        assert!(s.keeps(&l(&[("node", "node-02"), ("netdev", "eth3")]), Some(&t)));
        assert!(!s.keeps(&l(&[("node", "node-01"), ("netdev", "eth3")]), Some(&t)));
        // The inventory cables node k (0-based) to Ethernet<4k> on every leaf.
        assert!(s.keeps(&l(&[("switch", "leaf-rail3"), ("port", "Ethernet4")]), Some(&t)));
        assert!(!s.keeps(&l(&[("switch", "leaf-rail3"), ("port", "Ethernet0")]), Some(&t)));
        // Without an inventory only the recorded peer label tells.
        assert!(!s.keeps(&l(&[("switch", "leaf-rail3"), ("port", "Ethernet4")]), None));
        assert!(s.keeps(&l(&[("switch", "leaf-rail3"), ("port", "Ethernet4"), ("peer_node", "node-02")]), None));
        assert!(!s.keeps(&l(&[("job", "llm-7")]), Some(&t)), "a job-wide series names no node");
    }

    #[test]
    fn a_job_keeps_its_signals_and_its_nodes_but_not_another_jobs() {
        let t = example();
        let s = Focus::Job { job: "llm-7".into(), nodes: ["node-01".to_string()].into() };
        assert!(s.keeps(&l(&[("job", "llm-7")]), Some(&t)));
        assert!(s.keeps(&l(&[("node", "node-01"), ("gpu", "0")]), Some(&t)));
        assert!(s.keeps(&l(&[("switch", "leaf-rail0"), ("port", "Ethernet0")]), Some(&t)));
        assert!(!s.keeps(&l(&[("job", "other"), ("node", "node-01")]), Some(&t)));
        assert!(!s.keeps(&l(&[("node", "node-02")]), Some(&t)));
    }

    #[test]
    fn an_incident_is_scoped_by_its_subject() {
        let none = |_: &str| BTreeSet::new();
        assert_eq!(Focus::of_subject(&l(&[("node", "n1"), ("netdev", "eth0")]), none), Focus::Node("n1".into()));
        let port = Focus::of_subject(&l(&[("switch", "leaf-rail0"), ("port", "Ethernet4")]), none);
        assert!(port.keeps(&l(&[("switch", "leaf-rail0"), ("port", "Ethernet4"), ("prio", "3")]), None));
        assert!(!port.keeps(&l(&[("switch", "leaf-rail0"), ("port", "Ethernet8")]), None));
        assert!(port.keeps(&l(&[("node", "node-02"), ("switch", "leaf-rail0"), ("switch_port", "Ethernet4")]), None));
        let job = Focus::of_subject(&l(&[("job", "j")]), |_| ["n9".to_string()].into());
        assert_eq!(job, Focus::Job { job: "j".into(), nodes: ["n9".to_string()].into() });
        assert_eq!(Focus::of_subject(&Labels::default(), none), Focus::All);
    }
}
