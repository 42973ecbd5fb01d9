//! [`Scripted`]: a sensor that sends what a test wrote down for it.

use async_trait::async_trait;

use crate::contracts::{Batch, Sensor, SensorContext, SensorError};
use crate::series::{Sample, SeriesSpec, Value};
use crate::time::Nanos;

/// A sensor that registers its series, sends its batches in order as fast
/// as the engine takes them, and ends: a recording without a file, with
/// the times a test needs (a clock that steps, a node whose clock is off).
/// A series it cannot register ends it with that error, as a real sensor's
/// would.
#[derive(Debug, Clone)]
pub struct Scripted {
    name: String,
    series: Vec<SeriesSpec>,
    batches: Vec<Vec<(usize, Nanos, Value)>>,
    /// Wall time between batches: a live sensor's pace instead of a replay's.
    gap: std::time::Duration,
}

impl Scripted {
    /// A sensor `name` reading `series` (the batches name them by index).
    pub fn new(name: &str, series: Vec<SeriesSpec>) -> Scripted {
        Scripted { name: name.to_string(), series, batches: Vec::new(), gap: std::time::Duration::ZERO }
    }

    /// Sends a batch every `gap` of wall time, as a live sensor does, so what
    /// the engine does between samples (the dispatcher's task) keeps up.
    pub fn paced(mut self, gap: std::time::Duration) -> Scripted {
        self.gap = gap;
        self
    }

    /// Adds a batch: samples as (index into the series, time, value).
    pub fn batch(mut self, samples: Vec<(usize, Nanos, Value)>) -> Scripted {
        self.batches.push(samples);
        self
    }
}

#[async_trait]
impl Sensor for Scripted {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let ids = self.series.iter().map(|spec| ctx.register(spec)).collect::<Result<Vec<_>, _>>()?;
        for batch in self.batches {
            if !self.gap.is_zero() {
                tokio::time::sleep(self.gap).await;
            }
            let samples = batch.into_iter().map(|(i, ts, value)| Sample { series: ids[i], ts, value }).collect();
            ctx.read_ok(std::time::Duration::ZERO);
            tokio::select! {
                biased;
                _ = ctx.shutdown() => return Ok(()),
                sent = ctx.send(Batch { samples, notes: Vec::new() }) => sent?,
            }
        }
        Ok(())
    }
}
