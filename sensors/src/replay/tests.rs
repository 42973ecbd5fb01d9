//! Tests of the replay sensor against small recordings, on a paused clock.

use engine::testing::SensorHarness as Harness;
use std::io::Write;
use std::time::Duration;

use engine::{Batch, CounterSpec, Labels, SampleKind, Sensor, SensorError, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::ReplaySensor;

const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;

/// Two series, samples at t0, t0 + 500 ms (with a note) and t0 + 2 s.
fn recording() -> String {
    [
        r#"{"series":0,"metric":"link_carrier_down_count","labels":{"node":"node-03","netdev":"eth6"},"kind":"counter","bits":32,"overflow":"wrap"}"#.to_string(),
        r#"{"series":7,"metric":"link_oper_up","labels":{"node":"node-03","netdev":"eth6"},"kind":"gauge"}"#.to_string(),
        format!(r#"{{"s":0,"t":{},"v":4}}"#, T0),
        format!(r#"{{"s":7,"t":{},"v":1}}"#, T0),
        format!(r#"{{"s":0,"t":{},"v":5}}"#, T0 + 500 * MS),
        format!(r#"{{"note":"fault","t":{},"text":"flap","labels":{{"node":"node-03"}}}}"#, T0 + 500 * MS),
        format!(r#"{{"s":7,"t":{},"v":0}}"#, T0 + 500 * MS),
        format!(r#"{{"s":0,"t":{},"v":6}}"#, T0 + 2000 * MS),
    ]
    .join("\n")
        + "\n"
}

fn write_temp(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file.flush().unwrap();
    file
}

fn harness() -> Harness {
    Harness::new("replay", 100)
}

fn drain(rx: &mut mpsc::Receiver<Batch>) -> Vec<Batch> {
    let mut out = Vec::new();
    while let Ok(batch) = rx.try_recv() {
        out.push(batch);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn series_are_registered_with_their_labels_and_kinds() {
    let file = write_temp(&recording());
    let mut h = harness();
    Box::new(ReplaySensor::from_path("replay", file.path(), 0.0).unwrap()).run(h.ctx.clone()).await.unwrap();
    let batches = drain(&mut h.rx);
    let first = &batches[0].samples;
    assert_eq!(first.len(), 2);
    let reg = h.table.read();
    assert_eq!(reg.len(), 2);
    assert_eq!(reg.metric_name(first[0].series), "link_carrier_down_count");
    assert_eq!(reg.labels(first[0].series), Labels::from_pairs([("node", "node-03"), ("netdev", "eth6")]));
    assert_eq!(reg.info(first[0].series).kind, SampleKind::Counter(CounterSpec::U32_WRAP));
    // Recording id 7 maps to whatever id the engine gave it, not to 7.
    assert_eq!(reg.metric_name(first[1].series), "link_oper_up");
    assert_eq!(reg.info(first[1].series).kind, SampleKind::Gauge);
    assert_eq!(first[1].value, Value::Real(1.0));
}

#[tokio::test(start_paused = true)]
async fn consecutive_lines_with_one_timestamp_form_one_batch() {
    let mut h = harness();
    Box::new(ReplaySensor::from_bytes("mem", recording().into_bytes(), 0.0).unwrap()).run(h.ctx.clone()).await.unwrap();
    let batches = drain(&mut h.rx);
    let shape: Vec<(Vec<i64>, Vec<i64>)> = batches
        .iter()
        .map(|b| {
            (b.samples.iter().map(|s| (s.ts - T0) / MS).collect(), b.notes.iter().map(|n| (n.ts - T0) / MS).collect())
        })
        .collect();
    assert_eq!(shape, vec![(vec![0, 0], vec![]), (vec![500, 500], vec![500]), (vec![2000], vec![])]);
    assert_eq!(batches[1].notes[0].text, "flap");
    assert_eq!(batches[1].samples[0].value, Value::Count(5));
}

#[tokio::test(start_paused = true)]
async fn speed_two_plays_in_half_the_recorded_time() {
    let file = write_temp(&recording());
    let mut h = harness();
    let sensor = Box::new(ReplaySensor::from_path("replay", file.path(), 2.0).unwrap());
    let start = Instant::now();
    let run = tokio::spawn(sensor.run(h.ctx.clone()));
    let mut arrivals = Vec::new();
    for _ in 0..3 {
        h.rx.recv().await.unwrap();
        arrivals.push(start.elapsed());
    }
    run.await.unwrap().unwrap();
    // Recorded offsets 0, 500 ms and 2 s, halved.
    assert_eq!(arrivals, vec![Duration::ZERO, Duration::from_millis(250), Duration::from_secs(1)]);
}

#[tokio::test(start_paused = true)]
async fn speed_zero_does_not_wait() {
    let mut h = harness();
    let start = Instant::now();
    Box::new(ReplaySensor::from_bytes("mem", recording().into_bytes(), 0.0).unwrap()).run(h.ctx.clone()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(drain(&mut h.rx).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_malformed_line_names_the_file_and_line() {
    let mut text = recording();
    text.push_str("{\"s\":0,\"t\":oops}\n");
    let file = write_temp(&text);
    let mut h = harness();
    let err =
        Box::new(ReplaySensor::from_path("replay", file.path(), 0.0).unwrap()).run(h.ctx.clone()).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, SensorError::Malformed(_)), "{err:?}");
    assert!(message.starts_with(&format!("{}:9: not a recording line", file.path().display())), "{message}");
    // What came before the bad line was played.
    assert_eq!(drain(&mut h.rx).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_sample_of_an_undeclared_series_is_malformed() {
    let text = format!("{{\"s\":3,\"t\":{T0},\"v\":1}}\n");
    let h = harness();
    let err = Box::new(ReplaySensor::from_bytes("mem", text.into_bytes(), 0.0).unwrap())
        .run(h.ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "mem:1: series 3 used before it is declared");
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_a_replay_waiting_for_its_next_batch() {
    // The second batch is 8 s of recorded time after the first (a gap of
    // over 10 s would play at once).
    let text = format!(
        "{}\n{{\"s\":0,\"t\":{T0},\"v\":1}}\n{{\"s\":0,\"t\":{},\"v\":2}}\n",
        recording().lines().next().unwrap(),
        T0 + 8 * 1000 * MS
    );
    let mut h = harness();
    let start = Instant::now();
    let run =
        tokio::spawn(Box::new(ReplaySensor::from_bytes("mem", text.into_bytes(), 1.0).unwrap()).run(h.ctx.clone()));
    h.rx.recv().await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    h.stop.send(true).unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5), "stopped at shutdown, not after the 8 s");
    assert!(h.rx.try_recv().is_err(), "the second batch was never sent");
}

#[tokio::test(start_paused = true)]
async fn a_missing_file_is_an_io_error_naming_it() {
    let h = harness();
    let err = Box::new(ReplaySensor::from_path("replay", "/nonexistent/rec.jsonl", 1.0).unwrap())
        .run(h.ctx.clone())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("opening recording /nonexistent/rec.jsonl: "), "{err}");
}

#[test]
fn speeds_that_are_not_finite_and_non_negative_are_refused() {
    for speed in [-0.5, f64::NAN, f64::INFINITY] {
        assert!(ReplaySensor::from_bytes("mem", Vec::new(), speed).is_err(), "speed {speed}");
    }
    assert_eq!(ReplaySensor::from_bytes("mem", Vec::new(), 0.0).unwrap().speed(), 0.0);
}

#[tokio::test(start_paused = true)]
async fn a_large_group_is_split_into_bounded_batches_with_one_timestamp() {
    let n = super::sensor::MAX_BATCH_SAMPLES + 10;
    let mut text = String::from(recording().lines().next().unwrap());
    text.push('\n');
    for i in 0..n {
        text.push_str(&format!("{{\"s\":0,\"t\":{T0},\"v\":{i}}}\n"));
    }
    let mut h = harness();
    let run =
        tokio::spawn(Box::new(ReplaySensor::from_bytes("mem", text.into_bytes(), 0.0).unwrap()).run(h.ctx.clone()));
    let mut sizes = Vec::new();
    while let Some(batch) = h.rx.recv().await {
        assert!(batch.samples.iter().all(|s| s.ts == T0));
        sizes.push(batch.samples.len());
        if sizes.iter().sum::<usize>() == n {
            break;
        }
    }
    run.await.unwrap().unwrap();
    assert_eq!(sizes, vec![super::sensor::MAX_BATCH_SAMPLES, 10]);
}
