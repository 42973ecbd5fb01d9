//! Environment files that job launchers source (`export NAME=value` lines):
//! read (a missing file is empty), one managed assignment found, the text
//! rendered with its header and the lines rocemend does not manage kept,
//! and the file replaced atomically — written beside itself, synced, then
//! renamed over the original, so a launcher sees the old text or the new,
//! never half of either. The rail drain's `NCCL_IB_HCA` file and a job's
//! queue-pair file are both such files.

use std::io::Write;
use std::path::Path;

use engine::ActuatorError;

/// The value `line` assigns to `variable` (`[export ]VARIABLE=value`, quotes
/// around the value dropped), if it is that assignment.
pub fn assignment<'a>(line: &'a str, variable: &str) -> Option<&'a str> {
    let bare = line.trim();
    let bare = bare.strip_prefix("export ").unwrap_or(bare);
    let value = bare.strip_prefix(variable)?.strip_prefix('=')?;
    Some(value.trim().trim_matches('"'))
}

/// Whether `line` is a line of rocemend's `header`, which [`render`] writes again.
pub fn is_header(header: &str, line: &str) -> bool {
    header.lines().any(|h| h == line)
}

/// The file's text: `header`, the `other` lines as they were, then the managed `exports`.
pub fn render(header: &str, other: &[String], exports: &[(&str, String)]) -> String {
    let mut text = header.to_string();
    for line in other {
        text.push_str(line);
        text.push('\n');
    }
    for (variable, value) in exports {
        text.push_str(&format!("export {variable}={value}\n"));
    }
    text
}

/// The file's text; `None` when there is no file.
pub fn read(path: &Path) -> Result<Option<String>, ActuatorError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ActuatorError::Failed(format!("reading {}: {e}", path.display()))),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assignment_is_found_with_or_without_export_and_quotes() {
        assert_eq!(assignment("export NCCL_IB_HCA=^mlx5_1", "NCCL_IB_HCA"), Some("^mlx5_1"));
        assert_eq!(assignment("  NCCL_IB_HCA=\"^mlx5_1\" ", "NCCL_IB_HCA"), Some("^mlx5_1"));
        assert_eq!(assignment("NCCL_IB_HCA_X=1", "NCCL_IB_HCA"), None, "another variable");
        assert_eq!(assignment("# NCCL_IB_HCA=1", "NCCL_IB_HCA"), None);
        let text = render("# h\n", &["A=1".into()], &[("B", "2".into())]);
        assert_eq!(text, "# h\nA=1\nexport B=2\n");
    }
}
