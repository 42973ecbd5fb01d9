//! A sysfs tree in the real mlx5 layout, written into a temp dir: the
//! `class/infiniband/<dev>` symlink into `devices/…/<pci>/infiniband/<dev>`,
//! `<dev>/device` pointing at the PCI function, the function's `net/<netdev>`,
//! and each port's `counters/` and `hw_counters/` with the driver's files.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// IB PMA counters as mlx5 exposes them under `ports/<p>/counters`.
pub const PMA: &[&str] = &[
    "VL15_dropped",
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "multicast_rcv_packets",
    "multicast_xmit_packets",
    "port_rcv_constraint_errors",
    "port_rcv_data",
    "port_rcv_errors",
    "port_rcv_packets",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_xmit_data",
    "port_xmit_discards",
    "port_xmit_packets",
    "port_xmit_wait",
    "symbol_error",
    "unicast_rcv_packets",
    "unicast_xmit_packets",
];

/// mlx5 `hw_counters` (without `lifespan`, which is written separately).
pub const HW: &[&str] = &[
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "req_rnr_retries_exceeded",
    "req_transport_retries_exceeded",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "rx_atomic_requests",
    "rx_dct_connect",
    "rx_icrc_encapsulated",
    "rx_read_requests",
    "rx_write_requests",
];

/// A fake sysfs root.
pub struct Tree {
    pub dir: tempfile::TempDir,
}

impl Tree {
    /// `devices` mlx5 devices (`mlx5_0`, …) with `ports` ports each; every
    /// counter starts at 0; device `mlx5_<i>` has netdev `ens<i>f0np0`.
    pub fn mlx5(devices: usize, ports: usize) -> Tree {
        let tree = Tree { dir: tempfile::tempdir().unwrap() };
        fs::create_dir_all(tree.root().join("class/infiniband")).unwrap();
        for d in 0..devices {
            tree.add_device(d, ports);
        }
        tree
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    fn pci(d: usize) -> String {
        format!("0000:{:02x}:00.0", 0x1b + d)
    }

    /// The real directory of device `d` (what the class symlink points at).
    pub fn device_dir(&self, d: usize) -> PathBuf {
        self.root().join(format!("devices/pci0000:00/{}/infiniband/mlx5_{d}", Tree::pci(d)))
    }

    pub fn add_device(&self, d: usize, ports: usize) {
        let pci_dir = self.root().join(format!("devices/pci0000:00/{}", Tree::pci(d)));
        fs::create_dir_all(pci_dir.join(format!("net/ens{d}f0np0"))).unwrap();
        let dev = self.device_dir(d);
        for p in 1..=ports {
            let port = dev.join(format!("ports/{p}"));
            fs::create_dir_all(port.join("counters")).unwrap();
            fs::create_dir_all(port.join("hw_counters")).unwrap();
            for name in PMA {
                fs::write(port.join("counters").join(name), "0\n").unwrap();
            }
            for name in HW {
                fs::write(port.join("hw_counters").join(name), "0\n").unwrap();
            }
            fs::write(port.join("hw_counters/lifespan"), "10\n").unwrap();
        }
        let device_link = dev.join("device");
        if !device_link.exists() {
            std::os::unix::fs::symlink(format!("../../../{}", Tree::pci(d)), &device_link).unwrap();
        }
        let class = self.root().join(format!("class/infiniband/mlx5_{d}"));
        if fs::symlink_metadata(&class).is_err() {
            let target = format!("../../devices/pci0000:00/{}/infiniband/mlx5_{d}", Tree::pci(d));
            std::os::unix::fs::symlink(target, &class).unwrap();
        }
    }

    /// Unplugs device `d`: its class link and its directory go away.
    pub fn remove_device(&self, d: usize) {
        fs::remove_file(self.root().join(format!("class/infiniband/mlx5_{d}"))).unwrap();
        fs::remove_dir_all(self.device_dir(d)).unwrap();
    }

    /// Sets counter `dir/name` (`dir` is `counters` or `hw_counters`) of
    /// device `d`, port `p`, in place: `fs::write` truncates the same inode,
    /// so a file the sensor keeps open sees the new value.
    pub fn set(&self, d: usize, p: usize, dir: &str, name: &str, value: u64) {
        fs::write(self.device_dir(d).join(format!("ports/{p}/{dir}/{name}")), format!("{value}\n")).unwrap();
    }
}
