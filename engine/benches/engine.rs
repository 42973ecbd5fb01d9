//! Speed and memory of the engine's closed loop, part 1: samples in,
//! proposals out, on one core.
//!
//! - `ingest`: `Evaluator::ingest` of 10,000-sample batches into a fleet of
//!   100,000 series watched by 1,000 rules (target ≥ 2,000,000 samples/s);
//! - `cycle`: one poll of the whole fleet (100,000 samples) plus
//!   `evaluate(now)`, once per simulated second, for a quiet fabric and for
//!   one where every counter moves (`second/all-changing`), that one also
//!   with every condition on Rhai (`second/all-changing-rhai`: native
//!   predicates off, the engine before them);
//! - the cost of one condition of each standard rule, native and on Rhai;
//! - `latency`: one sample that makes a rule fire → `ingest` + `evaluate` →
//!   the `Proposal` (target p99 ≤ 50 µs), alone and inside the loaded fleet;
//! - memory: engine state and series registry per series (target ≤ 256
//!   bytes of engine state per active series), printed at start-up.
//!
//! `cargo bench -p rocemend-engine` prints the figures `docs/performance.md`
//! reports. Heap figures come from a counting global allocator; it costs
//! one relaxed atomic add per allocation, and the ingest path allocates
//! nothing. With `ROCEMEND_BENCH_MEMORY_ONLY=1` the bench stops after the
//! memory figures (about 20 s instead of minutes), for work on the layout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use engine::evaluator::STALE_SCAN_INTERVAL;
use engine::labels::{LabelSet, Sym};
use engine::series::SeriesInfo;
use engine::topology::{Inventory, Nic, Node, Switch, SwitchRole};
use engine::{
    rule, CounterSpec, EngineEvent, Evaluator, Helpers, Labels, Nanos, RuleSet, Sample, SampleKind, SeriesId,
    SeriesSpec, SeriesTable, Store, Topology, Value, MS, SECOND,
};

// Heap accounting: the counting global allocator.
#[path = "support/alloc.rs"]
mod alloc;
use alloc::live;

// The fleet's simulated seconds (`second/…`), quiet and all changing.
#[path = "engine/fleet_second.rs"]
mod fleet_second;

// One sample that fires a rule, to the proposal (`latency/…`), alone and in the fleet.
#[path = "engine/latency.rs"]
mod latency;
use latency::{bench_latency, probe_source, register_probe, Alone, Clock};

// ---------------------------------------------------------------------------
// The fleet: 1,250 nodes × 8 NICs × 10 counters = 100,000 series.

const NODES: usize = 1_250;
const NICS: usize = 8;
/// Counters per NIC port; each port carries 10 of the 100 metric names.
const PER_PORT: usize = 10;
const SERIES: usize = NODES * NICS * PER_PORT;
const METRICS: usize = 100;
/// Rules per metric name; 1,000 in all.
const RULES_PER_METRIC: usize = 10;
const RULES: usize = METRICS * RULES_PER_METRIC;
/// Samples per `ingest` call: what a sensor sends after one poll of ~125 nodes.
const BATCH: usize = 10_000;
/// Leaf switch radix: nodes per leaf on one rail.
const LEAF_PORTS: usize = 64;
const NODES_PER_RACK: usize = 16;
/// A wall-clock origin; the fleet is polled once per simulated second.
const T0: Nanos = 1_700_000_000 * SECOND;
/// Time between the batches of one poll.
const BATCH_SPREAD: Nanos = 10 * MS;
/// The daemon's evaluation tick (`engine.tick`, default 50 ms).
const TICK: Nanos = 50 * MS;

/// The metric names: the counters of `docs/signals.md`, then vendor
/// ethtool counters to make 100 names. Names with `prio` carry `prio="3"`.
fn metric_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "ethtool_rx_prio_pause",
        "ethtool_tx_prio_pause",
        "ethtool_rx_prio_pause_duration_us",
        "ethtool_tx_prio_pause_duration_us",
        "ethtool_tx_pause_storm_warning_events",
        "ethtool_tx_pause_storm_error_events",
        "ethtool_link_down_events_phy",
        "ethtool_rx_pcs_symbol_err_phy",
        "ethtool_rx_corrected_bits_phy",
        "ethtool_rx_bits_phy",
        "rdma_port_xmit_wait",
        "rdma_port_xmit_data_bytes",
        "rdma_symbol_error",
        "rdma_link_downed",
        "rdma_np_cnp_sent",
        "rdma_rp_cnp_handled",
        "rdma_np_ecn_marked_roce_packets",
        "rdma_out_of_sequence",
        "link_carrier_down_count",
        "link_carrier_up_count",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut i = 0;
    while names.len() < METRICS {
        names.push(if i % 4 == 0 {
            format!("ethtool_rx_prio_vendor_{i:02}")
        } else {
            format!("ethtool_vendor_{i:02}")
        });
        i += 1;
    }
    names
}

/// 1,250 nodes, 8 NICs each on rails 0–7 (planes 0 and 1), 20 leaves per
/// rail of 64 ports, 16 nodes per rack.
fn inventory() -> Inventory {
    let leaves = NODES.div_ceil(LEAF_PORTS);
    let mut inv = Inventory { cluster: Some("bench".into()), ..Inventory::default() };
    for rail in 0..NICS as u32 {
        for leaf in 0..leaves {
            inv.switch.push(Switch {
                rail: Some(rail),
                plane: Some(rail / 4),
                ..Switch::new(format!("leaf-r{rail}-{leaf:02}"), SwitchRole::Leaf)
            });
        }
    }
    for n in 0..NODES {
        let nic = (0..NICS as u32)
            .map(|rail| Nic {
                rdma_dev: format!("mlx5_{rail}"),
                netdev: format!("eth{rail}"),
                port: 1,
                gpu: None,
                rail,
                plane: rail / 4,
                switch: Some(format!("leaf-r{rail}-{:02}", n / LEAF_PORTS)),
                switch_port: Some(format!("Ethernet{}", 4 * (n % LEAF_PORTS))),
            })
            .collect();
        inv.node.push(Node {
            name: format!("gpu-node-{n:04}"),
            rack: Some(format!("rack-{:03}", n / NODES_PER_RACK)),
            // A pod is the nodes of one leaf per rail (a leaf's 64 ports): the topology refuses
            // two leaves of one rail and plane in a pod.
            pod: Some(format!("pod-{}", n / LEAF_PORTS)),
            zone: Some(format!("zone-{}", n % 2)),
            gpu: Vec::new(),
            nic,
        });
    }
    inv
}

/// Rule `r` reads metric `r / 10`. Of the ten rules on one metric, one
/// selects every series, two split them by plane and seven pick one rail
/// each, so a series is matched by 3 rules (2 on rail 7): 2.875 on average.
/// Thresholds are out of reach: the benchmarks measure evaluation, and the
/// latency probe measures firing.
fn rule_source(r: usize, metric: &str) -> String {
    let (selector, group_by) = match r % RULES_PER_METRIC {
        0 => (metric.to_string(), r#"["node", "netdev"]"#),
        1 => (format!(r#"{metric}{{plane="0"}}"#), r#"["switch"]"#),
        2 => (format!(r#"{metric}{{plane="1"}}"#), r#"["node"]"#),
        k => (format!(r#"{metric}{{rail="{}"}}"#, k - 3), r#"["node", "netdev"]"#),
    };
    let (windows, fire, clear) = match r % 3 {
        0 => (format!(r#"inc: increase("{metric}", "10s")"#), "w.inc > 1000000000000.0", ""),
        1 => (
            format!(r#"per_s: rate("{metric}", "1s"), peak: max_over("{metric}", "10s")"#),
            "w.per_s > 1000000000000.0 && w.peak > 1000000000000.0",
            "fn clear(w) { w.per_s < 1.0 }",
        ),
        _ => (format!(r#"peak: max_over("{metric}", "30s")"#), "w.peak > 1000000000000.0", ""),
    };
    let timing = if r % 2 == 0 { r#""for": "2s","# } else { "" };
    format!(
        r#"
fn fire(w) {{ {fire} }}
{clear}
#{{
    name: "r{r:04}",
    select: [{selector:?}],
    group_by: {group_by},
    windows: #{{ {windows} }},
    {timing}
    actions: [ #{{ action: "notify.page", target: #{{ rule: "r{r:04}" }} }} ],
}}
"#
    )
}

/// How many (rule, subject) pairs the fleet's series make: what
/// [`rule_source`] selects and groups by, recomputed from the labels.
/// Returns (routes, subjects).
fn count_subjects(series: &SeriesTable, names: &[String]) -> (usize, usize) {
    let index: std::collections::HashMap<&str, usize> =
        names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let reg = series.read();
    let mut subjects = std::collections::HashSet::new();
    let mut routes = 0;
    for i in 0..SERIES {
        let id = SeriesId(i as u32);
        let m = index[reg.metric_name(id)];
        let labels = reg.labels(id);
        let get = |k: &str| labels.get(k).unwrap_or("").to_string();
        let rail: usize = get("rail").parse().expect("every series has a rail");
        for k in 0..RULES_PER_METRIC {
            let key = match k {
                0 => format!("{}/{}", get("node"), get("netdev")),
                1 if get("plane") == "0" => get("switch"),
                2 if get("plane") == "1" => get("node"),
                k if k >= 3 && rail == k - 3 => format!("{}/{}", get("node"), get("netdev")),
                _ => continue,
            };
            routes += 1;
            subjects.insert((m * RULES_PER_METRIC + k, key));
        }
    }
    (routes, subjects.len())
}

/// How the fleet's counters move in a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Traffic {
    /// One counter in a hundred moves; the rest are flat.
    Quiet,
    /// Every counter moves, by a different amount each second.
    AllChanging,
}

struct Fleet {
    ev: Evaluator,
    /// The state directory of the evaluator's store; the daemon always runs
    /// with one (`state_dir/state.sled`).
    _state: tempfile::TempDir,
    series: SeriesTable,
    readings: Vec<u64>,
    batches: Vec<Vec<Sample>>,
    probe: SeriesId,
    /// Simulated seconds since `T0` of the last poll.
    second: i64,
    events: Vec<EngineEvent>,
}

/// A cheap, reproducible pseudo-random step for series `i` in second `t`.
fn jitter(i: usize, t: i64) -> u64 {
    let mut x = (i as u64) ^ ((t as u64) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

/// Heap in use at each step of building the fleet (see `live`), for the
/// memory report.
#[derive(Default)]
struct Heap {
    topology_bytes: isize,
    topology: isize,
    registry: isize,
    rules: isize,
    scaffold: isize,
    routed: isize,
    evaluated: isize,
    settled: isize,
}

/// How long each setup step took, and how many rules run natively.
struct Setup {
    register: std::time::Duration,
    load: std::time::Duration,
    route: std::time::Duration,
    native: usize,
}

/// Registers every counter of the fleet: [`PER_PORT`] per NIC port. The
/// heap before the first registration is `heap.topology`.
fn register_counters(series: &SeriesTable, names: &[String], heap: &mut Heap) -> Vec<SeriesId> {
    let sensor = series.add_sensor("bench", SERIES);
    let mut ids = Vec::with_capacity(SERIES);
    heap.topology = live();
    for port in 0..NODES * NICS {
        let (node, nic) = (port / NICS, port % NICS);
        for j in 0..PER_PORT {
            let metric = &names[(port % 10) * PER_PORT + j];
            let node_name = format!("gpu-node-{node:04}");
            let netdev = format!("eth{nic}");
            let mut labels = Labels::from_pairs([("node", node_name.as_str()), ("netdev", netdev.as_str())]);
            if metric.contains("prio") {
                labels.insert("prio", "3");
            }
            let spec = SeriesSpec { metric: metric.clone(), labels, kind: SampleKind::Counter(CounterSpec::U64) };
            ids.push(series.register(sensor, &spec).expect("under the cap"));
        }
    }
    ids
}

/// The bench's rules and the probe rule.
fn load_rules(names: &[String]) -> rule::RuleSet {
    let mut sources: Vec<(String, String)> =
        (0..RULES).map(|r| (format!("r{r:04}.rhai"), rule_source(r, &names[r / RULES_PER_METRIC]))).collect();
    sources.push(probe_source());
    rule::load_sources(&sources, Helpers::default()).unwrap_or_else(|e| panic!("{:?}", &e[..1]))
}

impl Fleet {
    fn build() -> Fleet {
        let mut heap = Heap::default();
        let heap_start = live();
        let topology = Arc::new(Topology::from_inventory(inventory()).expect("the bench inventory is consistent"));
        heap.topology_bytes = live() - heap_start;
        let series = SeriesTable::new(Some(topology.clone()), Labels::default());
        let names = metric_names();
        let started = Instant::now();
        let ids = register_counters(&series, &names, &mut heap);
        let register = started.elapsed();
        heap.registry = live();
        let started = Instant::now();
        let rules = load_rules(&names);
        let load = started.elapsed();
        let native = rules.rules.iter().filter(|r| r.runs_natively()).count();
        heap.rules = live();

        let probe = register_probe(&series);
        let batches: Vec<Vec<Sample>> = ids
            .chunks(BATCH)
            .map(|c| c.iter().map(|id| Sample { series: *id, ts: T0, value: Value::Count(0) }).collect())
            .collect();
        let readings = vec![0u64; SERIES];
        let state = tempfile::tempdir().expect("a state directory");
        let store = Store::open(&state.path().join("state.sled")).expect("open the store");
        heap.scaffold = live();

        let ev = Evaluator::new(series.clone(), rules, Some(store)).expect("an empty store");
        let mut fleet = Fleet { ev, _state: state, series, readings, batches, probe, second: 0, events: Vec::new() };
        let route = fleet.settle(&mut heap);
        fleet.report(&heap, &Setup { register, load, route, native }, &names);
        fleet
    }

    /// Routes every series with its first sample, evaluates, and runs two
    /// quiet seconds: the steady state. How long routing took.
    fn settle(&mut self, heap: &mut Heap) -> std::time::Duration {
        let started = Instant::now();
        for b in 0..self.batches.len() {
            self.fill(b, Traffic::Quiet);
            self.ev.ingest(&self.batches[b]);
        }
        let route = started.elapsed();
        heap.routed = live();
        self.ev.evaluate(self.batch_time(self.batches.len() - 1), &mut self.events);
        self.events.clear();
        heap.evaluated = live();
        // Two quiet seconds: routing has settled and the evaluator has
        // trimmed its vectors; this is the steady state.
        self.second(Traffic::Quiet);
        self.second(Traffic::Quiet);
        self.events.clear();
        heap.settled = live();
        route
    }

    /// Prints the fleet's shape, the setup times and the memory per series.
    fn report(&self, heap: &Heap, setup: &Setup, names: &[String]) {
        let (routes, subjects) = count_subjects(&self.series, names);
        let reg = self.series.read();
        let labels_per_series = (0..SERIES).map(|i| reg.info(SeriesId(i as u32)).labels.pairs().len()).sum::<usize>()
            as f64
            / SERIES as f64;
        let example = reg.labels(SeriesId(3));
        drop(reg);
        eprintln!();
        eprintln!(
            "== fleet: {SERIES} series, {RULES} rules (+1 probe), {NODES} nodes x {NICS} NICs x {PER_PORT} counters"
        );
        eprintln!("   example series labels ({labels_per_series:.1} per series): {example}");
        eprintln!(
            "   setup: register {:.2} s ({:.1} µs/series), load rules {:.2} s ({:.0} µs/rule), first sample of every series (routing) {:.2} s ({:.1} µs/series)",
            setup.register.as_secs_f64(),
            setup.register.as_secs_f64() * 1e6 / SERIES as f64,
            setup.load.as_secs_f64(),
            setup.load.as_secs_f64() * 1e6 / (RULES + 1) as f64,
            setup.route.as_secs_f64(),
            setup.route.as_secs_f64() * 1e6 / SERIES as f64,
        );
        eprintln!(
            "   {:.3} rules match each series; {:.3} rule subjects per series ({subjects} in all)",
            routes as f64 / SERIES as f64,
            subjects as f64 / SERIES as f64,
        );
        self.report_memory(heap, setup.native, labels_per_series);
    }

    /// The memory part of [`Fleet::report`].
    fn report_memory(&self, heap: &Heap, native: usize, labels_per_series: f64) {
        let per = |bytes: isize| bytes as f64 / SERIES as f64;
        let state = self.ev.state_bytes();
        // Registry estimate from the types: the SeriesInfo, its label pairs
        // (shared with the by_key entry), the by_key entry, at hashbrown's
        // 7/8 load factor.
        let info = std::mem::size_of::<SeriesInfo>();
        let pairs = 16.0 + 8.0 * labels_per_series;
        let by_key = (std::mem::size_of::<((Sym, LabelSet), SeriesId)>() + 1) as f64 * 8.0 / 7.0;
        eprintln!("== memory per series (target: engine state <= 256 B per active series)");
        eprintln!("   Evaluator::state_bytes() / series:             {:>7.1} B", state as f64 / SERIES as f64);
        let parts = self.ev.state_breakdown();
        eprintln!(
            "     of which per series: series {:.1}, routes {:.1}, subjects {:.1}, windows {:.1}, subject index {:.1}, instances {:.1}, dirty lists {:.1}",
            parts.series as f64 / SERIES as f64,
            parts.routes as f64 / SERIES as f64,
            parts.subjects as f64 / SERIES as f64,
            parts.windows as f64 / SERIES as f64,
            parts.subject_index as f64 / SERIES as f64,
            parts.instances as f64 / SERIES as f64,
            parts.dirty as f64 / SERIES as f64,
        );
        eprintln!(
            "   evaluator heap once routing settled / series:  {:>7.1} B (right after routing: {:.1} B; after the first evaluate: {:.1} B)",
            per(heap.settled - heap.scaffold),
            per(heap.routed - heap.scaffold),
            per(heap.evaluated - heap.scaffold),
        );
        eprintln!(
            "   SeriesTable registry heap / series:            {:>7.1} B (estimate from types: {:.1} B)",
            per(heap.registry - heap.topology),
            info as f64 + pairs + by_key,
        );
        eprintln!(
            "   compiled rules: {:.1} KiB per rule; topology: {:.1} MiB; {native} of {} rules run natively (both conditions)",
            (heap.rules - heap.registry) as f64 / 1024.0 / (RULES + 1) as f64,
            heap.topology_bytes as f64 / (1024.0 * 1024.0),
            RULES + 1,
        );
    }

    /// The time the sensors stamp batch `b` of the current second with:
    /// batches of one poll arrive 10 ms apart.
    fn batch_time(&self, b: usize) -> Nanos {
        T0 + self.second * SECOND + b as Nanos * BATCH_SPREAD
    }

    /// Fills batch `b` for the current second.
    fn fill(&mut self, b: usize, traffic: Traffic) {
        let ts = self.batch_time(b);
        let second = self.second;
        for (k, s) in self.batches[b].iter_mut().enumerate() {
            let i = b * BATCH + k;
            let step = match traffic {
                Traffic::Quiet if i % 100 == 0 => 1 + jitter(i, second) % 100,
                Traffic::Quiet => 0,
                Traffic::AllChanging => 1 + jitter(i, second) % 100_000,
            };
            self.readings[i] += step;
            s.ts = ts;
            s.value = Value::Count(self.readings[i]);
        }
    }

    /// One simulated second of the daemon's loop (`engine/src/runtime.rs`):
    /// each batch of the poll is ingested and evaluated as it arrives, and
    /// the 50 ms tick evaluates in between. Returns the time spent in
    /// `ingest` and in `evaluate`, and the last evaluation time.
    fn second(&mut self, traffic: Traffic) -> (Duration, Duration, Nanos) {
        let (ingest, mut evaluate, mut now) = self.poll(traffic);
        for tick in now / TICK + 1..(T0 + (self.second + 1) * SECOND) / TICK {
            now = tick * TICK;
            let started = Instant::now();
            self.ev.evaluate(now, &mut self.events);
            evaluate += started.elapsed();
        }
        self.check_quiet();
        (ingest, evaluate, now)
    }

    /// The poll part of [`Fleet::second`]: every batch, each followed by
    /// an evaluation.
    fn poll(&mut self, traffic: Traffic) -> (Duration, Duration, Nanos) {
        self.second += 1;
        let (mut ingest, mut evaluate) = (Duration::ZERO, Duration::ZERO);
        let mut now = 0;
        for b in 0..self.batches.len() {
            self.fill(b, traffic);
            now = self.batch_time(b);
            let started = Instant::now();
            self.ev.ingest(&self.batches[b]);
            let ingested = Instant::now();
            self.ev.evaluate(now, &mut self.events);
            ingest += ingested - started;
            evaluate += ingested.elapsed();
        }
        self.check_quiet();
        (ingest, evaluate, now)
    }

    /// Only the latency probe may change state (its resolved instance goes
    /// back to inactive); nothing in the fleet fires or goes stale.
    fn check_quiet(&mut self) {
        let fleet_event = self.events.iter().find(|e| match e {
            EngineEvent::Transition { rule, .. } => rule != "latency-probe",
            _ => true,
        });
        assert!(fleet_event.is_none(), "nothing in the fleet changes state: {fleet_event:?}");
        self.events.clear();
    }

    /// What one `evaluate` costs with nothing to evaluate, without and with
    /// the stale scan (every subject of every rule, each 250 ms).
    fn print_fixed_costs(&mut self) -> Nanos {
        let mut now = T0 + self.second * SECOND + 950 * MS;
        self.ev.evaluate(now, &mut self.events);
        const N: u32 = 1_000;
        let started = Instant::now();
        for _ in 0..N {
            now += 10_000;
            self.ev.evaluate(now, &mut self.events);
        }
        let idle = started.elapsed() / N;
        const SCANS: u32 = 3;
        let started = Instant::now();
        for _ in 0..SCANS {
            now += STALE_SCAN_INTERVAL;
            self.ev.evaluate(now, &mut self.events);
        }
        let scan = started.elapsed() / SCANS;
        self.check_quiet();
        eprintln!(
            "== evaluate with nothing to do: {:.1} µs per call ({:.1} ns per rule); with the stale scan: {:.2} ms per call",
            idle.as_secs_f64() * 1e6,
            idle.as_secs_f64() * 1e9 / (RULES + 1) as f64,
            scan.as_secs_f64() * 1e3,
        );
        now
    }
}

// ---------------------------------------------------------------------------
// The benchmarks.

fn benches(c: &mut Criterion) {
    let mut fleet = Fleet::build();
    if std::env::var_os("ROCEMEND_BENCH_MEMORY_ONLY").is_some() {
        return;
    }
    print_condition_costs();

    {
        let mut group = c.benchmark_group("ingest");
        group.sample_size(20).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
        group.throughput(Throughput::Elements(BATCH as u64));
        let mut next = 0;
        group.bench_function("100k-series-1000-rules/batch-10k", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if next == 0 {
                        // A new poll: no evaluation in between, so every
                        // subject stays marked and this is ingest alone.
                        fleet.second += 1;
                    }
                    fleet.fill(next, Traffic::AllChanging);
                    let started = Instant::now();
                    fleet.ev.ingest(black_box(&fleet.batches[next]));
                    total += started.elapsed();
                    next = (next + 1) % fleet.batches.len();
                }
                total
            })
        });
        group.finish();
        // Finish the sweep so every series has seen this second.
        while next != 0 {
            fleet.fill(next, Traffic::AllChanging);
            fleet.ev.ingest(&fleet.batches[next]);
            next = (next + 1) % fleet.batches.len();
        }
    }

    fleet_second::bench_seconds(c, &mut fleet);

    fleet.ev.set_native_predicates(true);
    // Quiet traffic again before the probe runs inside the fleet.
    for _ in 0..31 {
        fleet.second(Traffic::Quiet);
    }
    let now = fleet.print_fixed_costs();
    fleet.second = (now - T0) / SECOND;
    let mut clock = Clock(now);
    bench_latency(c, "in-fleet-100k-series-1001-rules", &mut fleet, &mut clock);
    drop(fleet);

    print_noise_floor();
    let mut clock = Clock(T0);
    bench_latency(c, "alone-1-rule", &mut Alone::new(None), &mut clock);
    let state = tempfile::tempdir().expect("a state directory");
    let store = Store::open(&state.path().join("state.sled")).expect("open the store");
    bench_latency(c, "alone-1-rule-with-store", &mut Alone::new(Some(store)), &mut clock);
}

/// What one condition of a standard rule (`rules/`) costs, natively and on
/// Rhai, and what the cost meter charges for the native call.
fn print_condition_costs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
    let set = rule::load_dir(&dir, Helpers::default()).expect("the standard rules load");
    let (mut native, mut script, mut nodes) = (Vec::new(), Vec::new(), Vec::new());
    for r in &set.rules {
        for cond in [engine::rule::Condition::Fire, engine::rule::Condition::Clear] {
            // Values that move, so no call is the same as the last.
            let values =
                |i: usize| -> Vec<f64> { (0..r.windows.len()).map(|k| ((i * 7 + k) % 13) as f64 * 1e5).collect() };
            let inputs: Vec<Vec<f64>> = (0..64).map(values).collect();
            let Some((_, n)) = r.eval_native_sized(cond, &inputs[0]) else { continue };
            const N: usize = 1_000_000;
            let started = Instant::now();
            for i in 0..N {
                black_box(r.eval_native(cond, black_box(&inputs[i % 64])));
            }
            native.push(started.elapsed().as_secs_f64() * 1e9 / N as f64);
            const M: usize = 20_000;
            let started = Instant::now();
            for i in 0..M {
                let w = r.window_values(inputs[i % 64].clone());
                let _ = black_box(set.scripts.eval(r, cond, &LabelSet::default(), w));
            }
            script.push(started.elapsed().as_secs_f64() * 1e9 / M as f64);
            nodes.push(n);
        }
    }
    let range = |v: &[f64]| {
        (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    };
    let ((n0, n1), (s0, s1)) = (range(&native), range(&script));
    let charged: Vec<f64> = nodes.iter().map(|n| engine::evaluator::cost::native_cost(*n).as_nanos() as f64).collect();
    let (c0, c1) = range(&charged);
    let ratio = native.iter().zip(&charged).map(|(n, c)| n / c).fold(0.0, f64::max);
    eprintln!(
        "== conditions of the {} standard rules ({} conditions, {}-{} nodes): native {n0:.1}-{n1:.1} ns per call (the cost meter charges {c0:.0}-{c1:.0} ns, at least {:.1}x what each took), on Rhai {s0:.0}-{s1:.0} ns per call",
        set.rules.len(),
        native.len(),
        nodes.iter().min().unwrap_or(&0),
        nodes.iter().max().unwrap_or(&0),
        1.0 / ratio,
    );
}

/// The timing noise of this machine: a fixed computation of about 10 µs
/// timed 10,000 times the way the latency probe is. Its p99 over its p50
/// is what the machine (a shared VM) adds to any latency figure.
fn print_noise_floor() {
    const N: usize = 10_000;
    let mut times: Vec<Duration> = (0..N)
        .map(|_| {
            let started = Instant::now();
            let mut x = 1u64;
            for i in 0..7_500u64 {
                x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
            }
            black_box(x);
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    eprintln!(
        "== noise floor: a fixed ~10 µs computation: p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs; load average {}",
        us(times[N / 2]),
        us(times[N * 99 / 100]),
        us(times[N * 999 / 1000]),
        us(times[N - 1]),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    );
}

criterion_group!(engine_benches, benches);
criterion_main!(engine_benches);
