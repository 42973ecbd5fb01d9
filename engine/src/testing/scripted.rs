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
}

impl Scripted {
    /// A sensor `name` reading `series` (the batches name them by index).
    pub fn new(name: &str, series: Vec<SeriesSpec>) -> Scripted {
        Scripted { name: name.to_string(), series, batches: Vec::new() }
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
