//! The `netlink_link` sensor against a real kernel: a veth pair in a
//! network namespace, flapped with `ip link set`, and left alone to see the
//! heartbeat keep it fresh. Needs root; skips with a reason otherwise.

use super::netlink_link_util;

use std::time::{Duration, Instant};

use engine::{rule, Batch, EngineEvent, Evaluator, Helpers, Labels, Nanos, SeriesTable, Value, SECOND};
use netlink_link_util::{Netns, Running};
use sensors::NetlinkLinkConfig;

/// Upper bound on how long the kernel and the sensor take to report ten
/// flaps; far above the milliseconds it takes, far below a hung test.
const WAIT: Duration = Duration::from_secs(10);

fn veth_sensor() -> Box<dyn engine::Sensor> {
    veth_sensor_beating("1s")
}

/// The sensor of the veths, with `heartbeat`.
fn veth_sensor_beating(heartbeat: &str) -> Box<dyn engine::Sensor> {
    let config = NetlinkLinkConfig {
        include: vec!["veth*".into()],
        heartbeat: humantime::parse_duration(heartbeat).unwrap(),
        ..NetlinkLinkConfig::default()
    };
    Box::new(config.build("netlink_link").unwrap())
}

/// The standard link-flap rule, as the daemon loads it.
fn link_flap_rules() -> engine::RuleSet {
    let dir = tempfile::tempdir().unwrap();
    let rule_file = concat!(env!("CARGO_MANIFEST_DIR"), "/../rules/link_flap.rhai");
    std::fs::copy(rule_file, dir.path().join("link_flap.rhai")).unwrap();
    rule::load_dir(dir.path(), Helpers::default()).unwrap()
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
        Err(reason) => return test_peers::missing(reason),
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
    // Late notifications (linkwatch's operstate updates) must not add any,
    // nor must the heartbeats that come meanwhile.
    for batch in running.during(Duration::from_millis(1500)).await {
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
        Err(reason) => return test_peers::missing(reason),
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
    for batch in running.during(Duration::from_millis(1500)).await {
        old.add(&running.series, "veth0", &batch);
    }
    assert_eq!((old.down_count, old.downs), (Some(down0 + 5), 5), "{old:?}");

    ns.ip(&["link", "del", "veth0"]).unwrap();
    ns.ip(&["link", "add", "veth0", "type", "veth", "peer", "name", "veth1"]).unwrap();
    ns.ip(&["link", "set", "veth1", "up"]).unwrap();
    ns.ip(&["link", "set", "veth0", "up"]).unwrap();
    let mut new = Seen::default();
    for batch in running.during(Duration::from_millis(1500)).await {
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
        Err(reason) => return test_peers::missing(reason),
    };
    let rules = link_flap_rules();
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
    for batch in running.during(Duration::from_millis(500)).await {
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

/// What one batch says about veth0, and when it was stamped; `None` when
/// it is about veth1 only (its peer's carrier follows it).
fn veth0_in(series: &SeriesTable, batch: &Batch) -> Option<(Nanos, Seen)> {
    let mut seen = Seen::default();
    seen.add(series, "veth0", batch);
    let ts = batch.samples.iter().map(|s| s.ts).max().unwrap_or_default();
    (seen.down_count.is_some() || seen.oper_up.is_some() || seen.downs + seen.ups > 0).then_some((ts, seen))
}

#[tokio::test]
async fn an_isolated_veth_is_sent_again_every_heartbeat() {
    let ns = match Netns::create("beat") {
        Ok(ns) => ns,
        Err(reason) => return test_peers::missing(reason),
    };
    let mut running = ns.run_sensor(veth_sensor_beating("200ms"), SeriesTable::default());
    let first = running.next(WAIT).await.expect("the initial dump");
    let (_, dump) = veth0_in(&running.series, &first).expect("veth0 in the dump");
    let down0 = dump.down_count.expect("veth0 in the dump");
    // Taken down as link.isolate does, then left alone: the kernel says
    // nothing more about it.
    ns.ip(&["link", "set", "veth0", "down"]).unwrap();
    let batches: Vec<(Nanos, Seen)> =
        running.during(Duration::from_millis(1500)).await.iter().filter_map(|b| veth0_in(&running.series, b)).collect();
    let downs: usize = batches.iter().map(|(_, s)| s.downs).sum();
    assert_eq!(downs, 1, "one carrier loss, not repeated by the beats: {batches:?}");
    let changed_at = batches.iter().find(|(_, s)| s.downs == 1).unwrap().0;
    let beats: Vec<&(Nanos, Seen)> =
        batches.iter().filter(|(ts, s)| *ts > changed_at && s.downs + s.ups == 0).collect();
    // Seven beats in 1.5 s; four leave room for a loaded machine.
    assert!(beats.len() >= 4, "the down link keeps being sent: {batches:?}");
    for (_, seen) in &beats {
        assert_eq!((seen.down_count, seen.oper_up), (Some(down0 + 1), Some(0.0)), "its last state: {batches:?}");
    }
    assert!(beats.windows(2).all(|w| w[0].0 < w[1].0), "each beat stamped with its own time: {batches:?}");
    running.finish().unwrap();
}

/// The link-flap rule's events while veth0 stays up and untouched for its
/// `stale_after` and two more seconds (a stale scan runs every quarter of
/// it), fed by the sensor with `heartbeat`.
async fn quiet_veth_events(tag: &str, heartbeat: &str) -> Option<Vec<EngineEvent>> {
    let ns = match Netns::create(tag) {
        Ok(ns) => ns,
        Err(reason) => {
            test_peers::missing(reason);
            return None;
        }
    };
    let rules = link_flap_rules();
    let stale_after = rules.get("link-flap").expect("the link-flap rule").stale_after;
    let series = SeriesTable::new(None, Labels::from_pairs([("node", "test-node")]));
    let mut evaluator = Evaluator::new(series.clone(), rules, None).unwrap();
    let mut running: Running = ns.run_sensor(veth_sensor_beating(heartbeat), series);
    let mut events = Vec::new();
    let until = Instant::now() + Duration::from_nanos((stale_after + 2 * SECOND) as u64);
    while Instant::now() < until {
        // Evaluated every 100 ms whether a batch came or not, as the
        // daemon's tick does: staleness is found by the clock, not by samples.
        if let Some(batch) = running.next(Duration::from_millis(100)).await {
            evaluator.ingest(&batch.samples);
        }
        evaluator.evaluate(engine::time::wall_clock_now(), &mut events);
    }
    running.finish().unwrap();
    Some(events)
}

fn stale_subjects(events: &[EngineEvent]) -> Vec<Labels> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::SensorStale { subject, .. } => Some(subject.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_quiet_veth_does_not_go_stale_five_seconds_after_its_last_change() {
    let Some(events) = quiet_veth_events("fresh", "1s").await else { return };
    assert_eq!(stale_subjects(&events), Vec::<Labels>::new(), "{events:?}");
}

#[tokio::test]
async fn without_the_heartbeat_a_quiet_veth_goes_stale() {
    // The failure the heartbeat fixes, kept reachable ("0") and pinned here,
    // so the test above is known to be able to fail.
    let Some(events) = quiet_veth_events("silent", "0").await else { return };
    let veth0 = Labels::from_pairs([("node", "test-node"), ("netdev", "veth0")]);
    assert!(stale_subjects(&events).contains(&veth0), "{events:?}");
}
