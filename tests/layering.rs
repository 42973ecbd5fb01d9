//! The crate layout's arrows run one way (docs/architecture.md). Read from
//! `cargo metadata`, so a crate that gains a forbidden dependency fails
//! here, in CI, before anyone builds on it:
//!
//! - engine, net and gnmi-proto depend on no other crate of the workspace;
//! - sonic depends on none but gnmi-proto (sensors, actuators and sim build on it);
//! - sensors and actuators never depend on each other, nor on chaos;
//! - sim depends on none of sensors, actuators, chaos, fleet;
//! - outside dev-dependencies only chaos and the binary depend on sim;
//! - fleet's runtime dependencies are the engine only;
//! - only the binary depends on chaos.

use std::collections::BTreeMap;
use std::process::Command;

/// One dependency of a workspace crate on another: (from, to, dev?).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edge {
    from: String,
    to: String,
    dev: bool,
}

/// The workspace's internal dependency edges, from `cargo metadata` JSON.
fn edges(metadata: &serde_json::Value) -> Vec<Edge> {
    let packages = metadata["packages"].as_array().expect("packages");
    let ours: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = Vec::new();
    for p in packages {
        let from = short(p["name"].as_str().unwrap_or_default());
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let name = d["name"].as_str().unwrap_or_default();
            if ours.contains(&name) {
                out.push(Edge { from: from.clone(), to: short(name), dev: d["kind"].as_str() == Some("dev") });
            }
        }
    }
    out
}

/// `rocemend-sim` → `sim`; the binary stays `rocemend`.
fn short(name: &str) -> String {
    name.strip_prefix("rocemend-").unwrap_or(name).to_string()
}

/// Every edge the layout forbids, with the rule it breaks.
fn violations(edges: &[Edge]) -> Vec<String> {
    let mut out = Vec::new();
    let mut forbid =
        |e: &Edge, rule: &str| out.push(format!("{} -> {}{}: {rule}", e.from, e.to, if e.dev { " (dev)" } else { "" }));
    for e in edges {
        let (from, to) = (e.from.as_str(), e.to.as_str());
        if matches!(from, "engine" | "net" | "gnmi-proto") && !e.dev {
            forbid(e, "engine, net and gnmi-proto depend on no sibling");
        }
        if from == "sonic" && to != "gnmi-proto" {
            forbid(e, "sonic depends on no crate but gnmi-proto");
        }
        if matches!((from, to), ("sensors", "actuators") | ("actuators", "sensors")) {
            forbid(e, "sensors and actuators never depend on each other");
        }
        if to == "chaos" && from != "rocemend" {
            forbid(e, "only the binary depends on chaos");
        }
        if from == "sim" && matches!(to, "sensors" | "actuators" | "chaos" | "fleet") {
            forbid(e, "sim depends on no sensor, actuator, chaos or fleet crate (their tests depend on it)");
        }
        if to == "sim" && !e.dev && !matches!(from, "chaos" | "rocemend") {
            forbid(e, "outside dev-dependencies only chaos and the binary depend on sim");
        }
        if from == "fleet" && !e.dev && to != "engine" {
            forbid(e, "fleet's runtime dependencies are the engine only");
        }
    }
    out
}

#[test]
fn the_workspace_layering_holds() {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let edges = edges(&metadata);
    let crates: BTreeMap<&str, ()> = edges.iter().map(|e| (e.from.as_str(), ())).collect();
    for expected in ["rocemend", "sensors", "actuators", "chaos", "sim", "fleet"] {
        assert!(crates.contains_key(expected), "no dependencies read for {expected}: {edges:?}");
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
        (edge("sim", "sensors", false), "sim depends on no"),
        (edge("sensors", "sim", false), "only chaos and the binary depend on sim"),
        (edge("fleet", "gnmi-proto", false), "fleet's runtime"),
        (edge("sonic", "engine", false), "sonic depends on no crate but gnmi-proto"),
        (edge("sonic", "sim", true), "sonic depends on no crate but gnmi-proto"),
    ];
    for (e, rule) in cases {
        let found = violations(std::slice::from_ref(&e));
        assert!(found.iter().any(|v| v.contains(rule)), "{e:?} should break {rule:?}: {found:?}");
    }
    let allowed = [
        edge("sensors", "sim", true),
        edge("chaos", "sim", false),
        edge("fleet", "sim", true),
        edge("rocemend", "chaos", false),
        edge("sonic", "gnmi-proto", false),
        edge("sensors", "sonic", false),
    ];
    assert_eq!(violations(&allowed), Vec::<String>::new());
}
