//! The running `rdma_sysfs` sensor.

use std::time::Duration;

use async_trait::async_trait;
use engine::{Sensor, SensorContext, SensorError};
use tokio::time::MissedTickBehavior;

use super::config::RdmaSysfsConfig;
use super::poller::Poller;

/// Polls RDMA port counters from sysfs at a fixed interval.
///
/// Runs until shutdown; a missing device or a failing file is reported as
/// health, never as an error that ends the sensor.
#[derive(Debug, Clone)]
pub struct RdmaSysfsSensor {
    name: String,
    config: RdmaSysfsConfig,
}

impl RdmaSysfsSensor {
    /// A sensor `name` with validated settings (see [`RdmaSysfsConfig::build`]).
    pub fn new(name: &str, config: RdmaSysfsConfig) -> RdmaSysfsSensor {
        RdmaSysfsSensor { name: name.to_string(), config }
    }
}

#[async_trait]
impl Sensor for RdmaSysfsSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let mut poller = Some(Poller::new(&self.config, ctx.clone()));
        let mut tick = tokio::time::interval(Duration::from_millis(self.config.interval_ms));
        // A poll that ran late is not worth catching up on: the next one
        // reads the same cumulative counters.
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        tracing::info!(message = "RDMA sysfs sensor started.", sensor = %self.name, root = %self.config.root.display());
        loop {
            if !ctx.next_tick(&mut tick).await {
                return Ok(());
            }
            let ts = engine::time::wall_clock_now();
            let Some(mut p) = poller.take() else { return Ok(()) };
            // hw_counters reads go to the NIC firmware on mlx5: keep them off
            // the async workers.
            let (back, samples) = tokio::task::spawn_blocking(move || {
                let samples = p.poll(ts);
                (p, samples)
            })
            .await
            .map_err(|e| SensorError::Io {
                context: "the rdma_sysfs poll task ended".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
            poller = Some(back);
            if !ctx.send_samples(samples).await? {
                return Ok(());
            }
        }
    }
}
