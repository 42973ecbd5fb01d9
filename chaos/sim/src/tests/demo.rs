//! The checked-in demo recording, read the way a replay reads it: through
//! `engine::recording::Reader`.

use std::collections::{BTreeMap, BTreeSet};

use engine::recording::{Event, Reader};
use engine::{CounterSpec, Labels, Nanos, Note, SampleKind, SeriesSpec, Value, SECOND};
use sim::demo::{DemoFault, FAULTS, FLAPS, LINK_FLAP, PFC_STORM, START, SYMBOL_BURST};
use sim::DEMO_RECORDING;

struct Demo {
    series: BTreeMap<u32, SeriesSpec>,
    samples: Vec<(u32, Nanos, u64)>,
    notes: Vec<Note>,
    /// Times in order of appearance, samples and notes alike.
    times: Vec<Nanos>,
}

fn read() -> Demo {
    let mut reader = Reader::new(DEMO_RECORDING, "demo.jsonl");
    let mut demo = Demo { series: BTreeMap::new(), samples: Vec::new(), notes: Vec::new(), times: Vec::new() };
    while let Some(event) = reader.next_event().unwrap() {
        match event {
            Event::Series(id, spec) => {
                assert!(demo.series.insert(id, spec).is_none(), "series {id} declared twice");
            }
            Event::Sample { id, t, value } => {
                assert!(demo.series.contains_key(&id), "series {id} used before it is declared");
                let Value::Count(v) = value else { panic!("series {id} is a counter, got {value:?}") };
                demo.samples.push((id, t, v));
                demo.times.push(t);
            }
            Event::Note(note) => {
                demo.times.push(note.ts);
                demo.notes.push(note);
            }
        }
    }
    demo
}

impl Demo {
    fn id(&self, metric: &str, fault: &DemoFault) -> u32 {
        let found: Vec<u32> = self
            .series
            .iter()
            .filter(|(_, s)| s.metric == metric && s.labels.get("node") == Some(fault.node))
            .filter(|(_, s)| s.labels.get("netdev") == Some(fault.netdev))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(found.len(), 1, "{metric} of {} {}", fault.node, fault.netdev);
        found[0]
    }

    /// The value of series `id` at `offset` from the start.
    fn at(&self, id: u32, offset: Nanos) -> u64 {
        let t = START + offset;
        self.samples.iter().rev().find(|(s, at, _)| *s == id && *at == t).map(|(_, _, v)| *v).unwrap()
    }

    fn samples_of(&self, id: u32) -> Vec<(Nanos, u64)> {
        self.samples.iter().filter(|(s, _, _)| *s == id).map(|(_, t, v)| (t - START, *v)).collect()
    }
}

#[test]
fn timestamps_never_go_back_and_span_the_recording() {
    let demo = read();
    assert!(demo.times.windows(2).all(|w| w[0] <= w[1]), "timestamps go back");
    assert_eq!(demo.times.first(), Some(&START));
    assert_eq!(demo.times.last(), Some(&(START + 25 * SECOND)));
}

#[test]
fn the_series_cover_every_nic_with_the_documented_kinds() {
    let demo = read();
    let mut by_metric: BTreeMap<&str, BTreeSet<(String, String)>> = BTreeMap::new();
    for spec in demo.series.values() {
        let kind = match spec.metric.as_str() {
            "link_carrier_down_count" => CounterSpec::U32_WRAP,
            _ => CounterSpec::U64,
        };
        assert_eq!(spec.kind, SampleKind::Counter(kind), "{}", spec.metric);
        let node = spec.labels.get("node").unwrap().to_string();
        let netdev = spec.labels.get("netdev").unwrap().to_string();
        by_metric.entry(&spec.metric).or_default().insert((node, netdev));
    }
    assert_eq!(
        by_metric.keys().copied().collect::<Vec<_>>(),
        [
            "ethtool_rx_bits_phy",
            "ethtool_rx_corrected_bits_phy",
            "ethtool_rx_pcs_symbol_err_phy",
            "ethtool_tx_prio_pause_duration_us",
            "link_carrier_down_count"
        ]
    );
    assert!(by_metric.values().all(|nics| nics.len() == 32));
    assert!(demo
        .series
        .values()
        .filter(|s| s.metric == "ethtool_tx_prio_pause_duration_us")
        .all(|s| s.labels.get("prio") == Some("3")));
}

#[test]
fn each_fault_has_a_fault_note_and_a_recovery_note() {
    let demo = read();
    for fault in FAULTS {
        let labels = Labels::from_pairs([("node", fault.node), ("netdev", fault.netdev)]);
        let find = |kind: &str, offset: Nanos| {
            demo.notes.iter().find(|n| n.kind == kind && n.ts == START + offset && n.labels == labels)
        };
        let start = find("fault", fault.start).unwrap_or_else(|| panic!("no fault note for {}", fault.name));
        assert_eq!(start.text, fault.text);
        assert!(find("recovery", fault.end).is_some(), "no recovery note for {}", fault.name);
    }
    assert_eq!(demo.notes.len(), 6);
    assert!(demo.notes[0].text.starts_with("PFC storm: node-02 eth3 pauses its switch port on priority 3"));
}

#[test]
fn the_storm_nic_pauses_its_port_about_a_million_microseconds_per_second() {
    let demo = read();
    let storm = demo.id("ethtool_tx_prio_pause_duration_us", &PFC_STORM);
    let rate = (demo.at(storm, PFC_STORM.end) - demo.at(storm, PFC_STORM.start)) as f64
        / ((PFC_STORM.end - PFC_STORM.start) / SECOND) as f64;
    assert!((950_000.0..=1_000_000.0).contains(&rate), "storm rate {rate} µs/s");
    // Before and after, it is as quiet as a healthy NIC.
    let before = demo.at(storm, PFC_STORM.start) - demo.at(storm, 0);
    assert!(before <= 30 * 300, "{before} µs paused in the first 3 s");
    let after = demo.at(storm, 25 * SECOND) - demo.at(storm, PFC_STORM.end);
    assert!(after <= 160 * 300, "{after} µs paused after the storm");
    // A healthy NIC on the same switch never comes close.
    let healthy = demo.id("ethtool_tx_prio_pause_duration_us", &DemoFault { node: "node-01", ..PFC_STORM });
    assert!(demo.at(healthy, 25 * SECOND) - demo.at(healthy, 0) <= 250 * 300);
}

#[test]
fn the_flapping_link_counts_five_carrier_losses_as_they_happen() {
    let demo = read();
    let flaps = demo.id("link_carrier_down_count", &LINK_FLAP);
    let samples = demo.samples_of(flaps);
    let base = samples[0].1;
    for (i, flap) in FLAPS.iter().enumerate() {
        assert_eq!(demo.at(flaps, *flap), base + i as u64 + 1, "after the flap at {flap} ns");
    }
    assert_eq!(samples.last().unwrap().1, base + 5);
    // 26 one-second samples, plus the two flaps between whole seconds.
    assert_eq!(samples.len(), 28);
    let quiet = demo.id("link_carrier_down_count", &DemoFault { netdev: "eth5", ..LINK_FLAP });
    let quiet = demo.samples_of(quiet);
    assert!(quiet.iter().all(|(_, v)| *v == quiet[0].1));
}

#[test]
fn the_burst_nic_sees_symbol_errors_and_a_high_pre_fec_ber() {
    let demo = read();
    let delta = |metric: &str, fault: &DemoFault, from: Nanos, to: Nanos| {
        let id = demo.id(metric, fault);
        demo.at(id, to) - demo.at(id, from)
    };
    let (start, end) = (SYMBOL_BURST.start, SYMBOL_BURST.end);
    let symbols = delta("ethtool_rx_pcs_symbol_err_phy", &SYMBOL_BURST, start, end);
    assert!((8 * 180..=8 * 220).contains(&symbols), "{symbols} symbol errors in 8 s");
    assert_eq!(delta("ethtool_rx_pcs_symbol_err_phy", &SYMBOL_BURST, 0, start), 0);
    let ber = delta("ethtool_rx_corrected_bits_phy", &SYMBOL_BURST, start, end) as f64
        / delta("ethtool_rx_bits_phy", &SYMBOL_BURST, start, end) as f64;
    assert!((4.5e-5..5.5e-5).contains(&ber), "burst BER {ber}");
    let healthy = DemoFault { node: "node-01", ..SYMBOL_BURST };
    let bits = delta("ethtool_rx_bits_phy", &healthy, 0, 25 * SECOND);
    assert!((9.5e12..10.5e12).contains(&(bits as f64)), "{bits} bits in 25 s");
    let ber = delta("ethtool_rx_corrected_bits_phy", &healthy, 0, 25 * SECOND) as f64 / bits as f64;
    assert!(ber < 1e-11, "healthy BER {ber}");
}
