//! The gnmi sensor as an aggregator: N simulated switches × P ports × 8
//! queues × 6 queue counters, each switch streaming SAMPLE every second
//! (the `sonic_queues` preset), all into one sensor.
//!
//! Measures the updates per second that reach the engine's channel, the
//! latency from the switch's notification timestamp to the sample leaving
//! the channel (p50/p99, printed), and the sensor's own CPU share (its
//! `busy_ns` over wall time). Each criterion iteration waits for one
//! second's worth of updates, so a sensor that keeps up shows ~1 s per
//! iteration; one that falls behind shows more.
//!
//! Scale with `ROCEMEND_BENCH_SWITCHES` and `ROCEMEND_BENCH_PORTS`
//! (default 64 × 64 = 196,608 updates/s).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use engine::{Batch, HealthBoard, SensorContext, SeriesTable};

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

fn aggregator(c: &mut Criterion) {
    let switches = env("ROCEMEND_BENCH_SWITCHES", 64);
    let ports = env("ROCEMEND_BENCH_PORTS", 64);
    let per_second = (switches * ports * sim::switch::QUEUES * 6) as u64;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let hist = Arc::new(Mutex::new(vec![0u64; BUCKETS + 1]));
    let health = HealthBoard::default();
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let running = runtime.block_on(async {
        let running = sim::switch::spawn_many(switches, ports).await.unwrap();
        let mut config = String::from("presets = [\"sonic_queues\"]\nsample_interval = \"1s\"\n");
        for sw in &running {
            config.push_str(&format!("[[targets]]\nname = \"{}\"\naddress = \"{}\"\n", sw.name, sw.addr));
        }
        let config: sensors::GnmiConfig = toml::from_str(&config).unwrap();
        let sensor = config.build("gnmi").unwrap();
        // The engine's channel: bounded, as in the daemon.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(1024);
        let ctx = SensorContext::new(SeriesTable::default(), "gnmi", 1 << 20, tx, shutdown.clone())
            .with_health(health.clone());
        tokio::spawn(engine::Sensor::run(Box::new(sensor), ctx));
        let (count, hist) = (count.clone(), hist.clone());
        tokio::spawn(async move {
            while let Some(batch) = rx.recv().await {
                let now = engine::time::wall_clock_now();
                let mut h = hist.lock().unwrap();
                for s in &batch.samples {
                    let ms = ((now - s.ts).max(0) / 1_000_000) as usize;
                    h[ms.min(BUCKETS)] += 1;
                }
                count.fetch_add(batch.samples.len() as u64, Ordering::Relaxed);
            }
        });
        running
    });
    // Warm up: every series registered and the initial values in.
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::Relaxed) < 2 * per_second && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    hist.lock().unwrap().iter_mut().for_each(|n| *n = 0);
    let busy0 = health.snapshot()[0].busy_ns;
    let wall0 = Instant::now();

    let mut group = c.benchmark_group("gnmi_aggregator");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(12));
    group.throughput(Throughput::Elements(per_second));
    group.bench_function(format!("{switches}x{ports}x8x6_sample_1s"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            let target = count.load(Ordering::Relaxed) + iters * per_second;
            while count.load(Ordering::Relaxed) < target {
                std::thread::sleep(Duration::from_millis(1));
            }
            start.elapsed()
        })
    });
    group.finish();

    let wall = wall0.elapsed().as_secs_f64();
    let busy = (health.snapshot()[0].busy_ns - busy0) as f64 / 1e9;
    let h = hist.lock().unwrap();
    let total: u64 = h.iter().sum();
    println!(
        "gnmi_aggregator {switches}x{ports}x8x6: {:.0} updates/s over {wall:.1} s; latency p50 {} ms, p99 {} ms; sensor busy {:.1}% of one core",
        total as f64 / wall,
        percentile(&h, 0.50),
        percentile(&h, 0.99),
        100.0 * busy / wall
    );
    drop(h);
    let _ = stop.send(true);
    runtime.block_on(async {
        for sw in running {
            let _ = sw.stop().await;
        }
    });
}

criterion_group!(benches, aggregator);
criterion_main!(benches);
