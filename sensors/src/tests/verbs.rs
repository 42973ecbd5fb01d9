//! The `verbs` sensor. With the `verbs` feature, on a host without an RDMA
//! device: unavailable with the reason, no panic, stops on shutdown.
//! Without it: the kind is refused with a reason naming the feature.

#[cfg(feature = "verbs")]
#[tokio::test]
async fn without_a_device_the_sensor_reports_unavailable_and_runs_on() {
    use std::time::{Duration, Instant};

    use engine::{HealthState, SensorContext, SeriesTable};
    use tokio::sync::{mpsc, watch};

    let sensor = sensors::build("verbs", "ports", toml::from_str("poll_interval_ms = 100").unwrap()).unwrap();
    let (tx, mut rx) = mpsc::channel(16);
    let (stop, shutdown) = watch::channel(false);
    let ctx = SensorContext::new(SeriesTable::default(), "ports", 100, tx, shutdown);
    let board = ctx.health().clone();
    let run = tokio::spawn(sensor.run(ctx));
    let deadline = Instant::now() + Duration::from_secs(10);
    let health = loop {
        let health = board.snapshot().into_iter().find(|h| h.name == "ports").unwrap();
        if health.state != HealthState::Starting || Instant::now() > deadline {
            break health;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    if health.state == HealthState::Up {
        stop.send(true).unwrap();
        run.await.unwrap().unwrap();
        // Not a missing peer: the test is about a host without an RDMA
        // device, and a CI machine that has one is not broken.
        return test_peers::skip("this host has an RDMA device");
    }
    assert_eq!(health.state, HealthState::Unavailable, "{health:?}");
    assert_eq!(health.detail, "libibverbs lists no RDMA device");
    assert!(!run.is_finished(), "an unavailable sensor idles until shutdown");
    assert!(rx.try_recv().is_err(), "an unavailable sensor sends nothing");
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), run).await.unwrap().unwrap().unwrap();
}

#[cfg(feature = "verbs")]
#[test]
fn verbs_is_a_known_kind() {
    assert!(sensors::KINDS.contains(&"verbs"));
    let err = sensors::build("verbs", "ports", toml::from_str("poll_interval_ms = 1").unwrap()).err().unwrap();
    assert_eq!(err.to_string(), "sensor \"ports\" (kind \"verbs\"): configuration: poll_interval_ms 1 is below 100");
}

#[cfg(not(feature = "verbs"))]
#[test]
fn without_the_feature_verbs_is_refused_with_the_reason() {
    assert!(!sensors::KINDS.contains(&"verbs"));
    let err = sensors::build("verbs", "ports", toml::Table::new()).err().unwrap().to_string();
    assert!(err.starts_with("sensor \"ports\": kind \"verbs\" is not in this build"), "{err}");
    assert!(err.contains("--features verbs"), "{err}");
}
