//! The prometheus sensor after the GET: a 100,000-series page
//! (`examples/support/page.rs`: 100 families of 1,000 series, four labels
//! each, every value different on every page) parsed, mapped to engine
//! series and sent on the sensor's channel; and the same followed by the
//! engine's `Evaluator::ingest` (no rules: the cost of a sample reaching
//! the engine's series state). Prints ns per sample; criterion reports the
//! time per page (throughput in samples).
//!
//! `cargo bench -j2 -p rocemend-sensors --bench prometheus_scrape`. On a
//! shared machine the times move; compare them with each other, and use
//! `scripts/instructions.sh` for a figure that does not.

use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use engine::{Batch, Evaluator, SensorContext, SeriesTable, SECOND};
use sensors::prometheus::Mapper;

#[path = "../examples/support/page.rs"]
mod page;

/// Pages prepared ahead, used in turn: values change on every iteration.
const PAGES: u64 = 8;

fn scrape(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let table = SeriesTable::default();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(4);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let ctx = SensorContext::new(table.clone(), "prometheus", 1 << 20, tx, shutdown);
    let mut mapper = Mapper::new(ctx.clone(), "", Default::default(), Vec::new());
    let pages: Vec<String> = (0..PAGES)
        .map(|round| {
            let mut text = String::new();
            page::write_page(&mut text, round);
            text
        })
        .collect();
    let first = mapper.map(&pages[0], 0).expect("the page parses");
    assert_eq!(first.len(), page::SERIES);
    let rules = engine::rule::load_sources(&[], engine::Helpers::default()).expect("no rules");
    let mut ev = Evaluator::new(table.clone(), rules, None).expect("no store");
    ev.ingest(&first);

    // A plain timing first, printed as ns per sample.
    let mut ts = 1;
    let started = Instant::now();
    let rounds = 20;
    for _ in 0..rounds {
        let samples = mapper.map(&pages[(ts as u64 % PAGES) as usize], ts * SECOND).expect("parses");
        rt.block_on(ctx.send(Batch { samples, notes: Vec::new() })).expect("open");
        drop(rx.try_recv());
        ts += 1;
    }
    let per_sample = started.elapsed().as_nanos() as f64 / (rounds * page::SERIES) as f64;
    println!("prometheus scrape path (parse + map + send), 100k series: {per_sample:.1} ns per sample");

    let mut group = c.benchmark_group("prometheus_scrape");
    group.throughput(Throughput::Elements(page::SERIES as u64));
    group.sample_size(20).measurement_time(Duration::from_secs(10));
    group.bench_function("parse_map_send_100k", |b| {
        b.iter(|| {
            let samples = mapper.map(black_box(&pages[(ts as u64 % PAGES) as usize]), ts * SECOND).expect("parses");
            ts += 1;
            rt.block_on(ctx.send(Batch { samples, notes: Vec::new() })).expect("open");
            rx.try_recv().expect("a batch").samples.len()
        })
    });
    group.bench_function("parse_map_ingest_100k", |b| {
        b.iter(|| {
            let samples = mapper.map(black_box(&pages[(ts as u64 % PAGES) as usize]), ts * SECOND).expect("parses");
            ts += 1;
            ev.ingest(&samples);
            samples.len()
        })
    });
    group.finish();
    assert_eq!(mapper.registrations(), page::SERIES as u64, "registered once");
}

criterion_group!(benches, scrape);
criterion_main!(benches);
