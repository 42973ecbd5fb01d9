//! Bearer tokens for the control API on TCP.
//!
//! On the unix socket the kernel says who is calling (SO_PEERCRED, checked
//! at accept); on TCP nobody does, so every call there carries
//! `authorization: Bearer <token>`. Two tokens: the full one allows every
//! call, the optional read token only the calls that change nothing (for
//! dashboards and `rocemend status` from a bastion). Token files must not
//! be readable by group or others, for the same reason an SSH key must not.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tonic::metadata::MetadataMap;
use tonic::Status;

/// What a call needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only (status, lists, explain, watch).
    Read,
    /// Changes the daemon (approve, reject, silence, breaker reset, mode,
    /// reload, job push).
    Write,
}

/// Shortest token accepted: 128 bits of hex or base64 are 22 to 32
/// characters; anything shorter is a password, not a token.
pub const MIN_TOKEN_LEN: usize = 22;

/// The tokens of a TCP listener.
#[derive(Clone)]
pub struct Tokens {
    full: String,
    read: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokens(<redacted>)")
    }
}

/// A token file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// It cannot be read.
    #[error("control token file {}: {cause}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (in the message: the file's own error says nothing more).
        cause: std::io::Error,
    },
    /// Group or others may read it.
    #[error("control token file {}: mode {mode:03o} lets group or others read it; `chmod 600` it", path.display())]
    Mode {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Its token is too short to be one.
    #[error(
        "control token file {}: the token is {length} characters; at least {MIN_TOKEN_LEN} are needed (e.g. `openssl rand -hex 32`)",
        path.display()
    )]
    Short {
        /// The file.
        path: PathBuf,
        /// The token's length.
        length: usize,
    },
    /// The read token is the full one: it would allow writes.
    #[error("control: the read token is the same as the full token")]
    SameTokens,
}

/// Reads one token file: the first line, trimmed.
pub fn read_token(path: &Path) -> Result<String, TokenError> {
    let read = |cause| TokenError::Read { path: path.to_path_buf(), cause };
    let mode = std::fs::metadata(path).map_err(read)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(TokenError::Mode { path: path.to_path_buf(), mode });
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < MIN_TOKEN_LEN {
        return Err(TokenError::Short { path: path.to_path_buf(), length: token.len() });
    }
    Ok(token)
}

impl Tokens {
    /// Tokens from their values.
    #[cfg(test)]
    pub fn new(full: String, read: Option<String>) -> Tokens {
        Tokens { full, read }
    }

    /// Reads the token files.
    pub fn load(full: &Path, read: Option<&Path>) -> Result<Tokens, TokenError> {
        let full = read_token(full)?;
        let read = read.map(read_token).transpose()?;
        if read.as_deref() == Some(full.as_str()) {
            return Err(TokenError::SameTokens);
        }
        Ok(Tokens { full, read })
    }

    /// Whether the call's metadata allows `need`.
    pub fn check(&self, metadata: &MetadataMap, need: Access, call: &str) -> Result<(), Status> {
        let Some(value) = metadata.get("authorization") else {
            return Err(Status::unauthenticated(format!("{call}: no bearer token (this listener requires one)")));
        };
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                Status::unauthenticated(format!("{call}: the authorization header is not `Bearer <token>`"))
            })?
            .trim();
        if same(presented, &self.full) {
            return Ok(());
        }
        if self.read.as_deref().is_some_and(|r| same(presented, r)) {
            return match need {
                Access::Read => Ok(()),
                Access::Write => Err(Status::permission_denied(format!(
                    "{call} changes the daemon; the read-only token cannot do that"
                ))),
            };
        }
        Err(Status::unauthenticated(format!("{call}: wrong token")))
    }
}

/// Compares in time independent of where the strings differ, so the token
/// cannot be guessed a byte at a time from response times.
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= (a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0)) as usize;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(value: Option<&str>) -> MetadataMap {
        let mut m = MetadataMap::new();
        if let Some(v) = value {
            m.insert("authorization", v.parse().unwrap());
        }
        m
    }

    #[test]
    fn the_full_token_allows_writes_the_read_token_only_reads_and_others_nothing() {
        let t = Tokens::new("f".repeat(32), Some("r".repeat(32)));
        let full = format!("Bearer {}", "f".repeat(32));
        let read = format!("Bearer {}", "r".repeat(32));
        assert!(t.check(&meta(Some(&full)), Access::Write, "Approve").is_ok());
        assert!(t.check(&meta(Some(&read)), Access::Read, "Status").is_ok());
        let denied = t.check(&meta(Some(&read)), Access::Write, "Approve").unwrap_err();
        assert_eq!(denied.code(), tonic::Code::PermissionDenied);
        let none = t.check(&meta(None), Access::Read, "Status").unwrap_err();
        assert_eq!(none.code(), tonic::Code::Unauthenticated);
        assert!(none.message().contains("no bearer token"), "{}", none.message());
        let wrong = t.check(&meta(Some("Bearer ffff")), Access::Write, "Approve").unwrap_err();
        assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
        let basic = t.check(&meta(Some("Basic abc")), Access::Read, "Status").unwrap_err();
        assert!(basic.message().contains("not `Bearer <token>`"));
    }

    #[test]
    fn a_token_file_readable_by_others_or_too_short_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "a".repeat(40)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_token(&path).unwrap_err().to_string();
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token(&path).unwrap(), "a".repeat(40));
        std::fs::write(&path, "short\n").unwrap();
        assert!(read_token(&path).unwrap_err().to_string().contains("at least 22"));
    }
}
