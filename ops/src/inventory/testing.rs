//! A fake sysfs tree shaped like an H100 node with ConnectX-7 NICs, for tests of discovery here
//! and in the integration tests.
//!
//! Pair `i` (a GPU and a NIC behind one Broadcom PCIe switch) hangs off root complex
//! `pci0000:<16·i>`: root port `<b>:01.0`, switch upstream port `<b+1>:00.0`, downstream ports
//! `<b+2>:00.0` (to the NIC at `<b+3>:00.0`, 0x15b3:0x1021) and `<b+2>:01.0` (to the GPU at
//! `<b+4>:00.0`, 0x10de:0x2330, class 0x030200). The first half of the pairs is on NUMA node 0,
//! the rest on node 1. Links are relative, as sysfs's are.

use std::path::Path;

/// Writes the tree under `root`: one pair per netdev name, RDMA devices `mlx5_<i>`.
pub fn write_h100(root: &Path, netdevs: &[&str]) -> std::io::Result<()> {
    let sys = root.join("sys");
    for (i, netdev) in netdevs.iter().enumerate() {
        let b = 0x10 * i;
        let numa = if i < netdevs.len().div_ceil(2) { 0 } else { 1 };
        let switch = format!("pci0000:{b:02x}/0000:{b:02x}:01.0/0000:{:02x}:00.0", b + 1);
        let nic_bdf = format!("0000:{:02x}:00.0", b + 3);
        let gpu_bdf = format!("0000:{:02x}:00.0", b + 4);
        let nic = format!("{switch}/0000:{:02x}:00.0/{nic_bdf}", b + 2);
        let gpu = format!("{switch}/0000:{:02x}:01.0/{gpu_bdf}", b + 2);
        // The bridges: Broadcom PEX switch ports and the root port.
        let bridges = [
            format!("pci0000:{b:02x}/0000:{b:02x}:01.0"),
            switch.clone(),
            format!("{switch}/0000:{:02x}:00.0", b + 2),
            format!("{switch}/0000:{:02x}:01.0", b + 2),
        ];
        for bridge in &bridges {
            function(&sys, bridge, "0x1000", "0xc030", "0x060400", numa)?;
        }
        function(&sys, &nic, "0x15b3", "0x1021", "0x020000", numa)?;
        function(&sys, &gpu, "0x10de", "0x2330", "0x030200", numa)?;
        std::fs::create_dir_all(sys.join("devices").join(&nic).join("net").join(netdev))?;
        let ib = sys.join("class/infiniband").join(format!("mlx5_{i}"));
        std::fs::create_dir_all(&ib)?;
        std::os::unix::fs::symlink(format!("../../../devices/{nic}"), ib.join("device"))?;
    }
    Ok(())
}

/// One PCI function at `path` below `/sys/devices`, and its link in `/sys/bus/pci/devices`.
fn function(sys: &Path, path: &str, vendor: &str, device: &str, class: &str, numa: u32) -> std::io::Result<()> {
    let dir = sys.join("devices").join(path);
    std::fs::create_dir_all(&dir)?;
    for (name, value) in [("vendor", vendor), ("device", device), ("class", class)] {
        std::fs::write(dir.join(name), format!("{value}\n"))?;
    }
    std::fs::write(dir.join("numa_node"), format!("{numa}\n"))?;
    let bus = sys.join("bus/pci/devices");
    std::fs::create_dir_all(&bus)?;
    let bdf = path.rsplit('/').next().unwrap_or(path);
    let link = bus.join(bdf);
    if link.symlink_metadata().is_err() {
        std::os::unix::fs::symlink(format!("../../../devices/{path}"), link)?;
    }
    Ok(())
}

/// A fake node in a temporary directory, removed on drop (unit tests).
#[cfg(test)]
pub struct FakeNode(tempfile::TempDir);

#[cfg(test)]
impl FakeNode {
    /// `pairs` GPU–NIC pairs, netdevs `eth<i>`.
    pub fn h100(pairs: usize) -> FakeNode {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..pairs).map(|i| format!("eth{i}")).collect();
        write_h100(dir.path(), &names.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        FakeNode(dir)
    }

    /// The tree's root, as `--sysfs-root` takes it.
    pub fn root(&self) -> &Path {
        self.0.path()
    }
}
