//! The login a gNMI client sends (`username` and `password` metadata, as
//! SONiC's telemetry server reads them), from a file only its owner can
//! read. Secrets are never written inline in a config or playbook: those
//! are read by more people (and `check` prints them) than a password should
//! reach.
//!
//! ```toml
//! # /etc/rocemend/gnmi-credentials.toml, mode 0600
//! username = "admin"
//! password = "…"
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A username and password; `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// Sent as `username` metadata.
    pub username: String,
    /// Sent as `password` metadata.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("username", &self.username).finish_non_exhaustive()
    }
}

/// Why a credentials file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Others than its owner may read or write it.
    #[error("{}: mode {mode:04o} lets others than its owner read it; `chmod 600` it", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// It is not a TOML table of `username` and `password`.
    #[error("{}: {reason} (expected `username = \"…\"` and `password = \"…\"`)", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Reads the credentials file at `path`: mode 0600 (or stricter), a TOML
/// table of `username` and `password`.
pub fn read_file(path: &Path) -> Result<Credentials, CredentialsError> {
    let read = |source| CredentialsError::Read { path: path.to_path_buf(), source };
    let mode = std::fs::metadata(path).map_err(read)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(CredentialsError::Open { path: path.to_path_buf(), mode });
    }
    let malformed = |reason: String| CredentialsError::Malformed { path: path.to_path_buf(), reason };
    let bytes = std::fs::read(path).map_err(read)?;
    let text = String::from_utf8(bytes).map_err(|_| malformed("not UTF-8".into()))?;
    toml::from_str(&text).map_err(|e| malformed(e.message().trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mode: u32, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("creds.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, path)
    }

    #[test]
    fn a_private_file_is_read_and_its_password_never_shown() {
        let (_dir, path) = file(0o600, "username = \"admin\"\npassword = \"s3cret\"\n");
        let c = read_file(&path).unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("admin", "s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn a_file_others_can_read_is_refused() {
        let (_dir, path) = file(0o644, "username = \"admin\"\npassword = \"s3cret\"\n");
        let e = read_file(&path).unwrap_err().to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
    }

    #[test]
    fn a_file_without_a_password_is_refused_with_what_it_needs() {
        let (_dir, path) = file(0o600, "username = \"admin\"\n");
        let e = read_file(&path).unwrap_err().to_string();
        assert!(e.contains("password"), "{e}");
    }
}
