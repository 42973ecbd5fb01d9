//! The prometheus sensor's path after the GET, for instruction counts:
//! a 100,000-series page (`support/page.rs`, values changing every round)
//! parsed, mapped to engine series and sent on the sensor's channel, as
//! the scrape task does.
//!
//! `cargo run --release -p rocemend-sensors --example scrape_path [ROUNDS]`
//! (default 10). The first page (which registers every series) is mapped
//! outside the measured function; each further round is one call of
//! `measured_scrape`, so under
//! `valgrind --tool=callgrind --toggle-collect='*measured_scrape*'` the
//! collected instructions divided by the samples printed are instructions
//! per sample scraped (`scripts/instructions.sh`).

use std::time::Instant;

use engine::{Batch, SensorContext, SeriesTable};
use sensors::prometheus::Mapper;

#[path = "support/page.rs"]
mod page;

/// One page: parse, map, send. Returns the samples sent.
#[inline(never)]
fn measured_scrape(
    mapper: &mut Mapper,
    ctx: &SensorContext,
    rt: &tokio::runtime::Runtime,
    text: &str,
    ts: i64,
) -> usize {
    let samples = mapper.map(text, ts).expect("the page parses");
    let n = samples.len();
    rt.block_on(ctx.send(Batch { samples, notes: Vec::new() })).expect("the channel is open");
    n
}

fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(4);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let ctx = SensorContext::new(SeriesTable::default(), "prometheus", 1 << 20, tx, shutdown);
    let mut mapper = Mapper::new(ctx.clone(), "", Default::default(), Vec::new());
    let mut text = String::new();
    page::write_page(&mut text, 0);
    let first = mapper.map(&text, 0).expect("the page parses");
    assert_eq!(first.len(), page::SERIES);
    let mut samples = 0;
    let mut busy = std::time::Duration::ZERO;
    for round in 1..=rounds {
        page::write_page(&mut text, round);
        let started = Instant::now();
        samples += measured_scrape(&mut mapper, &ctx, &rt, &text, round as i64);
        busy += started.elapsed();
        drop(rx.try_recv().expect("a batch"));
    }
    assert_eq!(mapper.registrations(), page::SERIES as u64, "registered once");
    println!(
        "rounds {rounds} samples {samples} bytes_per_page {} ns_per_sample {:.1}",
        text.len(),
        busy.as_nanos() as f64 / samples as f64
    );
}
