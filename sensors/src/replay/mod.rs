//! The `replay` sensor: plays a recording back into the engine.
//!
//! A recording is the JSON-lines format of [`engine::recording`]: series
//! declarations, samples and notes in time order. The sensor registers each
//! declared series with the engine, groups consecutive lines that share a
//! timestamp into one [`Batch`](engine::Batch), and paces the batches by
//! recorded time divided by the configured speed (1 = real time, 10 = ten
//! times faster, 0 = as fast as the engine takes them). Samples keep their
//! recorded timestamps, so rules see the recorded timeline whatever the speed.
//!
//! Pacing runs on `tokio::time`, so tests drive it with a paused clock.
//!
//! - [`config`]: [`ReplayConfig`], the user's settings;
//! - [`sensor`]: [`ReplaySensor`], the running part.

pub mod config;
pub mod sensor;

pub use config::ReplayConfig;
pub use sensor::ReplaySensor;

#[cfg(test)]
mod tests;
