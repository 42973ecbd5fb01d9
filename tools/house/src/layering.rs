//! The crate layout's arrows run one way (docs/architecture.md). Read from
//! `cargo metadata`, so a crate that gains a forbidden dependency fails
//! here, in CI, before anyone builds on it. The rules are [`RULES`]:
//!
//! - engine, net, gnmi-proto, render and rules depend on no other crate of
//!   the workspace;
//! - sonic depends on none but gnmi-proto (sensors, actuators and sim build
//!   on it);
//! - sensors and actuators never depend on each other, nor on chaos;
//! - sim depends on none of sensors, actuators, chaos, fleet;
//! - outside dev-dependencies only chaos and the binary depend on sim;
//! - fleet's runtime dependencies are the engine only (chaos depends on
//!   fleet: a fleet game day reads the daemons' `[[fleet.budget]]`);
//! - only the binary depends on chaos;
//! - only the binary depends on ops, and ops never on actuators: the binary
//!   builds the concrete actuators (and sensors) and hands them to ops;
//! - the tools depend on no sibling; only tests use test-peers; nothing
//!   uses house.

use crate::metadata::{DepKind, Workspace};

/// One dependency of a workspace crate on another: (from, to, dev?).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edge {
    from: String,
    to: String,
    dev: bool,
}

/// The rules, as the check's messages and docs/architecture.md state them.
pub const RULES: [&str; 9] = [NO_SIBLING, SONIC, EACH_OTHER, CHAOS, OPS, SIM_BELOW, SIM_USERS, FLEET, TOOLS];
const NO_SIBLING: &str = "engine, net, gnmi-proto, render and rules depend on no sibling";
const SONIC: &str = "sonic depends on no crate but gnmi-proto";
const EACH_OTHER: &str = "sensors and actuators never depend on each other";
const CHAOS: &str = "only the binary depends on chaos";
const OPS: &str = "only the binary depends on ops, and ops never on actuators (the binary builds them)";
const SIM_BELOW: &str = "sim depends on no sensor, actuator, chaos or fleet crate (their tests depend on it)";
const SIM_USERS: &str = "outside dev-dependencies only chaos and the binary depend on sim";
const FLEET: &str = "fleet's runtime dependencies are the engine only";
const TOOLS: &str = "the tools depend on no sibling; only tests depend on test-peers; nothing depends on house";

/// The workspace's internal dependency edges.
fn edges(workspace: &Workspace) -> Vec<Edge> {
    let mut out = Vec::new();
    for p in &workspace.packages {
        for d in &p.deps {
            out.push(Edge { from: p.short.clone(), to: d.to.clone(), dev: d.kind == DepKind::Dev });
        }
    }
    out
}

/// Every edge the layout forbids, with the rule it breaks.
fn violations(edges: &[Edge]) -> Vec<String> {
    let mut out = Vec::new();
    let mut forbid =
        |e: &Edge, rule: &str| out.push(format!("{} -> {}{}: {rule}", e.from, e.to, if e.dev { " (dev)" } else { "" }));
    for e in edges {
        let (from, to) = (e.from.as_str(), e.to.as_str());
        if matches!(from, "engine" | "net" | "gnmi-proto" | "render" | "rules") && !e.dev {
            forbid(e, NO_SIBLING);
        }
        if from == "sonic" && to != "gnmi-proto" && !(e.dev && to == "test-peers") {
            forbid(e, SONIC);
        }
        if matches!((from, to), ("sensors", "actuators") | ("actuators", "sensors")) {
            forbid(e, EACH_OTHER);
        }
        if to == "chaos" && from != "rocemend" {
            forbid(e, CHAOS);
        }
        if (to == "ops" && from != "rocemend") || (from == "ops" && to == "actuators") {
            forbid(e, OPS);
        }
        if from == "sim" && matches!(to, "sensors" | "actuators" | "chaos" | "fleet") {
            forbid(e, SIM_BELOW);
        }
        if to == "sim" && !e.dev && !matches!(from, "chaos" | "rocemend") {
            forbid(e, SIM_USERS);
        }
        if from == "fleet" && !e.dev && to != "engine" {
            forbid(e, FLEET);
        }
        if matches!(from, "house" | "test-peers") || to == "house" || (to == "test-peers" && !e.dev) {
            forbid(e, TOOLS);
        }
    }
    out
}

/// The check: one finding per forbidden arrow.
pub fn check(workspace: &Workspace) -> Vec<String> {
    violations(&edges(workspace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_layering_holds() {
        let workspace = Workspace::read().expect("cargo metadata runs");
        let edges = edges(&workspace);
        let crates: std::collections::BTreeSet<&str> = edges.iter().map(|e| e.from.as_str()).collect();
        for expected in ["rocemend", "sensors", "actuators", "chaos", "sim", "fleet", "ops"] {
            assert!(crates.contains(expected), "no dependencies read for {expected}: {edges:?}");
        }
        let bad = violations(&edges);
        assert!(bad.is_empty(), "forbidden dependencies:\n{}", bad.join("\n"));
    }

    #[test]
    fn the_checker_catches_each_forbidden_arrow() {
        let edge = |from: &str, to: &str, dev: bool| Edge { from: from.into(), to: to.into(), dev };
        let cases = [
            (edge("engine", "net", false), "no sibling"),
            (edge("actuators", "sensors", false), "each other"),
            (edge("sensors", "chaos", true), "only the binary depends on chaos"),
            (edge("fleet", "chaos", false), "only the binary depends on chaos"),
            (edge("ops", "chaos", false), "only the binary depends on chaos"),
            (edge("render", "engine", false), "no sibling"),
            (edge("chaos", "ops", false), "only the binary depends on ops"),
            (edge("ops", "actuators", false), "ops never on actuators"),
            (edge("sim", "sensors", false), "sim depends on no"),
            (edge("sensors", "sim", false), "only chaos and the binary depend on sim"),
            (edge("fleet", "gnmi-proto", false), "fleet's runtime"),
            (edge("sonic", "engine", false), "sonic depends on no crate but gnmi-proto"),
            (edge("sonic", "sim", true), "sonic depends on no crate but gnmi-proto"),
            (edge("engine", "test-peers", false), "only tests depend on test-peers"),
            (edge("rocemend", "house", true), "nothing depends on house"),
            (edge("house", "engine", false), "the tools depend on no sibling"),
        ];
        for (e, rule) in cases {
            let found = violations(std::slice::from_ref(&e));
            assert!(found.iter().any(|v| v.contains(rule)), "{e:?} should break {rule:?}: {found:?}");
        }
        let allowed = [
            edge("sensors", "sim", true),
            edge("chaos", "sim", false),
            edge("chaos", "fleet", false),
            edge("fleet", "sim", true),
            edge("rocemend", "chaos", false),
            edge("net", "test-peers", true),
            edge("rocemend", "ops", false),
            edge("ops", "sensors", false),
            edge("ops", "render", false),
            edge("chaos", "render", false),
            edge("chaos", "rules", false),
            edge("rocemend", "rules", false),
            edge("sonic", "gnmi-proto", false),
            edge("sensors", "sonic", false),
        ];
        assert_eq!(violations(&allowed), Vec::<String>::new());
    }
}
