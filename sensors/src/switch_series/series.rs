//! The engine series of one switch's readings: each registered once, each sample stamped after
//! its series' last one.

use std::collections::HashMap;

use compact_str::CompactString;
use engine::{Sample, SensorContext, SeriesId};

use super::reading::Reading;

/// A reading's series key: port, metric, queue, priority.
type Key = (CompactString, &'static str, Option<u8>, Option<u8>);

/// The series of switch `switch`, as readings arrive.
#[derive(Debug)]
pub struct SwitchSeries {
    switch: String,
    known: HashMap<Key, (SeriesId, i64)>,
}

impl SwitchSeries {
    /// The series of switch `switch` (its `switch` label).
    pub fn new(switch: &str) -> SwitchSeries {
        SwitchSeries { switch: switch.to_string(), known: HashMap::new() }
    }

    /// The switch's name.
    pub fn switch(&self) -> &str {
        &self.switch
    }

    /// `readings` as samples stamped `ts` (or just after their series' last sample, when that
    /// is not before `ts`: two reads within one clock tick), appended to `out`. A series the
    /// engine refuses (the sensor's cap) is left out; the first refusal is returned.
    pub fn samples(
        &mut self,
        ctx: &SensorContext,
        readings: &[Reading],
        ts: i64,
        out: &mut Vec<Sample>,
    ) -> Option<engine::series::SeriesError> {
        let mut refused = None;
        for r in readings {
            let key = (r.port.clone(), r.metric, r.queue, r.prio);
            let (id, last) = match self.known.get(&key) {
                Some(&known) => known,
                None => match ctx.register(&r.spec(&self.switch)) {
                    Ok(id) => (id, i64::MIN),
                    Err(e) => {
                        refused.get_or_insert(e);
                        continue;
                    }
                },
            };
            let stamp = if ts > last { ts } else { last.saturating_add(1) };
            if stamp <= last {
                continue; // a stamp at the end of time: nothing can follow it
            }
            self.known.insert(key, (id, stamp));
            out.push(Sample { series: id, ts: stamp, value: r.value() });
        }
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SeriesTable;

    #[test]
    fn a_series_is_registered_once_and_its_stamps_only_go_forward() {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        let ctx = SensorContext::new(SeriesTable::default(), "sonic_redis", 1, tx, shutdown);
        let mut series = SwitchSeries::new("leaf01");
        let reading = Reading::counter("switch_pfc_rx_pkts", "Ethernet0", None, Some(3), 7);
        let mut out = Vec::new();
        assert!(series.samples(&ctx, std::slice::from_ref(&reading), 100, &mut out).is_none());
        assert!(series.samples(&ctx, std::slice::from_ref(&reading), 100, &mut out).is_none());
        assert!(series.samples(&ctx, std::slice::from_ref(&reading), 50, &mut out).is_none());
        let stamps: Vec<i64> = out.iter().map(|s| s.ts).collect();
        assert_eq!(stamps, [100, 101, 102]);
        assert!(out.iter().all(|s| s.series == out[0].series));
        // The sensor's cap is one series: a second one is refused, and said so.
        let other = Reading::counter("switch_pfc_tx_pkts", "Ethernet0", None, Some(3), 1);
        assert!(series.samples(&ctx, &[other], 200, &mut out).is_some());
        assert_eq!(out.len(), 3);
    }
}
