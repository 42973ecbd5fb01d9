//! The jobs' step time through the Prometheus sensor's text parser.

use std::collections::HashMap;

use engine::{Labels, Nanos, Sample, SampleKind, SensorContext, SeriesId, SeriesSpec, SeriesTable, Value};
use sim::fabric::Fabric;

use super::context;

/// The jobs' Prometheus text.
pub struct PromReader {
    ctx: SensorContext,
    series: HashMap<(String, Labels), SeriesId>,
}

impl PromReader {
    /// A reader registering into `table`.
    pub fn new(table: &SeriesTable) -> PromReader {
        PromReader { ctx: context(table, "prometheus@jobs"), series: HashMap::new() }
    }

    /// Parses the fabric's exposition text, stamped `ts`, into `out`.
    pub fn poll(&mut self, fabric: &Fabric, ts: Nanos, out: &mut Vec<Sample>) {
        let text = sim::fabric::prom::render(fabric);
        let parsed = match sensors::prometheus::parse::parse(&text) {
            Ok(p) => p,
            Err(error) => {
                tracing::warn!(message = "Exposition text refused.", %error);
                return;
            }
        };
        for p in parsed {
            if !p.value.is_finite() {
                continue;
            }
            let labels = Labels(p.labels.into_iter().collect());
            let key = (p.name, labels);
            let id = match self.series.get(&key) {
                Some(id) => *id,
                None => match self.ctx.register(&SeriesSpec {
                    metric: key.0.clone(),
                    labels: key.1.clone(),
                    kind: SampleKind::Gauge,
                }) {
                    Ok(id) => {
                        self.series.insert(key, id);
                        id
                    }
                    Err(_) => continue,
                },
            };
            out.push(Sample { series: id, ts, value: Value::Real(p.value) });
        }
    }
}
