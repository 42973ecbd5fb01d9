//! Windows: the values rules reason about, computed natively in Rust.
//!
//! A rule declares the windows it needs (`rate(metric, "1s")`, …); the
//! engine keeps one fixed-size accumulator per window and rule subject and
//! hands the script only the resulting numbers. Scripts never see samples.
//!
//! Every accumulator has a fixed size, whatever the sample rate: ranged
//! windows are rings of [`ring::BUCKETS`] buckets, so a window of range `R`
//! covers between `R·(BUCKETS−1)/BUCKETS` and `R` of history.

mod column;
mod ring;
mod spec;

pub use column::{Column, Observation};
pub use ring::{Ring, BUCKETS};
pub use spec::{WindowFn, WindowSpec};
