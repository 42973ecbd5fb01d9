//! The `link` actuator against real links: a veth pair in a network
//! namespace of its own, so nothing on the host is touched.
//!
//! Needs root and `ip` (iproute2); without them it prints `skipped: <reason>`
//! and passes. The actuator runs on a thread that entered the namespace
//! (`setns(CLONE_NEWNET)`) before any netlink socket was opened, with its own
//! current-thread runtime: a socket belongs to the namespace it was created in.

use crate::common;

use std::collections::BTreeMap;

use common::netns::{ip, missing, Namespace};

use actuators::LinkConfig;
use engine::{Action, Actuator, Labels, Verification};

fn isolate(netdev: &str) -> Action {
    Action {
        kind: "link.isolate".into(),
        target: Labels::from_pairs([("node", "gpu-07"), ("netdev", netdev)]),
        params: BTreeMap::from([("reason".into(), "flap".into())]),
    }
}

#[test]
fn a_veth_in_a_namespace_is_taken_down_verified_and_brought_back_up() {
    if let Some(reason) = missing() {
        return test_peers::missing(reason);
    }
    let ns = Namespace::create();
    assert!(ns.show().contains(",UP"), "{}", ns.show());
    let veth = ns.veth.clone();
    let (plan, applied, in_effect) = ns.run(move || async move {
        let link = LinkConfig { node: Some("gpu-07".into()), ..Default::default() }.build("link").unwrap();
        let action = isolate(&veth);
        assert_eq!(link.verify(&action, None).await.unwrap(), Verification::NotInEffect);
        let plan = link.dry_run(&action).await.unwrap();
        let applied = link.execute(&action).await.unwrap();
        let in_effect = link.verify(&action, Some(&applied)).await.unwrap();
        (plan, applied, in_effect)
    });
    assert_eq!(plan.requests, [format!("rtnetlink RTM_SETLINK {} down", ns.veth)]);
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    let prior = serde_json::json!({ "before": { "admin": "up" }, "after": { "admin": "down" }, "oper": "up" });
    assert_eq!(applied.prior.as_ref().map(|p| p.as_json().clone()), Some(prior));
    assert_eq!(in_effect, Verification::InEffect);
    let shown = ns.show();
    assert!(!shown.contains(",UP") && shown.contains("state DOWN"), "{shown}");

    let veth = ns.veth.clone();
    let undo_applied = applied.clone();
    let (undo_plan, undone, after) = ns.run(move || async move {
        let link = LinkConfig { node: Some("gpu-07".into()), ..Default::default() }.build("link").unwrap();
        let action = isolate(&veth);
        let undo_plan = link.dry_run_undo(&action, &undo_applied).await.unwrap();
        let undone = link.undo(&action, &undo_applied).await.unwrap();
        let after = link.verify(&action, Some(&undo_applied)).await.unwrap();
        (undo_plan, undone, after)
    });
    assert_eq!(undo_plan.requests, [format!("rtnetlink RTM_SETLINK {} up", ns.veth)]);
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    assert_eq!(after, Verification::NotInEffect);
    assert!(ns.show().contains(",UP"), "{}", ns.show());

    // A link that is gone is not ours to bring back.
    ip(&["-n", &ns.name, "link", "del", &ns.veth]);
    let veth = ns.veth.clone();
    let gone = ns.run(move || async move {
        let link = LinkConfig { node: Some("gpu-07".into()), ..Default::default() }.build("link").unwrap();
        link.verify(&isolate(&veth), None).await.unwrap()
    });
    assert_eq!(gone, Verification::Changed(format!("link {} no longer exists", ns.veth)));
}
