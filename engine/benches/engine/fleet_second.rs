//! One simulated second of the whole fleet, as the daemon lives it
//! (`Fleet::second`: ten batches of a poll, each ingested and evaluated,
//! then the 50 ms tick until the next poll), measured for a quiet fabric
//! and for one where every counter moves. The all-changing second is where
//! rule evaluation, not ingest, decides the cost, so it is also run with
//! native predicates off, for the difference they make. Kept apart from the
//! fleet's construction, the ingest benchmark and the latency probe, which
//! share the fleet but measure other paths.
//!
//! Criterion IDs: `second/quiet/100k-samples+evaluate`,
//! `second/all-changing-rhai/100k-samples+evaluate`,
//! `second/all-changing/100k-samples+evaluate`.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};

use super::{Fleet, Traffic, BATCH, SERIES, TICK};
use engine::MS;

/// The quiet second, then the all-changing second twice: with every
/// condition on Rhai (native predicates off: the engine before they
/// existed), then as the daemon runs, natively, which leaves them on.
pub(super) fn bench_seconds(c: &mut Criterion, fleet: &mut Fleet) {
    for (traffic, name, native) in [
        (Traffic::Quiet, "quiet", true),
        (Traffic::AllChanging, "all-changing-rhai", false),
        (Traffic::AllChanging, "all-changing", true),
    ] {
        fleet.ev.set_native_predicates(native);
        // Let every window (the longest is 30 s) fill with this traffic.
        for _ in 0..31 {
            fleet.second(traffic);
        }
        let before = fleet.ev.stats().clone();
        let (mut ingest, mut evaluate) = (Duration::ZERO, Duration::ZERO);
        const SECONDS: u32 = 5;
        for _ in 0..SECONDS {
            let (i, e, _) = fleet.second(traffic);
            ingest += i;
            evaluate += e;
        }
        let after = fleet.ev.stats();
        let (ingest, evaluate) = (ingest / SECONDS, evaluate / SECONDS);
        eprintln!(
            "== second {name}: {SERIES} samples in {} batches, evaluate after each and every {} ms: ingest {:.1} ms + evaluate {:.1} ms = {:.1} ms of CPU per second ({:.1} % of one core); per second {} script calls, {} native predicate calls, {} cache hits",
            SERIES / BATCH,
            TICK / MS,
            ingest.as_secs_f64() * 1e3,
            evaluate.as_secs_f64() * 1e3,
            (ingest + evaluate).as_secs_f64() * 1e3,
            (ingest + evaluate).as_secs_f64() * 100.0,
            (after.script_calls - before.script_calls) / SECONDS as u64,
            (after.native_calls - before.native_calls) / SECONDS as u64,
            (after.cache_hits - before.cache_hits) / SECONDS as u64,
        );
        let mut group = c.benchmark_group("second");
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .measurement_time(Duration::from_secs(5))
            .warm_up_time(Duration::from_secs(1));
        group.throughput(Throughput::Elements(SERIES as u64));
        group.bench_function(format!("{name}/100k-samples+evaluate"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let (i, e, _) = fleet.second(traffic);
                        i + e
                    })
                    .sum()
            })
        });
        group.finish();
    }
}
