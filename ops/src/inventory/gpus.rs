//! A node's GPUs, numbered as NVML numbers them: from NVML when the driver is there, else from
//! sysfs (NVIDIA functions of a display class, in PCI address order, the order NVML
//! enumerates them in), and the fragment says which.

use std::path::{Path, PathBuf};

use nvml_wrapper::Nvml;

use crate::inventory::sysfs::{normalize_bdf, PciFunction, Sysfs};
use crate::inventory::DiscoverError;

/// Where GPUs are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSource {
    /// NVML when the sysfs root is `/` and NVML loads, else sysfs.
    Auto,
    /// NVML only (the library at this path, or the default one).
    Nvml(Option<PathBuf>),
    /// Sysfs only.
    Sysfs,
}

/// One GPU and where it came from.
#[derive(Debug, Clone)]
pub struct FoundGpu {
    /// NVML index.
    pub index: u32,
    /// Its PCI function in the tree.
    pub pci: PciFunction,
    /// Where the index and bus id came from.
    pub how: String,
}

/// The GPUs, and a line for the fragment's header saying where they came from.
pub fn find(source: &GpuSource, sysfs: &Sysfs, root: &Path) -> Result<(Vec<FoundGpu>, String), DiscoverError> {
    match source {
        GpuSource::Nvml(lib) => {
            let gpus = from_nvml(lib.as_deref(), sysfs).map_err(DiscoverError::Nvml)?;
            Ok((gpus, "GPUs from NVML".to_string()))
        }
        GpuSource::Sysfs => Ok((from_sysfs(sysfs)?, "GPUs from sysfs (asked for)".to_string())),
        // NVML reads this machine; a tree under another root is another machine's.
        GpuSource::Auto if root != Path::new("/") => Ok((
            from_sysfs(sysfs)?,
            format!("GPUs from sysfs: NVML not consulted, the sysfs root is {}", root.display()),
        )),
        GpuSource::Auto => match from_nvml(None, sysfs) {
            Ok(gpus) => Ok((gpus, "GPUs from NVML".to_string())),
            Err(why) => Ok((from_sysfs(sysfs)?, format!("GPUs from sysfs, not NVML: {why}"))),
        },
    }
}

fn from_sysfs(sysfs: &Sysfs) -> Result<Vec<FoundGpu>, DiscoverError> {
    let gpus = sysfs.gpus()?;
    Ok((0u32..)
        .zip(gpus)
        .map(|(index, g)| FoundGpu {
            index,
            how: format!("sysfs: vendor 0x10de class {}, index by PCI address order (NVML absent)", g.class),
            pci: g.pci,
        })
        .collect())
}

fn from_nvml(lib: Option<&Path>, sysfs: &Sysfs) -> Result<Vec<FoundGpu>, String> {
    let nvml = match lib {
        Some(path) => Nvml::builder().lib_path(path.as_os_str()).init(),
        None => Nvml::init(),
    }
    .map_err(|e| format!("NVML did not start ({e})"))?;
    let count = nvml.device_count().map_err(|e| format!("NVML cannot count GPUs: {e}"))?;
    let mut out = Vec::new();
    for index in 0..count {
        let bus = (nvml.device_by_index(index).and_then(|d| d.pci_info()))
            .map_err(|e| format!("NVML GPU {index}: {e}"))?
            .bus_id;
        let pci = sysfs.pci_function(&normalize_bdf(&bus)).map_err(|e| format!("NVML GPU {index} at {bus}: {e}"))?;
        out.push(FoundGpu { index, pci, how: "NVML (nvmlDeviceGetPciInfo)".to_string() });
    }
    Ok(out)
}
