//! The gnmi sensor as an aggregator: N simulated switches × P ports × 16
//! queues (8 unicast, 8 multicast: sonic-gnmi's `Queues` lists both) × 7
//! queue counters, each switch streaming SAMPLE every second
//! (the `sonic_queues` preset), all into one sensor, whose samples go into
//! an engine evaluator with the standard rules (`rules/`), as in the
//! daemon.
//!
//! Measures the updates per second that reach the engine, the latency from
//! the switch's notification timestamp to the sample's ingest (p50/p99),
//! the sensor's own CPU share (its `busy_ns` over wall time), and the
//! aggregator process's CPU share and resident memory. The simulated
//! switches run in a process of their own (this bench binary started again
//! with `ROCEMEND_BENCH_SERVE=N×P`), so neither their CPU nor their memory
//! is counted as the aggregator's; they share the machine's cores with it.
//! Each criterion iteration waits for one second's worth of updates, so an
//! aggregator that keeps up shows ~1 s per iteration; one that falls behind
//! shows more.
//!
//! Scale with `ROCEMEND_BENCH_SWITCHES` and `ROCEMEND_BENCH_PORTS`
//! (default 64 × 64 = 458,752 series; 140 × 64 is 1,003,520).

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use engine::{Batch, Evaluator, HealthBoard, Helpers, SensorContext, SeriesTable};

/// The queue counters the `sonic_queues` preset maps: packets, ECN-marked
/// packets, bytes, dropped packets and bytes, the watermark, the occupancy.
const QUEUE_COUNTERS: usize = 7;

/// Latency histogram buckets of 1 ms, up to 10 s.
const BUCKETS: usize = 10_000;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(hist: &[u64], p: f64) -> usize {
    let total: u64 = hist.iter().sum();
    let want = (total as f64 * p).ceil() as u64;
    let mut seen = 0;
    for (ms, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= want {
            return ms;
        }
    }
    BUCKETS
}

/// Serves `switches` simulated switches of `ports` ports, printing each
/// one's address on a line, until stdin closes.
fn serve_switches(switches: usize, ports: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let running = runtime.block_on(sim::switch::spawn_many(switches, ports)).unwrap();
    let mut out = std::io::stdout().lock();
    for sw in &running {
        writeln!(out, "{} {}", sw.name, sw.addr).unwrap();
    }
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    drop(out);
    // The parent closes our stdin when it is done (or dies).
    for _ in std::io::stdin().lock().lines() {}
}

/// The switches, served by this binary in a process of its own.
struct Switches {
    child: std::process::Child,
    addresses: Vec<(String, String)>,
}

impl Switches {
    fn start(switches: usize, ports: usize) -> Switches {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .env("ROCEMEND_BENCH_SERVE", format!("{switches}x{ports}"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut addresses = Vec::new();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        for line in stdout.lines() {
            let line = line.unwrap();
            if line == "ready" {
                break;
            }
            let (name, addr) = line.split_once(' ').unwrap();
            addresses.push((name.to_string(), addr.to_string()));
        }
        Switches { child, addresses }
    }
}

impl Drop for Switches {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Process `pid`'s CPU time so far (user + system), from /proc.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no memory-safety preconditions.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// This process's resident memory, MiB, from /proc/self/status.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

/// What the engine side counts while the bench runs, shared with the
/// thread that feeds the evaluator.
#[derive(Clone, Default)]
struct Meters {
    /// Samples ingested.
    count: Arc<AtomicU64>,
    /// How old the newest batch's first sample was when it was ingested, ms.
    lag_ms: Arc<AtomicU64>,
    /// Sample age at ingest, by 1 ms bucket.
    hist: Arc<Mutex<Vec<u64>>>,
    /// Time spent evaluating the rules: total, longest call, calls.
    evaluation: Arc<Mutex<(Duration, Duration, u64)>>,
}

impl Meters {
    fn new() -> Meters {
        Meters {
            lag_ms: Arc::new(AtomicU64::new(u64::MAX)),
            hist: Arc::new(Mutex::new(vec![0u64; BUCKETS + 1])),
            ..Meters::default()
        }
    }

    /// Counts one batch ingested at `now`.
    fn ingested(&self, batch: &Batch, now: i64) {
        {
            let mut h = self.hist.lock().unwrap();
            for s in &batch.samples {
                let ms = ((now - s.ts).max(0) / 1_000_000) as usize;
                h[ms.min(BUCKETS)] += 1;
            }
        }
        if let Some(first) = batch.samples.first() {
            self.lag_ms.store(((now - first.ts).max(0) / 1_000_000) as u64, Ordering::Relaxed);
        }
        self.count.fetch_add(batch.samples.len() as u64, Ordering::Relaxed);
    }

    /// Counts one evaluation that took `took`.
    fn evaluated(&self, took: Duration) {
        let mut e = self.evaluation.lock().unwrap();
        *e = (e.0 + took, e.1.max(took), e.2 + 1);
    }
}

/// Starts the gnmi sensor over `served` and, as the daemon runs it, the
/// engine: every batch ingested, the standard rules evaluated every 100 ms.
fn start_pipeline(
    runtime: &tokio::runtime::Runtime,
    served: &Switches,
    table: &SeriesTable,
    health: &HealthBoard,
    shutdown: tokio::sync::watch::Receiver<bool>,
    meters: &Meters,
) {
    let rules_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
    runtime.block_on(async {
        let mut config = String::from("presets = [\"sonic_queues\"]\nsample_interval = \"1s\"\n");
        for (name, addr) in &served.addresses {
            config.push_str(&format!("[[targets]]\nname = \"{name}\"\naddress = \"{addr}\"\n"));
        }
        let config: sensors::GnmiConfig = toml::from_str(&config).unwrap();
        let sensor = config.build("gnmi").unwrap();
        let series = table.clone();
        let rules = engine::rule::load_dir(&rules_dir, Helpers::new(Some(series.clone()), None)).unwrap();
        let mut evaluator = Evaluator::new(series.clone(), rules, None).unwrap();
        // The engine's channel: bounded, as in the daemon.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(1024);
        let ctx = SensorContext::new(series, "gnmi", 1 << 21, tx, shutdown).with_health(health.clone());
        tokio::spawn(engine::Sensor::run(Box::new(sensor), ctx));
        let meters = meters.clone();
        tokio::task::spawn_blocking(move || {
            let mut events = Vec::new();
            let mut evaluated = Instant::now();
            while let Some(batch) = rx.blocking_recv() {
                evaluator.ingest(&batch.samples);
                let now = engine::time::wall_clock_now();
                meters.ingested(&batch, now);
                if evaluated.elapsed() >= Duration::from_millis(100) {
                    let started = Instant::now();
                    evaluator.evaluate(now, &mut events);
                    events.clear();
                    meters.evaluated(started.elapsed());
                    evaluated = Instant::now();
                }
            }
        });
    });
}

/// Waits until every series is registered and the initial values are in,
/// then until the backlog that registering a million series leaves is
/// drained: the newest batch under 200 ms old for 3 s in a row. Measuring
/// before that would time the catch-up, not the steady state.
fn warm_up(meters: &Meters, per_second: u64) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while meters.count.load(Ordering::Relaxed) < 2 * per_second && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut settled_since = Instant::now();
    while Instant::now() < deadline {
        if meters.lag_ms.load(Ordering::Relaxed) >= 200 {
            settled_since = Instant::now();
        } else if settled_since.elapsed() >= Duration::from_secs(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The readings taken when the measurement starts, to subtract at its end.
struct Start {
    wall: Instant,
    busy_ns: u64,
    cpu: f64,
    switches_cpu: f64,
}

/// Prints what the measured stretch since `start` cost.
fn report(name: &str, meters: &Meters, health: &HealthBoard, start: &Start, switches_pid: &str, warm_up: Duration) {
    let wall = start.wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds("self") - start.cpu;
    let switches_cpu = cpu_seconds(switches_pid) - start.switches_cpu;
    let (eval_total, eval_max, evaluations) = *meters.evaluation.lock().unwrap();
    let busy = (health.snapshot()[0].busy_ns - start.busy_ns) as f64 / 1e9;
    let h = meters.hist.lock().unwrap();
    let total: u64 = h.iter().sum();
    println!(
        "gnmi_aggregator {name}: {:.0} updates/s over {wall:.1} s; sample -> engine \
         p50 {} ms, p99 {} ms; sensor busy {:.1}% of one core; aggregator process {:.1}% of one core, RSS {:.0} MiB; \
         rule evaluation {:.1}% of one core, longest {:.0} ms ({evaluations} calls); simulated switches' process \
         {:.1}% of one core (warm-up {:.0} s)",
        total as f64 / wall,
        percentile(&h, 0.50),
        percentile(&h, 0.99),
        100.0 * busy / wall,
        100.0 * cpu / wall,
        rss_mib(),
        100.0 * eval_total.as_secs_f64() / wall,
        eval_max.as_secs_f64() * 1e3,
        100.0 * switches_cpu / wall,
        warm_up.as_secs_f64(),
    );
}

fn aggregator(c: &mut Criterion) {
    let switches = env("ROCEMEND_BENCH_SWITCHES", 64);
    let ports = env("ROCEMEND_BENCH_PORTS", 64);
    let queues = sim::switch::Profile::default().queues();
    let per_second = (switches * ports * queues * QUEUE_COUNTERS) as u64;
    let served = Switches::start(switches, ports);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let wall_start = Instant::now();
    let meters = Meters::new();
    let health = HealthBoard::default();
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let table = SeriesTable::default();
    start_pipeline(&runtime, &served, &table, &health, shutdown, &meters);
    warm_up(&meters, per_second);
    let warmed_up = wall_start.elapsed();
    let series_registered = table.read().len();
    meters.hist.lock().unwrap().iter_mut().for_each(|n| *n = 0);
    let switches_pid = served.child.id().to_string();
    *meters.evaluation.lock().unwrap() = (Duration::ZERO, Duration::ZERO, 0);
    let start = Start {
        busy_ns: health.snapshot()[0].busy_ns,
        cpu: cpu_seconds("self"),
        switches_cpu: cpu_seconds(&switches_pid),
        wall: Instant::now(),
    };

    let mut group = c.benchmark_group("gnmi_aggregator");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(12));
    group.throughput(Throughput::Elements(per_second));
    group.bench_function(format!("{switches}x{ports}x{queues}x7_sample_1s"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            let target = meters.count.load(Ordering::Relaxed) + iters * per_second;
            while meters.count.load(Ordering::Relaxed) < target {
                std::thread::sleep(Duration::from_millis(1));
            }
            start.elapsed()
        })
    });
    group.finish();

    let name = format!("{switches}x{ports}x{queues}x7 ({series_registered} series)");
    report(&name, &meters, &health, &start, &switches_pid, warmed_up);
    let _ = stop.send(true);
    drop(served);
}

fn main() {
    if let Ok(shape) = std::env::var("ROCEMEND_BENCH_SERVE") {
        let (n, p) = shape.split_once('x').expect("ROCEMEND_BENCH_SERVE=SWITCHESxPORTS");
        return serve_switches(n.parse().unwrap(), p.parse().unwrap());
    }
    let mut criterion = Criterion::default().configure_from_args();
    aggregator(&mut criterion);
    criterion.final_summary();
}
