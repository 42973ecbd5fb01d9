//! The `prometheus` sensor: scrapes exporters' text exposition over HTTP
//! (a DCGM exporter, a node exporter, a switch agent) into the engine.
//!
//! Each target has its own task, interval and timeout, so one that is down
//! or slow never stalls the others. Samples of `counter` families (and the
//! `_bucket`/`_count` of histograms and summaries) become 64-bit wrapping
//! counters of the value rounded to an integer; everything else becomes a
//! gauge. Names keep their suffixes (`_total`), with the target's `prefix`
//! in front; `allow` keeps only some metrics and `labels` keeps and renames
//! only some labels. A target that refuses the connection, times out or
//! answers garbage is reported (`connect`, `timeout`, `http`, `parse`).
//!
//! - [`config`]: [`PrometheusConfig`] and [`ScrapeTargetConfig`];
//! - [`http`]: a minimal HTTP/1.1 GET client;
//! - [`parse`]: the text exposition format, read without copying;
//! - [`map`]: [`Mapper`], from a page to engine samples through a cache of
//!   series ids;
//! - [`sensor`]: [`PrometheusSensor`], the scrape tasks.

pub mod config;
pub mod http;
pub mod map;
pub mod parse;
pub mod sensor;

pub use config::{PrometheusConfig, ScrapeTargetConfig};
pub use map::Mapper;
pub use sensor::PrometheusSensor;
