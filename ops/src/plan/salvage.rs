//! The files a file names, read from a file that does not parse: a config
//! with a misspelt key still names its playbook, inventory and rules, and a
//! playbook with one its rule directory. `check` checks those too, so one
//! run reports the mistakes of every stage, not only those of the first.

use std::path::{Path, PathBuf};

/// The path the TOML `text` of the file at `file` gives its top-level
/// string `key`, relative paths taken from the file's directory; `None`
/// when the text is no TOML at all or has no such string.
pub fn named_path(text: &str, file: &Path, key: &str) -> Option<PathBuf> {
    let table: toml::Table = text.parse().ok()?;
    let named = PathBuf::from(table.get(key)?.as_str()?);
    Some(match file.parent() {
        Some(dir) if named.is_relative() => dir.join(named),
        _ => named,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_refused_for_a_misspelt_key_still_names_its_files() {
        let text = "playbook = \"p.toml\"\nrules = \"/srv/rules\"\nnod = \"x\"\n";
        let at = Path::new("/etc/rocemend/rocemend.toml");
        assert_eq!(named_path(text, at, "playbook"), Some(PathBuf::from("/etc/rocemend/p.toml")));
        assert_eq!(named_path(text, at, "rules"), Some(PathBuf::from("/srv/rules")));
        assert_eq!(named_path(text, at, "inventory"), None);
        assert_eq!(named_path("playbook = ", at, "playbook"), None, "no TOML: nothing named");
    }
}
