//! [`Samples`]: a decoded block handed out whole, series by series, for
//! readers that fold many samples (`why`'s buckets) and need not see them
//! one event at a time in time order.

use std::ops::Range;

use super::block::Flat;
use crate::series::Value;
use crate::time::Nanos;

/// The wanted samples of one block: each wanted series' run of samples,
/// ascending by id, each run ascending in time.
#[derive(Clone, Copy)]
pub struct Samples<'a> {
    pub(super) times: &'a [Nanos],
    pub(super) flat: &'a Flat,
    /// The time indexes within the selection's range: a block at the edge
    /// of the range holds samples on both sides.
    pub(super) wanted: (u32, u32),
}

impl<'a> Samples<'a> {
    /// The block's time table, ascending: a sample's time index points
    /// into it.
    pub fn times(&self) -> &'a [Nanos] {
        self.times
    }

    /// The time indexes the selection wants.
    pub fn wanted(&self) -> Range<u32> {
        self.wanted.0..self.wanted.1
    }

    /// Each wanted series' samples.
    pub fn runs(&self) -> impl Iterator<Item = Run<'a>> + 'a {
        let (flat, wanted) = (self.flat, self.wanted);
        let starts = std::iter::once(0).chain(flat.runs.iter().map(|r| r.1 as usize));
        flat.runs.iter().zip(starts).map(move |(&(id, end), start)| Run {
            id,
            at: &flat.at[start..end as usize],
            values: &flat.values[start..end as usize],
            wanted,
        })
    }
}

/// One series' samples in a block.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    /// The series' id in its segment.
    pub id: u32,
    at: &'a [u32],
    values: &'a [Value],
    wanted: (u32, u32),
}

impl<'a> Run<'a> {
    /// Its samples the selection wants: (time index, value), in time order.
    pub fn samples(&self) -> impl Iterator<Item = (u32, Value)> + 'a {
        let (at, values) = self.wanted_slices();
        at.iter().copied().zip(values.iter().copied())
    }

    /// Its samples the selection wants, as two slices of one length: each
    /// sample's time index, and its value. The wanted samples are one
    /// stretch of the run (its times ascend), so this is two searches.
    pub fn wanted_slices(&self) -> (&'a [u32], &'a [Value]) {
        let (lo, hi) = self.wanted;
        let a = self.at.partition_point(|k| *k < lo);
        let b = self.at.partition_point(|k| *k < hi);
        (&self.at[a..b], &self.values[a..b])
    }
}
