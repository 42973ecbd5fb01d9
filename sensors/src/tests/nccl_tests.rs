//! The `nccl_tests` sensor following a realistic `all_reduce_perf` output
//! as it is written, then truncated for a second run.

use engine::testing::SensorHarness as Harness;
use std::io::Write;
use std::time::Duration;

use engine::{Batch, HealthState, Labels, SampleKind, Value};

const HEADER: &str = "\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41235 on     node01 device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41236 on     node01 device  1 [0x43] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  41237 on     node01 device  2 [0x52] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  41238 on     node01 device  3 [0x61] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
";

/// (size, out-of-place time/algbw/busbw, in-place time/algbw/busbw)
const ROWS: &[(u64, [f64; 3], [f64; 3])] = &[
    (8, [36.52, 0.00, 0.00], [35.91, 0.00, 0.00]),
    (1048576, [48.12, 21.79, 32.69], [47.90, 21.89, 32.84]),
    (33554432, [512.3, 65.50, 98.25], [509.8, 65.82, 98.73]),
    (134217728, [1890.4, 71.00, 106.50], [1885.2, 71.20, 106.80]),
];

const FOOTER: &str = "\
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 42.1234 
#
# Collective test concluded: all_reduce_perf
";

fn row(size: u64, o: [f64; 3], i: [f64; 3]) -> String {
    let count = size / 4;
    format!(
        "{size:>12}  {count:>12}     float     sum      -1  {:>7.2}  {:>6.2}  {:>6.2}      0  {:>7.2}  {:>6.2}  {:>6.2}      0\n",
        o[0], o[1], o[2], i[0], i[1], i[2]
    )
}

fn harness() -> Harness {
    Harness::new("nccl", 1000)
}

/// (metric, labels, value) of every sample in `batch`.
fn readings(h: &Harness, batch: &Batch) -> Vec<(String, Labels, f64)> {
    let reg = h.table.read();
    batch
        .samples
        .iter()
        .map(|s| {
            assert_eq!(reg.info(s.series).kind, SampleKind::Gauge);
            let Value::Real(v) = s.value else { panic!("a gauge with a count") };
            (reg.metric_name(s.series).to_string(), reg.labels(s.series), v)
        })
        .collect()
}

fn find(r: &[(String, Labels, f64)], metric: &str, size: Option<u64>, placement: Option<&str>) -> Vec<f64> {
    r.iter()
        .filter(|(m, l, _)| {
            m == metric
                && l.get("size").map(str::to_string) == size.map(|s| s.to_string())
                && l.get("placement") == placement
        })
        .map(|(_, _, v)| *v)
        .collect()
}

fn append(path: &std::path::Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

async fn next(h: &mut Harness) -> Vec<(String, Labels, f64)> {
    let batch = tokio::time::timeout(Duration::from_secs(10), h.rx.recv()).await.expect("a batch in time").unwrap();
    readings(h, &batch)
}

#[tokio::test]
async fn every_row_of_a_run_becomes_gauges_and_a_truncated_file_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all_reduce.log");
    let settings: toml::Table = toml::from_str(&format!(
        "path = {:?}\njob = \"burnin-7\"\ncollective = \"configured\"\npoll_ms = 10",
        path.display().to_string()
    ))
    .unwrap();
    let sensor = sensors::build("nccl_tests", "nccl", settings).unwrap();
    let mut h = harness();
    let run = tokio::spawn(sensor.run(h.ctx.clone()));

    // Not there yet: waiting, not failing.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let health = h.ctx.health().snapshot().pop().unwrap();
    assert_eq!(health.state, HealthState::Unavailable);
    assert!(health.detail.starts_with("waiting for "), "{}", health.detail);

    // The header and the first row, then the rest with a line split
    // across two writes.
    append(&path, &format!("{HEADER}{}", row(ROWS[0].0, ROWS[0].1, ROWS[0].2)));
    let first = next(&mut h).await;
    assert_eq!(find(&first, "nccl_size_bytes", Some(8), None), vec![8.0]);
    assert_eq!(find(&first, "nccl_time_us", Some(8), Some("out-of-place")), vec![36.52]);
    assert_eq!(find(&first, "nccl_time_us", Some(8), Some("in-place")), vec![35.91]);
    assert_eq!(first.len(), 7, "size + 3 per placement");
    for (_, labels, _) in &first {
        assert_eq!(labels.get("collective"), Some("all_reduce"), "from the header, not the configured fallback");
        assert_eq!(labels.get("job"), Some("burnin-7"));
    }

    let mut rest: String = ROWS[1..].iter().map(|(s, o, i)| row(*s, *o, *i)).collect();
    rest.push_str(FOOTER);
    let (a, b) = rest.split_at(rest.len() / 2);
    append(&path, a);
    let mut got = next(&mut h).await;
    append(&path, b);
    while find(&got, "nccl_avg_busbw_gbps", None, None).is_empty() {
        got.extend(next(&mut h).await);
    }
    for (size, o, i) in &ROWS[1..] {
        assert_eq!(find(&got, "nccl_size_bytes", Some(*size), None), vec![*size as f64], "size {size}");
        for (placement, v) in [("out-of-place", o), ("in-place", i)] {
            let p = Some(placement);
            assert_eq!(find(&got, "nccl_time_us", Some(*size), p), vec![v[0]], "{size} {placement}");
            assert_eq!(find(&got, "nccl_algbw_gbps", Some(*size), p), vec![v[1]], "{size} {placement}");
            assert_eq!(find(&got, "nccl_busbw_gbps", Some(*size), p), vec![v[2]], "{size} {placement}");
        }
    }
    assert_eq!(got.len(), 3 * 7 + 1, "three rows and the average, nothing from the footer comments");
    assert_eq!(find(&got, "nccl_avg_busbw_gbps", None, None), vec![42.1234]);

    // A second run overwrites the file, without a header naming the
    // collective: the configured one is used.
    std::fs::write(&path, row(8, [40.0, 0.0, 0.0], [39.0, 0.0, 0.0])).unwrap();
    let again = next(&mut h).await;
    assert_eq!(find(&again, "nccl_time_us", Some(8), Some("out-of-place")), vec![40.0]);
    assert_eq!(again[0].1.get("collective"), Some("configured"));

    assert_eq!(h.ctx.health().snapshot().pop().unwrap().state, HealthState::Up);
    h.stop.send(true).unwrap();
    run.await.unwrap().unwrap();
}

#[test]
fn the_fixture_parses_row_by_row() {
    let mut parser = sensors::nccl_tests::Parser::new();
    let mut rows = Vec::new();
    let body: String = ROWS.iter().map(|(s, o, i)| row(*s, *o, *i)).collect();
    let text = format!("{HEADER}{body}{FOOTER}");
    let mut avg = None;
    for line in text.lines() {
        match parser.line(line) {
            Some(sensors::nccl_tests::Parsed::Row(r)) => rows.push(r),
            Some(sensors::nccl_tests::Parsed::AvgBusBw(v)) => avg = Some(v),
            None => {}
        }
    }
    assert_eq!(parser.collective(), Some("all_reduce"));
    assert_eq!(rows.iter().map(|r| r.size).collect::<Vec<_>>(), ROWS.iter().map(|r| r.0).collect::<Vec<_>>());
    for (r, (_, o, i)) in rows.iter().zip(ROWS) {
        let (op, ip) = (r.out_of_place.unwrap(), r.in_place.unwrap());
        assert_eq!([op.time_us, op.algbw_gbps, op.busbw_gbps], *o);
        assert_eq!([ip.time_us, ip.algbw_gbps, ip.busbw_gbps], *i);
    }
    assert_eq!(avg, Some(42.1234));
}
