//! The switch actuators (`pfcwd`, `ecn`, `rail` switch side) against the
//! simulated SONiC switch over gNMI: execute, verify by reading back, undo
//! restores the exact previous values; an unreachable switch fails with the
//! reason and is retried, with nothing recorded as applied; invalid values
//! are refused before anything is sent; every dry run is exactly what
//! execute sends.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actuators::{EcnConfig, PfcwdConfig, RailConfig};
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher, Mode, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::policy::{BreakerConfig, Limits, PolicySettings, RetryConfig, TargetLimits, UndoConfig};
use engine::{Action, Actuator, ActuatorError, Labels, Proposal, Severity, Store, Verification};
use sim::switch::{spawn, Model, Options, RunningSwitch};

async fn switch(name: &str) -> RunningSwitch {
    let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
    spawn(name, addr, Model::new(4), Options::default()).await.unwrap()
}

fn gnmi(name: &str, addr: &str) -> String {
    format!("[gnmi]\nswitches = {{ {name} = \"{addr}\" }}\ntimeout = \"2s\"\n")
}

fn action(kind: &str, target: &[(&str, &str)], params: &[(&str, &str)]) -> Action {
    Action {
        kind: kind.into(),
        target: Labels::from_pairs(target.iter().copied()),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }
}

/// A loopback address nothing listens on.
fn closed_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr.to_string()
}

/// Runs `actuator` through dry run, execute, verify, undo, verify; checks each
/// plan against what was sent, and returns the applied outcome.
async fn round_trip(actuator: &dyn Actuator, action: &Action) -> engine::Outcome {
    assert_ne!(actuator.verify(action, None).await.unwrap(), Verification::InEffect, "in effect before execute");
    let plan = actuator.dry_run(action).await.unwrap();
    let applied = actuator.execute(action).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(actuator.verify(action, Some(&applied)).await.unwrap(), Verification::InEffect);
    let undo_plan = actuator.dry_run_undo(action, &applied).await.unwrap();
    let undone = actuator.undo(action, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    assert_eq!(actuator.verify(action, Some(&applied)).await.unwrap(), Verification::NotInEffect);
    applied
}

#[tokio::test]
async fn pfcwd_escalates_alert_to_drop_reads_it_back_and_restores_the_exact_values() {
    let sw = switch("leaf-rail3").await;
    // This port's watchdog only alerts, and has no restoration_time field.
    sw.model.set_config("PFC_WD", "Ethernet4", [("action", "alert")]).unwrap();
    sw.model.delete_config_fields("PFC_WD", "Ethernet4", &["restoration_time"]).unwrap();
    let before = sw.model.config_entry("PFC_WD", "Ethernet4").unwrap();
    let config = format!(
        "{}[levels.1]\naction = \"drop\"\n[levels.2]\naction = \"drop\"\ndetection_time = 100\nrestoration_time = 2000\n",
        gnmi("leaf-rail3", &sw.addr.to_string())
    );
    let pfcwd = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap();
    let escalate =
        action("pfcwd.escalate", &[("switch", "leaf-rail3"), ("port", "Ethernet4"), ("queue", "3")], &[("level", "2")]);

    let plan = pfcwd.dry_run(&escalate).await.unwrap();
    let path = "sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4";
    assert_eq!(
        plan.requests,
        [format!(
            "gNMI Set to leaf-rail3 ({0}): delete {path}; then gNMI Set to leaf-rail3 ({0}): update {path} = \
             {{\"action\":\"drop\",\"detection_time\":\"100\",\"restoration_time\":\"2000\"}}",
            sw.addr
        )],
        "replaced as `pfcwd start` does: deleted, then written whole"
    );
    assert_eq!(sw.model.config_entry("PFC_WD", "Ethernet4").unwrap(), before, "a dry run changes nothing");

    let applied = pfcwd.execute(&escalate).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    let now = sw.model.config_entry("PFC_WD", "Ethernet4").unwrap();
    assert_eq!(now["action"], "drop");
    assert_eq!(now["detection_time"], "100");
    assert_eq!(now["restoration_time"], "2000");
    assert_eq!(pfcwd.verify(&escalate, Some(&applied)).await.unwrap(), Verification::InEffect);
    assert_eq!(pfcwd.verify(&escalate, None).await.unwrap(), Verification::InEffect);

    let undo_plan = pfcwd.dry_run_undo(&escalate, &applied).await.unwrap();
    assert_eq!(
        undo_plan.requests,
        [format!(
            "gNMI Set to leaf-rail3 ({0}): delete {path}; then gNMI Set to leaf-rail3 ({0}): update {path} = \
             {{\"action\":\"alert\",\"detection_time\":\"200\"}}",
            sw.addr
        )],
        "the entry found, written back whole (it had no restoration_time)"
    );
    let undone = pfcwd.undo(&escalate, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests);
    assert_eq!(sw.model.config_entry("PFC_WD", "Ethernet4").unwrap(), before, "undo restores the exact values");
    assert_eq!(pfcwd.verify(&escalate, Some(&applied)).await.unwrap(), Verification::NotInEffect);

    // Someone else retunes it: theirs.
    let applied = pfcwd.execute(&escalate).await.unwrap();
    sw.model.set_config("PFC_WD", "Ethernet4", [("detection_time", "400")]).unwrap();
    assert!(matches!(pfcwd.verify(&escalate, Some(&applied)).await.unwrap(), Verification::Changed(_)));
    sw.stop().await.unwrap();
}

/// Every queue binding of the switch: `Ethernet0|3` → profile.
fn bindings(model: &Model) -> BTreeMap<String, String> {
    let queues = model.config().get("QUEUE").cloned().unwrap_or_default();
    queues.into_iter().filter_map(|(key, entry)| Some((key, entry.get("wred_profile")?.clone()))).collect()
}

/// Every queue is bound to AZURE_LOSSLESS, the only WRED profile (`why`).
fn only_the_shared_profile(model: &Model, why: &str) {
    assert!(bindings(model).values().all(|p| p == "AZURE_LOSSLESS"), "{why}");
    assert_eq!(model.config()["WRED_PROFILE"].len(), 1, "{why}");
}

fn green(model: &Model, profile: &str) -> (String, String) {
    let entry = model.config_entry("WRED_PROFILE", profile).unwrap_or_default();
    let get = |f: &str| entry.get(f).cloned().unwrap_or_default();
    (get("green_min_threshold"), get("green_max_threshold"))
}

/// The copy and the queue binding of `Ethernet12` queue 3, as gNMI paths.
const COPY: &str = "sonic-db:/CONFIG_DB/localhost/WRED_PROFILE/ROCEMEND_Ethernet12_3";
const QUEUE: &str = "sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet12|3";

#[tokio::test]
async fn ecn_lowers_one_queue_through_its_own_copy_and_undo_rebinds_the_original() {
    let sw = switch("leaf-rail1").await;
    let azure = sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap();
    let shared = bindings(&sw.model);
    assert_eq!(shared.len(), 8, "queues 3 and 4 of four ports");
    assert!(shared.values().all(|p| p == "AZURE_LOSSLESS"));
    let config = format!("floor = 262144\n{}", gnmi("leaf-rail1", &sw.addr.to_string()));
    let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
    let lower =
        action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet12"), ("queue", "3")], &[("factor", "0.5")]);

    let applied = round_trip(&ecn, &lower).await;
    assert_eq!(
        applied.requests,
        [format!(
            "gNMI Set to leaf-rail1 ({}): update {COPY} = {{\"ecn\":\"ecn_all\",\"green_drop_probability\":\"5\",\
             \"green_max_threshold\":\"1048576\",\"green_min_threshold\":\"524288\",\"wred_green_enable\":\"true\"}}, \
             update {QUEUE}/wred_profile = \"ROCEMEND_Ethernet12_3\"",
            sw.addr
        )],
        "one Set: the copy (a new entry, written whole), then the binding"
    );
    let prior = applied.prior.as_ref().unwrap().as_json();
    assert_eq!(
        (prior["before"]["wred_profile"].as_str(), prior["copy_existed"].as_bool()),
        (Some("AZURE_LOSSLESS"), Some(false))
    );
    // round_trip undid it: the binding is back and the copy gone.
    assert_eq!(bindings(&sw.model), shared);
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "ROCEMEND_Ethernet12_3"), None, "undo deletes the copy");

    let applied = ecn.execute(&lower).await.unwrap();
    only_ethernet12_queue3_changed(&sw.model, &azure);
    lowered_again_to_the_floor_and_undone_newest_first(&sw, &ecn, &lower, &applied, &shared).await;
    a_rebinding_by_hand_is_theirs(&sw.model, &ecn, &lower).await;
    sw.stop().await.unwrap();
}

/// Read on the switch after one lowering of `Ethernet12` queue 3: only
/// that queue changed.
fn only_ethernet12_queue3_changed(model: &Model, azure: &BTreeMap<String, String>) {
    for (key, profile) in &bindings(model) {
        let want = if key == "Ethernet12|3" { "ROCEMEND_Ethernet12_3" } else { "AZURE_LOSSLESS" };
        assert_eq!(profile, want, "{key}");
    }
    assert_eq!(
        model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap(),
        *azure,
        "the shared profile is untouched"
    );
    let mut copy_entry = azure.clone();
    copy_entry.insert("green_min_threshold".into(), "524288".into());
    copy_entry.insert("green_max_threshold".into(), "1048576".into());
    assert_eq!(model.config_entry("WRED_PROFILE", "ROCEMEND_Ethernet12_3").unwrap(), copy_entry);
    // What the fabric's physics reads: only Ethernet12 queue 3 marks earlier.
    let config = model.config();
    let kmin = |port: &str, queue: usize| sim::switch::config::queue_green_min(&config, port, queue);
    assert_eq!(kmin("Ethernet12", 3), Some(524288.0));
    assert_eq!(kmin("Ethernet12", 4), Some(1048576.0));
    assert_eq!(kmin("Ethernet8", 3), Some(1048576.0));
}

/// A second lowering of the same queue (`applied` the first) lowers its
/// copy again, and only that, down to the floor; undone newest first, the
/// queue is bound to the `shared` profile again and the copy deleted.
async fn lowered_again_to_the_floor_and_undone_newest_first(
    sw: &RunningSwitch,
    ecn: &actuators::EcnActuator,
    lower: &Action,
    applied: &engine::Outcome,
    shared: &BTreeMap<String, String>,
) {
    let second = ecn.execute(lower).await.unwrap();
    assert_eq!(
        second.requests,
        [format!(
            "gNMI Set to leaf-rail1 ({}): update {COPY}/green_max_threshold = \"524288\", \
             update {COPY}/green_min_threshold = \"262144\"",
            sw.addr
        )]
    );
    assert_eq!(green(&sw.model, "ROCEMEND_Ethernet12_3"), ("262144".into(), "524288".into()));
    assert_eq!(ecn.verify(lower, Some(&second)).await.unwrap(), Verification::InEffect);
    // The first lowering is no longer as it left it: not ours to undo.
    assert!(matches!(ecn.verify(lower, Some(applied)).await.unwrap(), Verification::Changed(_)));
    let third = ecn.execute(lower).await.unwrap();
    assert_eq!(green(&sw.model, "ROCEMEND_Ethernet12_3"), ("262144".into(), "262144".into()));
    let err = ecn.execute(lower).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("already at the floor")), "{err:?}");
    // Undone newest first: the copy's thresholds, then the binding and the copy.
    let undone = ecn.undo(lower, &third).await.unwrap();
    assert_eq!(undone.requests, ecn.dry_run_undo(lower, &third).await.unwrap().requests);
    ecn.undo(lower, &second).await.unwrap();
    assert_eq!(ecn.verify(lower, Some(applied)).await.unwrap(), Verification::InEffect);
    let undone = ecn.undo(lower, applied).await.unwrap();
    assert_eq!(
        undone.requests,
        [format!(
            "gNMI Set to leaf-rail1 ({}): delete {COPY}, update {QUEUE}/wred_profile = \"AZURE_LOSSLESS\"",
            sw.addr
        )]
    );
    assert_eq!(bindings(&sw.model), *shared);
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "ROCEMEND_Ethernet12_3"), None);
    assert_eq!(ecn.verify(lower, Some(applied)).await.unwrap(), Verification::NotInEffect);
}

/// Someone re-binds the queue by hand while it is lowered: theirs, not undone.
async fn a_rebinding_by_hand_is_theirs(model: &Model, ecn: &actuators::EcnActuator, lower: &Action) {
    let applied = ecn.execute(lower).await.unwrap();
    model.set_config("QUEUE", "Ethernet12|3", [("wred_profile", "AZURE_LOSSLESS")]).unwrap();
    let found = ecn.verify(lower, Some(&applied)).await.unwrap();
    assert!(
        matches!(&found, Verification::Changed(m) if m.contains("bound to AZURE_LOSSLESS") && m.contains("ROCEMEND_Ethernet12_3 holds")),
        "{found:?}"
    );
}

#[tokio::test]
async fn ecn_queue_lowering_works_in_the_sonic_db_origin_style_and_defaults_to_queue_3() {
    let sw = switch("leaf-rail1").await;
    let config = format!("{}path_style = \"sonic-db-origin\"\n", gnmi("leaf-rail1", &sw.addr.to_string()));
    let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
    let lower = action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet4")], &[("drop_probability", "10")]);
    let applied = round_trip(&ecn, &lower).await;
    assert!(
        applied.requests[0]
            .contains("update sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet4|3/wred_profile = \"ROCEMEND_Ethernet4_3\""),
        "{:?}",
        applied.requests
    );
    assert!(applied.requests[0].contains("ROCEMEND_Ethernet4_3 = {"), "the copy written whole: {:?}", applied.requests);
    assert!(applied.requests[0].contains("\"green_drop_probability\":\"10\""), "{:?}", applied.requests);
    assert!(bindings(&sw.model).values().all(|p| p == "AZURE_LOSSLESS"), "undone");

    // The settings change to lowers = "profile" while it is lowered: what was
    // applied decides how it is verified and undone.
    let applied = ecn.execute(&lower).await.unwrap();
    let profile_config = format!("lowers = \"profile\"\n{config}");
    let now = toml::from_str::<EcnConfig>(&profile_config).unwrap().build("ecn").unwrap();
    assert_eq!(now.verify(&lower, Some(&applied)).await.unwrap(), Verification::InEffect);
    now.undo(&lower, &applied).await.unwrap();
    assert!(bindings(&sw.model).values().all(|p| p == "AZURE_LOSSLESS"));
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "ROCEMEND_Ethernet4_3"), None);
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn ecn_refuses_a_queue_without_a_profile_and_a_queue_scope_profile_parameter() {
    let sw = switch("leaf-rail1").await;
    let ecn = toml::from_str::<EcnConfig>(&gnmi("leaf-rail1", &sw.addr.to_string())).unwrap().build("ecn").unwrap();
    let lossy = action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet4"), ("queue", "0")], &[]);
    let err = ecn.execute(&lossy).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Invalid(m) if m.contains("QUEUE|Ethernet4|0 does not exist on leaf-rail1")),
        "{err:?}"
    );
    // A switch whose QoS was never configured: its missing table is said as such.
    let queues = sw.model.config().remove("QUEUE").unwrap();
    for key in queues.keys() {
        sw.model.delete_config("QUEUE", key).unwrap();
    }
    let lossless = action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet4"), ("queue", "3")], &[]);
    let err = ecn.execute(&lossless).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Invalid(m) if m.contains("leaf-rail1 has no QUEUE table in CONFIG_DB")),
        "{err:?}"
    );
    for (key, entry) in queues {
        sw.model.set_config("QUEUE", &key, entry).unwrap();
    }
    let named =
        action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet4")], &[("profile", "AZURE_LOSSLESS")]);
    assert!(
        matches!(ecn.execute(&named).await.unwrap_err(), ActuatorError::Invalid(m) if m.contains("lowers = \"profile\""))
    );
    // A port the switch does not have: the switch's answer, not retried.
    let missing = action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet400")], &[]);
    let err = ecn.execute(&missing).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(_)), "{err:?}");
    only_the_shared_profile(&sw.model, "no copy was made");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn ecn_profile_scope_lowers_the_shared_profile_for_every_queue_and_undo_restores_it() {
    let sw = switch("leaf-rail1").await;
    let before = sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap();
    let config = format!("lowers = \"profile\"\nfloor = 262144\n{}", gnmi("leaf-rail1", &sw.addr.to_string()));
    let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
    let lower = action(
        "ecn.lower",
        &[("switch", "leaf-rail1"), ("port", "*")],
        &[("factor", "0.25"), ("drop_probability", "10")],
    );
    let applied = round_trip(&ecn, &lower).await;
    let path = "sonic-db:/CONFIG_DB/localhost/WRED_PROFILE/AZURE_LOSSLESS";
    assert_eq!(
        applied.requests,
        [format!(
            "gNMI Set to leaf-rail1 ({}): update {path}/green_drop_probability = \"10\", \
             update {path}/green_max_threshold = \"524288\", update {path}/green_min_threshold = \"262144\"",
            sw.addr
        )]
    );
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap(), before, "restored exactly");

    // Applied again and read on the switch: the floor held min, max went to a
    // quarter, and every lossless queue of every port marks at the new threshold.
    let applied = ecn.execute(&lower).await.unwrap();
    let now = sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap();
    assert_eq!((now["green_min_threshold"].as_str(), now["green_max_threshold"].as_str()), ("262144", "524288"));
    assert_eq!(now["ecn"], "ecn_all");
    {
        let config = sw.model.config();
        for port in ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"] {
            for queue in [3, 4] {
                let kmin = sim::switch::config::queue_green_min(&config, port, queue);
                assert_eq!(kmin, Some(262144.0), "{port} queue {queue}");
            }
        }
    }
    // Undone by an actuator since set to lowers = "queue": the prior decides.
    let queue_config = format!("floor = 262144\n{}", gnmi("leaf-rail1", &sw.addr.to_string()));
    let now = toml::from_str::<EcnConfig>(&queue_config).unwrap().build("ecn").unwrap();
    assert_eq!(now.verify(&lower, Some(&applied)).await.unwrap(), Verification::InEffect);
    now.undo(&lower, &applied).await.unwrap();
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap(), before);

    // A profile-scope lowering may not name one port: its blast radius is the switch.
    let one_port = action("ecn.lower", &[("switch", "leaf-rail1"), ("port", "Ethernet4")], &[]);
    let err = ecn.execute(&one_port).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("port = \"*\"")), "{err:?}");
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap(), before);
    sw.stop().await.unwrap();
}

fn ecn_dispatcher(ecn: Arc<dyn Actuator>) -> Dispatcher {
    let policy = PolicySettings::new(
        &Limits::default(),
        &BreakerConfig { trip_after: 5, window: std::time::Duration::from_secs(600) },
        &TargetLimits::default(),
        &[],
        &UndoConfig { on_resolve: vec!["ecn.lower".into()] },
        &RetryConfig { attempts: 1, backoff: std::time::Duration::from_millis(10) },
    )
    .unwrap();
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "ecn.*".into(), actuator: ecn, destructive: true }],
            timeout: Duration::from_secs(5),
            policy,
            topology: None,
        },
        // Undo restores what the ledger recorded as changed.
        Some(Ledger::open(&Store::temporary().unwrap(), Retention::default()).unwrap()),
    )
}

#[tokio::test]
async fn four_congested_ports_each_get_their_own_copy_and_the_shared_profile_is_never_lowered() {
    // The chaos congestion scenario's failure: four proposals for four ports
    // each halved the one shared profile, down to the floor.
    let sw = switch("leaf-rail5").await;
    let azure = sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap();
    let ecn = toml::from_str::<EcnConfig>(&gnmi("leaf-rail5", &sw.addr.to_string())).unwrap().build("ecn").unwrap();
    let mut dispatcher = ecn_dispatcher(Arc::new(ecn));
    let ports = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"];
    for (i, port) in ports.iter().enumerate() {
        let lower =
            action("ecn.lower", &[("switch", "leaf-rail5"), ("port", port), ("queue", "3")], &[("factor", "0.5")]);
        let decision = dispatcher.dispatch(Proposal { id: format!("p-{i}"), ..proposal(lower) }).await;
        assert!(matches!(decision.verdict, Verdict::Executed { .. }), "{port}: {decision:?}");
    }
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap(), azure);
    for port in ports {
        assert_eq!(bindings(&sw.model)[&format!("{port}|3")], format!("ROCEMEND_{port}_3"));
        assert_eq!(bindings(&sw.model)[&format!("{port}|4")], "AZURE_LOSSLESS", "queue 4 untouched");
        assert_eq!(green(&sw.model, &format!("ROCEMEND_{port}_3")), ("524288".into(), "1048576".into()), "halved once");
    }
    // The incidents resolve: each queue gets its profile back, every copy is gone.
    for port in ports {
        let subject = Labels::from_pairs([("switch", "leaf-rail5"), ("port", port), ("queue", "3")]);
        // The action judged effective as its rule resolved, then its undo.
        let resolved = dispatcher.instance_resolved("pfc-storm", &subject, 2).await;
        let undone: Vec<_> = resolved.into_iter().filter(|d| d.undo_of.is_some()).collect();
        assert!(
            matches!(undone.as_slice(), [d] if matches!(d.verdict, Verdict::Executed { .. })),
            "{port}: {undone:?}"
        );
    }
    only_the_shared_profile(&sw.model, "only AZURE_LOSSLESS is left");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn profile_scope_proposals_from_several_ports_lower_the_profile_once() {
    // With lowers = "profile" the target is the switch (port = "*"): the
    // second proposal is the same action on the same target, a duplicate.
    let sw = switch("leaf-rail5").await;
    let config = format!("lowers = \"profile\"\n{}", gnmi("leaf-rail5", &sw.addr.to_string()));
    let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
    let mut dispatcher = ecn_dispatcher(Arc::new(ecn));
    let lower = action("ecn.lower", &[("switch", "leaf-rail5"), ("port", "*")], &[("factor", "0.5")]);
    let first = dispatcher.dispatch(Proposal { id: "p-0".into(), ..proposal(lower.clone()) }).await;
    assert!(matches!(first.verdict, Verdict::Executed { .. }), "{first:?}");
    let second = dispatcher.dispatch(Proposal { id: "p-1".into(), ..proposal(lower) }).await;
    assert!(matches!(second.verdict, Verdict::Duplicate { .. }), "{second:?}");
    assert_eq!(green(&sw.model, "AZURE_LOSSLESS"), ("524288".into(), "1048576".into()), "halved once");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn rail_switch_side_takes_the_port_admin_down_and_back_up() {
    let sw = switch("leaf-rail1").await;
    let rail = toml::from_str::<RailConfig>(&gnmi("leaf-rail1", &sw.addr.to_string())).unwrap().build("rail").unwrap();
    let drain = action(
        "rail.drain",
        &[
            ("node", "node-04"),
            ("rail", "1"),
            ("plane", "0"),
            ("netdev", "eth1"),
            ("rdma_dev", "mlx5_1"),
            ("switch", "leaf-rail1"),
            ("port", "Ethernet12"),
        ],
        &[],
    );
    let oper = |m: &Model| m.read().port("Ethernet12").unwrap().oper_up;
    assert!(oper(&sw.model));
    let plan = rail.dry_run(&drain).await.unwrap();
    assert_eq!(
        plan.requests,
        [format!(
            "gNMI Set to leaf-rail1 ({}): update sonic-db:/CONFIG_DB/localhost/PORT/Ethernet12/admin_status = \"down\"",
            sw.addr
        )]
    );
    let applied = rail.execute(&drain).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(sw.model.config_entry("PORT", "Ethernet12").unwrap()["admin_status"], "down");
    assert!(!oper(&sw.model), "admin-down takes the port down");
    assert_eq!(rail.verify(&drain, Some(&applied)).await.unwrap(), Verification::InEffect);
    let undone = rail.undo(&drain, &applied).await.unwrap();
    assert_eq!(undone.requests, rail.dry_run_undo(&drain, &applied).await.unwrap().requests);
    assert_eq!(sw.model.config_entry("PORT", "Ethernet12").unwrap()["admin_status"], "up");
    assert!(oper(&sw.model), "admin-up brings a live link back");
    assert_eq!(rail.verify(&drain, Some(&applied)).await.unwrap(), Verification::NotInEffect);

    // Without its plane, a drain is refused: the per-plane limit must apply.
    let mut no_plane = drain.clone();
    no_plane.target =
        Labels::from_pairs([("node", "node-04"), ("rail", "1"), ("switch", "leaf-rail1"), ("port", "Ethernet12")]);
    assert!(matches!(rail.execute(&no_plane).await.unwrap_err(), ActuatorError::Invalid(m) if m.contains("plane")));
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn invalid_values_are_refused_before_sending_and_by_the_switch() {
    // Nothing listens here: a value that reached the network would fail, not be invalid.
    let closed = closed_address();
    let ecn = toml::from_str::<EcnConfig>(&gnmi("leaf-rail1", &closed)).unwrap().build("ecn").unwrap();
    let target = [("switch", "leaf-rail1"), ("port", "Ethernet4")];
    for params in [[("factor", "1.5")], [("drop_probability", "101")], [("ecn", "ecn_purple")]] {
        let err = ecn.execute(&action("ecn.lower", &target, &params)).await.unwrap_err();
        assert!(matches!(err, ActuatorError::Invalid(_)), "{params:?}: {err:?}");
    }
    let pfcwd = toml::from_str::<PfcwdConfig>(&gnmi("leaf-rail1", &closed)).unwrap().build("pfcwd").unwrap();
    let err = pfcwd.execute(&action("pfcwd.escalate", &target, &[("detection_time", "99")])).await.unwrap_err();
    assert_eq!(err, ActuatorError::Invalid("detection_time 99 is out of range 100..5000 ms".into()));
    let unknown = [("switch", "spine-0"), ("port", "Ethernet4")];
    let err = pfcwd.execute(&action("pfcwd.escalate", &unknown, &[])).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("\"spine-0\" is not one")), "{err:?}");

    // A port the switch does not have (CONFIG_DB PORT, by name or alias): refused, not retried.
    let sw = switch("leaf-rail1").await;
    let pfcwd = toml::from_str::<PfcwdConfig>(&gnmi("leaf-rail1", &sw.addr.to_string())).unwrap().build("p").unwrap();
    let missing = [("switch", "leaf-rail1"), ("port", "Ethernet400")];
    let err = pfcwd.execute(&action("pfcwd.escalate", &missing, &[])).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Invalid(m) if m.contains("no port is named or aliased \"Ethernet400\"")),
        "{err:?}"
    );
    sw.stop().await.unwrap();
}

fn proposal(action: Action) -> Proposal {
    Proposal {
        id: "p-1".into(),
        rule: "pfc-storm".into(),
        rule_hash: "ab".repeat(32),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: action.target.clone(),
        action,
        jobs: Vec::new(),
        values: vec![],
        active_at: 1,
        sample_at: 1,
        decided_at: 1,
        restored: false,
    }
}

#[tokio::test]
async fn an_unreachable_switch_fails_with_the_reason_is_retried_and_nothing_is_applied() {
    let closed = closed_address();
    let pfcwd = toml::from_str::<PfcwdConfig>(&gnmi("leaf-rail3", &closed)).unwrap().build("pfcwd").unwrap();
    let escalate = action("pfcwd.escalate", &[("switch", "leaf-rail3"), ("port", "Ethernet4")], &[("level", "1")]);
    let err = pfcwd.execute(&escalate).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Failed(m) if m.contains("switch leaf-rail3") && m.contains(&closed) && m.contains("nothing was changed")),
        "{err:?}"
    );

    let policy = PolicySettings::new(
        &Limits::default(),
        &BreakerConfig { trip_after: 5, window: std::time::Duration::from_secs(600) },
        &TargetLimits::default(),
        &[],
        &UndoConfig::default(),
        &RetryConfig { attempts: 3, backoff: std::time::Duration::from_millis(10) },
    )
    .unwrap();
    let mut dispatcher = Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "pfcwd.*".into(), actuator: Arc::new(pfcwd), destructive: true }],
            timeout: Duration::from_secs(5),
            policy,
            topology: None,
        },
        None,
    );
    let decision = dispatcher.dispatch(proposal(escalate)).await;
    assert_eq!(decision.attempts, 3, "{decision:?}");
    match &decision.verdict {
        Verdict::Failed { error } => {
            assert!(error.contains("nothing was changed") && error.ends_with("(after 3 attempts)"), "{error}")
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(dispatcher.policy().in_effect().count(), 0, "nothing is recorded as applied");
}

#[tokio::test]
async fn credentials_from_their_file_are_sent_and_a_refused_login_fails() {
    let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
    let options = Options { credentials: Some(("admin".into(), "pw".into())), ..Options::default() };
    let sw = spawn("leaf-rail3", addr, Model::new(4), options).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let escalate = action("pfcwd.escalate", &[("switch", "leaf-rail3"), ("port", "Ethernet4")], &[("level", "1")]);
    for (password, works) in [("pw", true), ("wrong", false)] {
        let file = dir.path().join(format!("{password}.toml"));
        std::fs::write(&file, format!("username = \"admin\"\npassword = \"{password}\"\n")).unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let config = format!(
            "{}credentials_file = {:?}\n",
            gnmi("leaf-rail3", &sw.addr.to_string()),
            file.display().to_string()
        );
        let pfcwd = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap();
        match pfcwd.execute(&escalate).await {
            Ok(applied) if works => {
                pfcwd.undo(&escalate, &applied).await.unwrap();
            }
            Err(ActuatorError::Failed(m)) if !works => assert!(m.contains("username/password"), "{m}"),
            other => panic!("password {password:?}: {other:?}"),
        }
        // The same file readable by others is refused before any call.
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let refused = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap_err().to_string();
        assert!(refused.contains("mode 0644") && refused.contains("chmod 600"), "{refused}");
    }
    sw.stop().await.unwrap();
}
