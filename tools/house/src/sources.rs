//! Every `.rs` file of the repository, parsed once with `syn`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The parsed files, by absolute path.
pub struct Sources {
    /// The workspace root the paths are under.
    pub root: PathBuf,
    /// Each file's syntax tree.
    pub files: BTreeMap<PathBuf, syn::File>,
}

impl Sources {
    /// Parses every `.rs` file under `root`, except in build output
    /// (`target/`, including `fuzz/target/`), `node_modules/` and hidden
    /// directories. A file `syn` cannot parse stops the tool: it would not
    /// compile either.
    pub fn read(root: &Path) -> Result<Sources, String> {
        let mut paths = Vec::new();
        walk(root, &mut paths).map_err(|e| format!("reading {}: {e}", root.display()))?;
        let mut files = BTreeMap::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let file = syn::parse_file(&text).map_err(|e| {
                let at = e.span().start();
                format!("{}:{}:{}: {e}", path.display(), at.line, at.column + 1)
            })?;
            files.insert(path, file);
        }
        Ok(Sources { root: root.to_path_buf(), files })
    }

    /// `path` relative to the workspace root, for messages.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }
}

/// The `.rs` files under `dir`, in a stable order.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type()?.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                walk(&path, out)?;
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}
