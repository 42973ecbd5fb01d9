//! The `netlink_link` sensor against a real kernel: a veth pair in a
//! network namespace, flapped with `ip link set`. Needs root; skips with a
//! reason otherwise.

mod netlink_link_util;

use std::time::{Duration, Instant};

use engine::{rule, Batch, EngineEvent, Evaluator, Helpers, Labels, SeriesTable, Value};
use netlink_link_util::Netns;
use sensors::NetlinkLinkConfig;

/// Upper bound on how long the kernel and the sensor take to report ten
/// flaps; far above the milliseconds it takes, far below a hung test.
const WAIT: Duration = Duration::from_secs(10);

fn veth_sensor() -> Box<dyn engine::Sensor> {
    let config = NetlinkLinkConfig { include: vec!["veth*".into()], ..NetlinkLinkConfig::default() };
    Box::new(config.build("netlink_link").unwrap())
}

/// What the batches so far say about one netdev.
#[derive(Debug, Default)]
struct Seen {
    down_count: Option<u64>,
    up_count: Option<u64>,
    downs: usize,
    ups: usize,
    oper_up: Option<f64>,
}

impl Seen {
    fn add(&mut self, series: &SeriesTable, netdev: &str, batch: &Batch) {
        let reg = series.read();
        for s in &batch.samples {
            let labels = reg.labels(s.series);
            if labels.get("netdev") != Some(netdev) {
                continue;
            }
            match (reg.metric_name(s.series), labels.get("to"), s.value) {
                ("link_carrier_down_count", _, Value::Count(n)) => self.down_count = Some(n),
                ("link_carrier_up_count", _, Value::Count(n)) => self.up_count = Some(n),
                ("link_oper_up", _, v) => self.oper_up = Some(v.as_f64()),
                ("link_transition", Some("down"), _) => self.downs += 1,
                ("link_transition", Some("up"), _) => self.ups += 1,
                other => panic!("unexpected sample {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn ten_fast_flaps_are_ten_down_and_ten_up_transitions() {
    let ns = match Netns::create("flap") {
        Ok(ns) => ns,
        Err(reason) => return println!("skipped: {reason}"),
    };
    let mut running = ns.run_sensor(veth_sensor(), SeriesTable::default());

    // The initial dump: the baseline, without events.
    let mut seen = Seen::default();
    let batch = running.next(WAIT).await.expect("the initial dump");
    seen.add(&running.series, "veth0", &batch);
    let (down0, up0) = (seen.down_count.expect("veth0 in the dump"), seen.up_count.unwrap());
    assert_eq!((seen.downs, seen.ups), (0, 0), "a baseline has no events");

    for _ in 0..10 {
        ns.ip(&["link", "set", "veth0", "down"]).unwrap();
        ns.ip(&["link", "set", "veth0", "up"]).unwrap();
    }

    let deadline = Instant::now() + WAIT;
    while (seen.downs < 10 || seen.ups < 10 || seen.down_count != Some(down0 + 10)) && Instant::now() < deadline {
        if let Some(batch) = running.next(deadline - Instant::now()).await {
            seen.add(&running.series, "veth0", &batch);
        }
    }
    // Late notifications (linkwatch's operstate updates) must not add any.
    while let Some(batch) = running.next(Duration::from_millis(1500)).await {
        seen.add(&running.series, "veth0", &batch);
    }
    assert_eq!(seen.down_count, Some(down0 + 10), "{seen:?}");
    assert_eq!(seen.up_count, Some(up0 + 10), "{seen:?}");
    assert_eq!((seen.downs, seen.ups), (10, 10), "{seen:?}");
    assert_eq!(seen.oper_up, Some(1.0), "veth0 ends up: {seen:?}");
    running.finish().unwrap();
}

#[tokio::test]
async fn a_deleted_and_recreated_link_starts_from_its_own_counters() {
    let ns = match Netns::create("recreate") {
        Ok(ns) => ns,
        Err(reason) => return println!("skipped: {reason}"),
    };
    let mut running = ns.run_sensor(veth_sensor(), SeriesTable::default());
    let mut old = Seen::default();
    let batch = running.next(WAIT).await.expect("the initial dump");
    old.add(&running.series, "veth0", &batch);
    let down0 = old.down_count.expect("veth0 in the dump");
    // Push the old link's counters well above a new link's.
    for _ in 0..5 {
        ns.ip(&["link", "set", "veth0", "down"]).unwrap();
        ns.ip(&["link", "set", "veth0", "up"]).unwrap();
    }
    while let Some(batch) = running.next(Duration::from_millis(1500)).await {
        old.add(&running.series, "veth0", &batch);
    }
    assert_eq!((old.down_count, old.downs), (Some(down0 + 5), 5), "{old:?}");

    ns.ip(&["link", "del", "veth0"]).unwrap();
    ns.ip(&["link", "add", "veth0", "type", "veth", "peer", "name", "veth1"]).unwrap();
    ns.ip(&["link", "set", "veth1", "up"]).unwrap();
    ns.ip(&["link", "set", "veth0", "up"]).unwrap();
    let mut new = Seen::default();
    while let Some(batch) = running.next(Duration::from_millis(1500)).await {
        new.add(&running.series, "veth0", &batch);
    }
    // Compared with the old link's counters the new ones went backwards and
    // would read as stale; compared with its own baseline the new link came
    // up once (and lost carrier at most once, as the driver set it up).
    assert_eq!(new.ups, 1, "{new:?}");
    assert!(new.downs <= 1, "{new:?}");
    assert!(new.down_count.unwrap() < down0 + 5, "{new:?}");
    assert_eq!(new.oper_up, Some(1.0), "{new:?}");
    running.finish().unwrap();
}

#[tokio::test]
async fn the_link_flap_rule_isolates_a_flapping_veth() {
    let ns = match Netns::create("rule") {
        Ok(ns) => ns,
        Err(reason) => return println!("skipped: {reason}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let rule_file = concat!(env!("CARGO_MANIFEST_DIR"), "/../rules/link_flap.rhai");
    std::fs::copy(rule_file, dir.path().join("link_flap.rhai")).unwrap();
    let rules = rule::load_dir(dir.path(), Helpers::default()).unwrap();
    let series = SeriesTable::new(None, Labels::from_pairs([("node", "test-node")]));
    let mut evaluator = Evaluator::new(series.clone(), rules, None).unwrap();
    let mut running = ns.run_sensor(veth_sensor(), series);

    let mut events = Vec::new();
    let mut feed = |batch: Batch, events: &mut Vec<EngineEvent>| {
        evaluator.ingest(&batch.samples);
        evaluator.evaluate(engine::time::wall_clock_now(), events);
    };
    feed(running.next(WAIT).await.expect("the initial dump"), &mut events);
    let isolations = |events: &[EngineEvent]| {
        events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::Proposal(p) if p.action.kind == "link.isolate" => Some(p.action.target.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // One flap is not a flapping link.
    ns.ip(&["link", "set", "veth0", "down"]).unwrap();
    ns.ip(&["link", "set", "veth0", "up"]).unwrap();
    while let Some(batch) = running.next(Duration::from_millis(300)).await {
        feed(batch, &mut events);
    }
    assert_eq!(isolations(&events), vec![], "one flap proposes nothing");

    for _ in 0..2 {
        ns.ip(&["link", "set", "veth0", "down"]).unwrap();
        ns.ip(&["link", "set", "veth0", "up"]).unwrap();
    }
    let deadline = Instant::now() + WAIT;
    while isolations(&events).is_empty() && Instant::now() < deadline {
        if let Some(batch) = running.next(deadline - Instant::now()).await {
            feed(batch, &mut events);
        }
    }
    let targets = isolations(&events);
    assert!(
        targets.contains(&Labels::from_pairs([("node", "test-node"), ("netdev", "veth0")])),
        "expected link.isolate of veth0, got {targets:?}"
    );
    running.finish().unwrap();
}
