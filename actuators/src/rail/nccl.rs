//! The NCCL environment file of the rail actuator: the NICs of drained
//! rails, excluded for jobs started from now on.
//!
//! Job launchers (a Slurm prolog or `TaskProlog`, an MPI wrapper, a
//! container entrypoint) source the file, which holds one managed line:
//!
//! ```sh
//! export NCCL_IB_HCA=^mlx5_1,mlx5_3
//! ```
//!
//! NCCL reads `NCCL_IB_HCA` once, when a communicator is created: a job that
//! is already running keeps the NICs it opened, drained or not. Draining a
//! rail therefore protects the jobs that start after it; running jobs are
//! the scheduler's to move (see the Slurm and Kubernetes steps).
//!
//! The file is replaced atomically (written beside itself, synced, renamed),
//! so a launcher never reads half of it. Other lines are kept as they are.
//! Undo removes only this drain's device, so two drained rails on one node
//! can be undone in any order.

use std::path::Path;

use engine::ActuatorError;

use crate::env_file;

/// The variable the file manages.
pub const VARIABLE: &str = "NCCL_IB_HCA";

const HEADER: &str = "# Managed by rocemend: the RDMA devices of drained rails, excluded for new NCCL jobs.\n\
                      # Running jobs keep the NICs they opened. Other lines are kept as they are.\n";

/// The file's lines and the devices it excludes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFile {
    /// Lines other than the managed one (and the header).
    pub other: Vec<String>,
    /// The excluded devices, in order.
    pub excluded: Vec<String>,
}

/// Parses the file's text; a `NCCL_IB_HCA` that is an include list (no
/// `^`) is someone else's setting, and is refused rather than rewritten.
pub fn parse(text: &str, path: &Path) -> Result<EnvFile, ActuatorError> {
    let mut other = Vec::new();
    let mut excluded = Vec::new();
    for line in text.lines() {
        if let Some(value) = env_file::assignment(line, VARIABLE) {
            let Some(list) = value.strip_prefix('^') else {
                return Err(ActuatorError::Invalid(format!(
                    "{} sets {VARIABLE}={value}, an include list; rocemend manages only an exclusion list (^…)",
                    path.display()
                )));
            };
            excluded.extend(list.split(',').filter(|d| !d.is_empty()).map(str::to_string));
        } else if !env_file::is_header(HEADER, line) {
            other.push(line.to_string());
        }
    }
    Ok(EnvFile { other, excluded })
}

impl EnvFile {
    /// The file's text.
    pub fn render(&self) -> String {
        let exports = if self.excluded.is_empty() {
            Vec::new()
        } else {
            vec![(VARIABLE, format!("^{}", self.excluded.join(",")))]
        };
        env_file::render(HEADER, &self.other, &exports)
    }
}

/// Reads the file; a missing one is empty.
pub fn read(path: &Path) -> Result<EnvFile, ActuatorError> {
    match env_file::read(path)? {
        Some(text) => parse(&text, path),
        None => Ok(EnvFile { other: Vec::new(), excluded: Vec::new() }),
    }
}

/// Replaces the file atomically with `file`.
pub fn write(path: &Path, file: &EnvFile) -> Result<(), ActuatorError> {
    env_file::replace(path, &file.render())
}

/// The request text of a change.
pub fn request(path: &Path, file: &EnvFile) -> String {
    let value = if file.excluded.is_empty() { "(unset)".to_string() } else { format!("^{}", file.excluded.join(",")) };
    format!("replace {} atomically: {VARIABLE}={value}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_managed_line_is_parsed_and_rendered_and_other_lines_kept() {
        let path = Path::new("/etc/nccl.env");
        let file = parse("NCCL_DEBUG=WARN\nexport NCCL_IB_HCA=^mlx5_1,mlx5_3\n", path).unwrap();
        assert_eq!(file.excluded, ["mlx5_1", "mlx5_3"]);
        assert_eq!(file.other, ["NCCL_DEBUG=WARN"]);
        let again = parse(&file.render(), path).unwrap();
        assert_eq!(again, file);
        assert!(file.render().ends_with("NCCL_DEBUG=WARN\nexport NCCL_IB_HCA=^mlx5_1,mlx5_3\n"));
        let err = parse("NCCL_IB_HCA=mlx5_0,mlx5_1\n", path).unwrap_err();
        assert!(err.to_string().contains("an include list"), "{err}");
        let empty = EnvFile { other: vec![], excluded: vec![] };
        assert!(!empty.render().contains("export NCCL_IB_HCA"), "{}", empty.render());
        assert_eq!(request(path, &empty), "replace /etc/nccl.env atomically: NCCL_IB_HCA=(unset)");
    }
}
