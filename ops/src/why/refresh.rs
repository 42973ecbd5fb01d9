//! Counters a switch refreshes less often than they are read. SONiC's
//! flex counters poll a queue's counters (`QUEUE`, `WRED_ECN_QUEUE`) every
//! 10 s while gNMI serves COUNTERS_DB every second: read each second, the
//! value stands still for ten readings, then jumps. Its rate per reading is
//! 0, 0, …, 0, then ten seconds' worth at once, and a median over them is
//! 0 however hard the queue marks. Read over its refresh edges instead, each
//! jump is spread over the readings since the previous one: the rate the
//! queue really had.
//!
//! Only where a refresh is known to be slower than the reading (the
//! switch's queue counters), and only when the jumps come regularly: an
//! error counter's burst after a quiet hour is a burst, not an hour of
//! errors.

use engine::Nanos;

/// Whether `metric` is a counter the switch refreshes more slowly than it
/// is read (SONiC's queue counters: `QUEUE_STAT_FLEX_COUNTER_POLLING_INTERVAL_MS`, 10 s).
pub fn refreshed_slowly(metric: &str) -> bool {
    metric.starts_with("switch_queue_") && !metric.contains("occupancy") && !metric.contains("watermark")
}

/// `points` (a rate, one point per reading) with each jump spread over the
/// readings since the previous jump, when the jumps come at a regular
/// period of 3 readings or more; `points` unchanged otherwise.
pub fn over_refresh_edges(points: Vec<(Nanos, f64)>) -> Vec<(Nanos, f64)> {
    let jumps: Vec<usize> = (0..points.len()).filter(|&i| points[i].1 != 0.0).collect();
    if jumps.len() < 4 || jumps.len() * 2 > points.len() {
        return points;
    }
    let mut gaps: Vec<usize> = jumps.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let period = gaps[gaps.len() / 2];
    let near = |g: usize| g.abs_diff(period) <= (period / 4).max(1);
    if period < 3 || gaps.iter().filter(|g| near(**g)).count() * 5 < gaps.len() * 3 {
        return points;
    }
    let mut out: Vec<(Nanos, f64)> = points.iter().map(|(t, _)| (*t, 0.0)).collect();
    let mut previous: Option<usize> = None;
    for &k in &jumps {
        // The readings since the previous jump, at most one and a half periods.
        let run = previous.map_or(period, |p| k - p).min(period + period / 2).min(k + 1);
        let share = points[k].1 / run as f64;
        for slot in &mut out[k + 1 - run..=k] {
            slot.1 += share;
        }
        previous = Some(k);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_second(values: &[f64]) -> Vec<(Nanos, f64)> {
        values.iter().enumerate().map(|(i, v)| (i as Nanos * engine::SECOND, *v)).collect()
    }

    #[test]
    fn a_counter_refreshed_every_ten_readings_reads_its_real_rate() {
        // 2e5 marks a second, refreshed every 10 s: 2e6 every tenth reading.
        let rates: Vec<f64> = (0..60).map(|i| if i % 10 == 9 { 2e6 } else { 0.0 }).collect();
        let spread = over_refresh_edges(every_second(&rates));
        let median = engine::stats::median(&spread.iter().map(|p| p.1).collect::<Vec<_>>());
        assert!((median - 2e5).abs() < 1.0, "{median}");
        let total: f64 = spread.iter().map(|p| p.1).sum();
        assert!((total - 6.0 * 2e6).abs() < 1.0, "nothing made up: {total}");
    }

    #[test]
    fn a_burst_after_a_quiet_spell_and_a_busy_counter_are_left_as_they_are() {
        let mut burst = vec![0.0; 60];
        burst[30..34].copy_from_slice(&[500.0, 800.0, 300.0, 100.0]);
        assert_eq!(over_refresh_edges(every_second(&burst)), every_second(&burst));
        let busy: Vec<f64> = (0..60).map(|i| 100.0 + i as f64).collect();
        assert_eq!(over_refresh_edges(every_second(&busy)), every_second(&busy));
        assert!(refreshed_slowly("switch_queue_ecn_marked_packets"));
        assert!(!refreshed_slowly("switch_queue_occupancy_bytes") && !refreshed_slowly("switch_pfc_rx_pkts"));
    }
}
