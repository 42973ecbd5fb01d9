//! Fleet coordination with a real etcd, linked as one test binary (`it`)
//! that only a build with the `etcd` feature has (`required-features` in
//! Cargo.toml: without it every file here compiles to nothing, so
//! `cargo test --workspace` links no empty binary for them). Each file below
//! was a binary of its own and keeps its tests' names under its module
//! (`cargo test -p rocemend-fleet --features etcd --test it -- shard::`).
//!
//! [`common`] starts etcd clusters and wires daemons' dispatchers to them.
//! Without an `etcd` binary a test skips on a laptop and fails in CI
//! (`test_peers`).

mod common;

mod aggregator;
mod budget;
mod leadership;
mod shard;
