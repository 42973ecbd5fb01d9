//! The sensors against what they read — simulated switches, real veth
//! links in network namespaces, sysfs trees, local HTTP servers, an
//! independent gNMI target — through the crate's public API, as a user of
//! the crate writes them (`use sensors::…`, see `extern crate self` in
//! `lib.rs`). They were an integration-test binary of their own; as unit
//! tests they link into the crate's one test binary instead (`cargo test -p
//! rocemend-sensors -- tests::netlink_link::`). Keep them to the public API
//! all the same. A new file gets a `mod` line here, never a place under
//! `tests/`, where it would link a binary of its own.
//!
//! Shared by several files: [`gnmi_harness`] (a gnmi sensor on a simulated
//! switch) and [`netlink_link_util`] (a namespace with a veth pair; the
//! link-flap bench includes it too).
//!
//! A missing peer (root, iproute2, node_exporter, the interop Python) skips
//! the test on a laptop and fails it in CI (`test_peers`).

mod gnmi_harness;
mod netlink_link_util;

mod build;
mod ethtool;
mod gnmi;
mod gnmi_interop;
mod gnmi_sonic;
mod nccl_tests;
mod netlink_link;
mod nvml;
mod prometheus;
mod rdma_sysfs;
mod sonic_redis;
mod verbs;
