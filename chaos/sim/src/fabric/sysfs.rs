//! The sysfs trees the simulated nodes expose: one
//! `<root>/<node>/class/infiniband/<dev>/ports/1/{counters,hw_counters}/*`
//! per NIC, with
//! `<dev>/device/net/<netdev>` naming the netdev, the layout the
//! `rdma_sysfs` sensor reads on a real host (pointed at `<root>/<node>`).
//!
//! Counters are rewritten in place at offset 0 with a fixed width, so a
//! reader that keeps the file open and re-reads it with `pread` (as the
//! sensor does) always sees a whole number: the file never shrinks under
//! it. Only values that changed are written.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::nic::Nic;

/// Width of a counter file: 20 digits (u64::MAX) and a newline. The value
/// is right-aligned in spaces, which every sysfs reader trims.
const WIDTH: usize = 21;

/// A sysfs tree could not be written.
#[derive(Debug, thiserror::Error)]
#[error("sysfs tree {path}: {source}")]
pub struct SysfsError {
    /// The file or directory.
    pub path: String,
    /// The error.
    pub source: std::io::Error,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SysfsError + '_ {
    move |source| SysfsError { path: path.display().to_string(), source }
}

struct CounterFile {
    file: File,
    path: PathBuf,
    last: Option<u64>,
}

/// The open counter files of every NIC, in the fabric's NIC order.
pub struct Tree {
    root: PathBuf,
    /// Per NIC, per counter of [`super::nic::Counters::files`] then
    /// [`super::nic::Counters::hw_files`].
    files: Vec<Vec<CounterFile>>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("root", &self.root).field("nics", &self.files.len()).finish()
    }
}

impl Tree {
    /// Creates the tree of `nics` under `root` and writes their counters.
    pub fn create(root: &Path, nics: &[Nic]) -> Result<Tree, SysfsError> {
        let mut files = Vec::with_capacity(nics.len());
        for nic in nics {
            let dev = Tree::node_root(root, &nic.node).join("class/infiniband").join(&nic.rdma_dev);
            let net = dev.join("device/net").join(&nic.netdev);
            std::fs::create_dir_all(&net).map_err(io(&net))?;
            let counters = dev.join("ports/1/counters");
            let hw = dev.join("ports/1/hw_counters");
            let mut open = Vec::new();
            for (dir, names) in [
                (&counters, nic.counters.files().map(|f| f.0).to_vec()),
                (&hw, nic.counters.hw_files().map(|f| f.0).to_vec()),
            ] {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
                for name in names {
                    let path = dir.join(name);
                    let file =
                        File::options().create(true).truncate(true).write(true).open(&path).map_err(io(&path))?;
                    open.push(CounterFile { file, path, last: None });
                }
            }
            files.push(open);
        }
        let mut tree = Tree { root: root.to_path_buf(), files };
        tree.write(nics)?;
        Ok(tree)
    }

    /// Where node `node`'s sysfs is mounted: the `root` to give its
    /// `rdma_sysfs` sensor.
    pub fn node_root(root: &Path, node: &str) -> PathBuf {
        root.join(node)
    }

    /// The tree's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes the counters that changed since the last write.
    pub fn write(&mut self, nics: &[Nic]) -> Result<(), SysfsError> {
        for (nic, files) in nics.iter().zip(&mut self.files) {
            let values = nic.counters.files().into_iter().chain(nic.counters.hw_files());
            for ((_, value), f) in values.zip(files.iter_mut()) {
                if f.last == Some(value) {
                    continue;
                }
                let text = format!("{value:>width$}\n", width = WIDTH - 1);
                f.file.write_all_at(text.as_bytes(), 0).map_err(io(&f.path))?;
                f.last = Some(value);
            }
        }
        Ok(())
    }
}
