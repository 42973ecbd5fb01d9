//! The sensors against what they read — simulated switches, real veth
//! links in network namespaces, sysfs trees, local HTTP servers, an
//! independent gNMI target — linked as one test binary (`it`); each file
//! below was a binary of its own and keeps its tests' names under its module
//! (`cargo test -p rocemend-sensors --test it -- netlink_link::`). A new
//! file gets a `mod` line here, not a place directly under `tests/`, where
//! it would link a binary of its own.
//!
//! Shared by several files: [`gnmi_harness`] (a gnmi sensor on a simulated
//! switch) and [`netlink_link_util`] (a namespace with a veth pair; the
//! link-flap bench includes it too).
//!
//! A missing peer (root, iproute2, node_exporter, the interop Python) skips
//! the test on a laptop and fails it in CI (`test_peers`).

mod gnmi_harness;
mod netlink_link_util;

mod ethtool;
mod gnmi;
mod gnmi_interop;
mod nccl_tests;
mod netlink_link;
mod nvml;
mod prometheus;
mod rdma_sysfs;
mod verbs;
