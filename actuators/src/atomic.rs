//! Replacing a small file atomically: written beside itself, synced, then
//! renamed over the original, so a reader (a job launcher sourcing an
//! environment file) sees the old text or the new, never half of either.

use std::io::Write;
use std::path::Path;

use engine::ActuatorError;

/// Replaces `path` with `text`. A failure removes the temporary file and
/// leaves the original as it was.
pub fn replace(path: &Path, text: &str) -> Result<(), ActuatorError> {
    let fail = |what: &str, e: std::io::Error| ActuatorError::Failed(format!("{what} {}: {e}", path.display()));
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.rocemend-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(|e| fail("creating a temporary file beside", e))?;
        f.write_all(text.as_bytes()).map_err(|e| fail("writing a temporary file beside", e))?;
        f.sync_all().map_err(|e| fail("syncing a temporary file beside", e))?;
        std::fs::rename(&tmp, path).map_err(|e| fail("replacing", e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
