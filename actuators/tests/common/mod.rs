//! Helpers the actuator tests share. Each test binary uses only some of
//! them, so the ones it does not use are not dead code.
#![allow(dead_code)]

pub mod kube;
pub mod netns;
pub mod slurm;
