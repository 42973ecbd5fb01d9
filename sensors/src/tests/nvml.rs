//! The `nvml` sensor on a host without an NVIDIA GPU: it reports itself
//! unavailable with the reason, does not panic, and stops on shutdown.

use std::time::{Duration, Instant};

use engine::{HealthState, SensorContext, SensorHealth, SeriesTable};
use tokio::sync::{mpsc, watch};

/// Far above what loading (or failing to load) a library takes.
const WAIT: Duration = Duration::from_secs(10);

/// Runs the sensor built from `settings` until it reports a state other
/// than starting; returns that health, then stops it and checks it ended
/// cleanly without sending anything.
async fn settle(settings: &str) -> SensorHealth {
    let sensor = sensors::build("nvml", "gpu", toml::from_str(settings).unwrap()).unwrap();
    let (tx, mut rx) = mpsc::channel(16);
    let (stop, shutdown) = watch::channel(false);
    let ctx = SensorContext::new(SeriesTable::default(), "gpu", 100, tx, shutdown);
    let board = ctx.health().clone();
    let run = tokio::spawn(sensor.run(ctx));
    let deadline = Instant::now() + WAIT;
    let health = loop {
        let health = board.snapshot().into_iter().find(|h| h.name == "gpu").unwrap();
        if health.state != HealthState::Starting || Instant::now() > deadline {
            break health;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    if health.state == HealthState::Unavailable {
        assert!(!run.is_finished(), "an unavailable sensor idles until shutdown");
        assert!(rx.try_recv().is_err(), "an unavailable sensor sends nothing");
    }
    stop.send(true).unwrap();
    tokio::time::timeout(WAIT, run).await.expect("stops on shutdown").expect("no panic").expect("ends with Ok");
    health
}

#[tokio::test]
async fn without_a_gpu_the_sensor_reports_unavailable_and_runs_on() {
    let health = settle("").await;
    if health.state == HealthState::Up {
        // Not a missing peer: the test is about a host without a GPU, and a
        // CI machine that has one is not broken.
        return test_peers::skip(format!("this host has an NVIDIA GPU ({})", health.detail));
    }
    assert_eq!(health.state, HealthState::Unavailable, "{health:?}");
    assert!(
        ["NVML", "NVIDIA"].iter().any(|w| health.detail.contains(w)),
        "the reason names what is missing: {health:?}"
    );
}

#[tokio::test]
async fn a_missing_library_is_named_in_the_reason() {
    let health = settle("library = \"/nonexistent/libnvidia-ml.so.1\"").await;
    assert_eq!(health.state, HealthState::Unavailable, "{health:?}");
    assert!(
        health.detail.starts_with("cannot load the NVML library /nonexistent/libnvidia-ml.so.1 ("),
        "{}",
        health.detail
    );
}

#[test]
fn a_bad_setting_is_refused_at_build() {
    let err = sensors::build("nvml", "gpu", toml::from_str("xid_wait_ms = 5").unwrap()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "sensor \"gpu\" (kind \"nvml\"): configuration: xid_wait_ms 5 is not within 10..=60000"
    );
}
