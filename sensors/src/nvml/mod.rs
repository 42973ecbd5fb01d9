//! The `nvml` sensor: GPU health from the NVIDIA Management Library.
//!
//! `libnvidia-ml.so` is loaded at run time (nvml-wrapper opens it with
//! `dlopen`), so the daemon builds and runs on hosts without NVIDIA
//! software; there, and on hosts without GPUs, the sensor reports
//! [`HealthState::Unavailable`](engine::HealthState::Unavailable) with the
//! reason and idles until shutdown.
//!
//! Per GPU (labels `gpu` = NVML index and `pci_bus_id`) it emits
//!
//! - `gpu_xid{xid}`: an event per critical XID, pushed from an NVML event
//!   set waited on by a dedicated thread; the value is the XID (999 when
//!   NVML does not know it);
//! - `gpu_nvlink_{dl_replay,dl_recovery,dl_crc_flit,dl_crc_data}_errors{link}`:
//!   64-bit counters per active NVLink;
//! - `gpu_pcie_replay_count`: 32-bit wrapping counter;
//! - `gpu_temperature_celsius`, `gpu_utilization_percent`,
//!   `gpu_memory_utilization_percent`: gauges, polled.
//!
//! - [`config`]: [`NvmlConfig`], the user's settings;
//! - [`reading`]: [`GpuReading`], one poll of one GPU, and its samples;
//! - [`sensor`]: [`NvmlSensor`], the library, the poll and the XID thread.

pub mod config;
pub mod reading;
pub mod sensor;

pub use config::NvmlConfig;
pub use reading::{GpuReading, NvLinkError};
pub use sensor::NvmlSensor;
