//! Samples in: each series routed once to the rule subjects and windows
//! it feeds, then every sample decoded (counters) and folded into those
//! windows, its subjects marked for the next evaluation.

use std::collections::BTreeMap;

use super::refusal::{Refusal, Refusals, SteppedBack};
use super::rule_state::{Route, SeriesState, REFUSED, UNROUTED};
use super::subject::{key_of, reserve_for_push, Epoch, Subject, NEVER};
use super::EngineStats;
use super::Evaluator;
use crate::counter::{self, CounterSpec, Increase};
use crate::instance::State;
use crate::labels::Sym;
use crate::series::{Sample, SampleKind, SeriesId};
use crate::time::Nanos;
use crate::window::Observation;

impl Evaluator {
    /// Indexes the rules by the metrics they select, and has every known
    /// series routed again on its next sample (after a new rule set).
    pub(super) fn rebuild_index(&mut self) {
        self.by_metric.clear();
        for (ri, rt) in self.rules.iter().enumerate() {
            let mut per_metric: BTreeMap<Sym, Vec<u16>> = BTreeMap::new();
            for (si, sel) in rt.rule.selectors.iter().enumerate() {
                let sym = self.series.intern(&sel.metric);
                per_metric.entry(sym).or_default().push(si as u16);
            }
            for (sym, sels) in per_metric {
                self.by_metric.entry(sym).or_default().push((ri as u16, sels));
            }
        }
        // Visit every rule on the next evaluation: instances and restored
        // proposals may have come with the new set.
        self.pending_rules.clear();
        self.live_rules = (0..self.rules.len() as u16).collect();
        // Every known series is routed again on its next sample.
        self.routes.clear();
        for st in &mut self.states {
            st.route_len = UNROUTED;
        }
    }

    /// Computes the routes of series `idx`: which rules it feeds, as which
    /// subject, through which windows. Runs once per series (and after a reload).
    /// A series with a bad label feeds no rule: its labels would reach
    /// targets and commands; its samples are refused ([`REFUSED`]).
    #[cold]
    fn route(&mut self, idx: usize) {
        let reg = self.series.read();
        if idx >= self.states.len() {
            if idx >= self.states.capacity() {
                self.states.reserve_exact((idx + 1 - self.states.len()).max(self.states.capacity() / 4 + 16));
            }
            self.states.resize(
                idx + 1,
                SeriesState {
                    last: 0,
                    last_ts: Nanos::MIN,
                    kind: SampleKind::Gauge,
                    route_start: 0,
                    route_len: UNROUTED,
                },
            );
        }
        let id = SeriesId(idx as u32);
        let info = reg.info(id);
        if info.bad_label.is_some() {
            self.states[idx].route_len = REFUSED;
            return;
        }
        let labels = info.labels.to_labels(reg.interner());
        self.job_series.note(id, info, reg.interner(), self.scripts.helpers());
        let start = self.routes.len() as u32;
        if let Some(candidates) = self.by_metric.get(&info.metric) {
            for (ri, sels) in candidates {
                let rt = &mut self.rules[*ri as usize];
                if !sels.iter().any(|s| rt.rule.selectors[*s as usize].matches(&labels)) {
                    continue;
                }
                let key = key_of(&info.labels, &rt.group_by);
                let found = rt.subject_index.find(&key, &rt.subjects, &rt.group_by, &reg, &rt.narrowed);
                let subject = match found {
                    Some(s) => {
                        // Keep only the labels every series of the subject shares.
                        rt.subjects[s as usize].narrow(&info.labels, &reg, &mut rt.narrowed);
                        s
                    }
                    None => {
                        let s = rt.subjects.len() as u32;
                        reserve_for_push(&mut rt.subjects);
                        rt.subjects.push(Subject::new(id));
                        rt.subject_index.insert(&key, s, &rt.subjects, &rt.group_by, &reg, &rt.narrowed);
                        for c in &mut rt.columns {
                            c.grow(rt.subjects.len());
                        }
                        if !rt.restored.is_empty() {
                            let subject_key = rt.subject_key(&labels);
                            if let Some(inst) = rt.restored.remove(&subject_key) {
                                if inst.state == State::Firing {
                                    self.scripts.helpers().firing_started(&rt.rule.name, labels.clone());
                                    if rt.from_store.remove(&subject_key) {
                                        rt.repropose.push(s);
                                    }
                                }
                                rt.instances.insert(s, inst);
                            }
                        }
                        s
                    }
                };
                if info.kind != SampleKind::Event {
                    rt.subjects[subject as usize].set_polled();
                }
                let slot = rt.metric_windows.iter().position(|(m, _)| *m == info.metric).unwrap_or(0) as u16;
                reserve_for_push(&mut self.routes);
                self.routes.push(Route { rule: *ri, slot, subject });
            }
        }
        let st = &mut self.states[idx];
        st.kind = info.kind;
        st.route_start = start;
        st.route_len = (self.routes.len() as u32 - start) as u16;
    }

    /// Ingests a batch of samples: counters decoded, windows updated,
    /// subjects marked for evaluation. No script runs here.
    pub fn ingest(&mut self, samples: &[Sample]) {
        // The samples of one poll share a timestamp: its tick is computed
        // once (a 64-bit division), not per sample.
        let mut last_tick = None;
        for s in samples {
            self.ingest_one(s, &mut last_tick);
        }
    }

    #[inline]
    fn ingest_one(&mut self, s: &Sample, last_tick: &mut Option<(Nanos, i32)>) {
        let idx = s.series.0 as usize;
        let epoch = *self.epoch.get_or_insert(Epoch(s.ts));
        if idx >= self.states.len() || self.states[idx].route_len == UNROUTED {
            self.route(idx);
            self.routed_at = Some(s.ts);
        }
        let st = &self.states[idx];
        if st.route_len == REFUSED {
            self.refuse_label(s);
            return;
        }
        if st.has_last() && s.ts < st.last_ts {
            if st.last_ts - s.ts <= super::STEP_BACK_AFTER {
                self.stats.out_of_order += 1;
                return;
            }
            self.step_back(idx, s);
        }
        let st = &mut self.states[idx];
        let obs = match st.kind {
            SampleKind::Counter(spec) => {
                let Some(obs) = counter_observation(&mut self.stats, &mut self.refusals, st, s, spec) else { return };
                obs
            }
            SampleKind::Gauge => {
                let x = s.value.as_f64();
                let step = if st.has_last() { x - f64::from_bits(st.last) } else { f64::NAN };
                st.last = x.to_bits();
                Observation { ts: s.ts, step, level: x, value: x }
            }
            SampleKind::Event => {
                let x = s.value.as_f64();
                Observation { ts: s.ts, step: 1.0, level: x, value: x }
            }
        };
        self.stats.samples += 1;
        st.last_ts = s.ts;
        if s.ts > self.newest_sample {
            self.newest_sample = s.ts;
        }
        let polled = !matches!(st.kind, SampleKind::Event);
        let tick = match *last_tick {
            Some((ts, tick)) if ts == s.ts => tick,
            _ => last_tick.insert((s.ts, epoch.tick(s.ts))).1,
        };
        let (start, len) = (st.route_start as usize, st.route_len as usize);
        for r in &self.routes[start..start + len] {
            let rt = &mut self.rules[r.rule as usize];
            let subject = r.subject as usize;
            for &w in &rt.metric_windows[r.slot as usize].1 {
                rt.columns[w as usize].observe(subject, idx as u32, &obs);
            }
            let subj = &mut rt.subjects[subject];
            if subj.first_seen == NEVER {
                subj.first_seen = tick;
            }
            if polled && tick > subj.last_seen {
                subj.last_seen = tick;
            }
            if !subj.dirty() {
                subj.set_dirty(true);
                if rt.dirty.is_empty() {
                    self.pending_rules.push(r.rule);
                }
                rt.dirty.push(r.subject);
            }
        }
    }
}

impl Evaluator {
    /// Refuses sample `s` of a series with a bad label: counted, and noted
    /// with the reason for its sensor's health and the log.
    #[cold]
    fn refuse_label(&mut self, s: &Sample) {
        self.stats.refused.bad_label += 1;
        if let Some(bad) = self.series.read().info(s.series).bad_label {
            self.refusals.note(s, Refusal::Label(bad));
        }
    }

    /// The clock of series `idx` stepped back (sample `s`, far older than
    /// its last): counted, noted for the caller, and the series taken up
    /// again from `s` as if new: a new counter baseline, the windows it
    /// feeds emptied for its subjects (what they hold is stamped in a future
    /// the series would not reach for as long as the step), and their last
    /// sample time moved back with it, so a subject fed only by a wrong
    /// clock goes stale rather than firing on.
    #[cold]
    fn step_back(&mut self, idx: usize, s: &Sample) {
        let st = &mut self.states[idx];
        self.stats.steps_back += 1;
        if self.steps_back.len() < Refusals::KEPT {
            self.steps_back.push(SteppedBack { series: s.series, from: st.last_ts, to: s.ts });
        }
        st.last_ts = Nanos::MIN;
        let (start, len) = (st.route_start as usize, st.route_len as usize);
        for r in &self.routes[start..start + len] {
            let rt = &mut self.rules[r.rule as usize];
            let subject = r.subject as usize;
            for &w in &rt.metric_windows[r.slot as usize].1 {
                rt.columns[w as usize].reset(subject);
            }
            rt.subjects[subject].last_seen = NEVER;
        }
    }
}

/// A counter sample decoded into the observation its windows fold, its
/// wraps, resets and saturations counted; `None` when it is refused
/// (counted and reported). Always inlined: it is the per-sample path, split
/// out of [`Evaluator::ingest_one`] for reading, not for a call.
#[inline(always)]
fn counter_observation(
    stats: &mut EngineStats,
    refusals: &mut Refusals,
    st: &mut SeriesState,
    s: &Sample,
    spec: CounterSpec,
) -> Option<Observation> {
    let prev = st.has_last().then_some((st.last, st.last_ts));
    let decoded = match counter::decode(spec, prev, s.value, s.ts) {
        Ok(decoded) => decoded,
        Err(bad) => {
            stats.refused.bad_counter += 1;
            refusals.note(s, Refusal::Counter(bad));
            return None;
        }
    };
    match decoded.increase {
        Some(Increase::Wrapped(_)) => stats.counter_wraps += 1,
        Some(Increase::Reset) => stats.counter_resets += 1,
        Some(Increase::Saturated(_)) => stats.counter_saturated += 1,
        Some(Increase::Implausible(amount)) => {
            stats.refused.implausible += 1;
            refusals.note(s, Refusal::Implausible { amount, dt: decoded.dt });
        }
        Some(Increase::Normal(_)) | None => {}
    }
    let (step, level) = decoded.step_and_rate();
    st.last = decoded.raw;
    Some(Observation { ts: s.ts, step, level, value: decoded.raw as f64 })
}
