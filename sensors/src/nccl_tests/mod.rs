//! The `nccl_tests` sensor: follows the output of an nccl-tests binary
//! (`all_reduce_perf`, `all_gather_perf`, …) as it is written, like
//! `tail -f`, and turns each result row into gauges.
//!
//! Per row, labelled `collective`, `job` and `size` (bytes):
//! `nccl_size_bytes`, and with `placement` = `out-of-place` / `in-place`:
//! `nccl_time_us`, `nccl_algbw_gbps`, `nccl_busbw_gbps`. The closing
//! `# Avg bus bandwidth : X` line becomes `nccl_avg_busbw_gbps`.
//!
//! The collective comes from the output itself: `# Collective test
//! starting: all_reduce_perf` (nccl-tests ≥ 2.13), or a command line naming
//! an `*_perf` binary; failing both, the configured `collective`.
//!
//! - [`config`]: [`NcclTestsConfig`], the user's settings;
//! - [`parse`]: [`Parser`], line by line, without I/O;
//! - [`follow`]: [`Follower`], appended bytes of a file, surviving truncation;
//! - [`sensor`]: [`NcclTestsSensor`], the loop.

pub mod config;
pub mod follow;
pub mod parse;
pub mod sensor;

pub use config::NcclTestsConfig;
pub use follow::Follower;
pub use parse::{Parsed, Parser};
pub use sensor::NcclTestsSensor;
