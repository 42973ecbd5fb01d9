//! The workspace as `cargo metadata` describes it: its packages, their
//! targets, and the arrows between them.

use std::path::PathBuf;
use std::process::Command;

use serde::Deserialize;

/// The workspace's packages, read once.
#[derive(Debug)]
pub struct Workspace {
    /// Where the root manifest is.
    pub root: PathBuf,
    /// The members, in the order `cargo metadata` lists them.
    pub packages: Vec<Package>,
}

/// One member of the workspace.
#[derive(Debug, Clone)]
pub struct Package {
    /// Its name in Cargo.toml (`rocemend-engine`).
    pub name: String,
    /// Its name in docs and messages: without `rocemend-` (`engine`); the
    /// binary's package stays `rocemend`.
    pub short: String,
    /// Its dependencies on other members (never on itself).
    pub deps: Vec<Dep>,
    /// Its targets: lib, bins, tests, benches, examples, build script.
    pub targets: Vec<Target>,
    /// The features its `default` feature turns on.
    pub default_features: Vec<String>,
}

/// A dependency of one member on another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dep {
    /// The other member's short name.
    pub to: String,
    /// In which section of Cargo.toml.
    pub kind: DepKind,
    /// Behind a feature (`optional = true`).
    pub optional: bool,
}

/// Which section of Cargo.toml a dependency is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DepKind {
    /// `[dependencies]`.
    Normal,
    /// `[build-dependencies]`.
    Build,
    /// `[dev-dependencies]`: tests, benches and examples only.
    Dev,
}

/// A target of a package.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its name (`it`, `rocemend`, `engine`).
    pub name: String,
    /// `lib`, `bin`, `test`, `bench`, `example`, `proc-macro`, `custom-build`, …
    pub kind: String,
    /// Its root source file.
    pub src_path: PathBuf,
    /// Whether `cargo test` builds it as a test (`test = false` turns it off).
    pub test: bool,
    /// Features it needs before Cargo builds it at all.
    pub required_features: Vec<String>,
}

/// `rocemend-sim` → `sim`; the binary's package stays `rocemend`.
pub fn short(name: &str) -> String {
    name.strip_prefix("rocemend-").unwrap_or(name).to_string()
}

// What the tool reads of `cargo metadata --format-version 1`.
#[derive(Deserialize)]
struct RawMetadata {
    workspace_root: PathBuf,
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
struct RawPackage {
    name: String,
    dependencies: Vec<RawDep>,
    targets: Vec<RawTarget>,
    #[serde(default)]
    features: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
struct RawDep {
    name: String,
    kind: Option<String>,
    #[serde(default)]
    optional: bool,
}

#[derive(Deserialize)]
struct RawTarget {
    name: String,
    kind: Vec<String>,
    src_path: PathBuf,
    #[serde(default = "yes")]
    test: bool,
    #[serde(default, rename = "required-features")]
    required_features: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Workspace {
    /// Runs `cargo metadata --no-deps` where the tool was started (a
    /// directory of the workspace) and reads it.
    pub fn read() -> Result<Workspace, String> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
            .output()
            .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
        if !out.status.success() {
            return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Workspace::parse(&out.stdout)
    }

    /// Reads the JSON of `cargo metadata --no-deps --format-version 1`.
    pub fn parse(json: &[u8]) -> Result<Workspace, String> {
        let raw: RawMetadata =
            serde_json::from_slice(json).map_err(|e| format!("cargo metadata printed unexpected JSON: {e}"))?;
        let members: Vec<&str> = raw.packages.iter().map(|p| p.name.as_str()).collect();
        let packages = raw
            .packages
            .iter()
            .map(|p| Package {
                name: p.name.clone(),
                short: short(&p.name),
                deps: p
                    .dependencies
                    .iter()
                    .filter(|d| members.contains(&d.name.as_str()) && d.name != p.name)
                    .map(|d| Dep {
                        to: short(&d.name),
                        kind: match d.kind.as_deref() {
                            Some("dev") => DepKind::Dev,
                            Some("build") => DepKind::Build,
                            _ => DepKind::Normal,
                        },
                        optional: d.optional,
                    })
                    .collect(),
                targets: p
                    .targets
                    .iter()
                    .map(|t| Target {
                        name: t.name.clone(),
                        kind: t.kind.first().cloned().unwrap_or_default(),
                        src_path: t.src_path.clone(),
                        test: t.test,
                        required_features: t.required_features.clone(),
                    })
                    .collect(),
                default_features: p.features.get("default").cloned().unwrap_or_default(),
            })
            .collect();
        Ok(Workspace { root: raw.workspace_root, packages })
    }

    /// The path of `path` relative to the workspace root, for messages.
    pub fn relative(&self, path: &std::path::Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A workspace of `packages`: (name, [(dependency, kind)]), each with a
    /// library target.
    pub fn workspace(packages: &[(&str, &[(&str, &str)])]) -> Workspace {
        let packages: Vec<serde_json::Value> = packages
            .iter()
            .map(|(name, deps)| {
                let deps: Vec<serde_json::Value> = deps
                    .iter()
                    .map(|(to, kind)| {
                        let kind = if kind.is_empty() { serde_json::Value::Null } else { (*kind).into() };
                        serde_json::json!({ "name": to, "kind": kind })
                    })
                    .collect();
                serde_json::json!({
                    "name": name,
                    "dependencies": deps,
                    "targets": [{ "name": short(name), "kind": ["lib"], "src_path": format!("/w/{name}/src/lib.rs") }],
                })
            })
            .collect();
        let json = serde_json::json!({ "workspace_root": "/w", "packages": packages });
        Workspace::parse(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn arrows_are_read_between_members_only_and_never_to_the_package_itself() {
        let ws = workspace(&[
            ("rocemend-engine", &[("rocemend-engine", "dev"), ("serde", "")]),
            ("rocemend-sensors", &[("rocemend-engine", ""), ("rocemend-sim", "dev")]),
            ("rocemend-sim", &[("rocemend-engine", "")]),
        ]);
        assert!(ws.packages[0].deps.is_empty(), "{:?}", ws.packages[0].deps);
        let sensors = &ws.packages[1];
        assert_eq!(sensors.short, "sensors");
        assert_eq!(
            sensors.deps,
            [
                Dep { to: "engine".into(), kind: DepKind::Normal, optional: false },
                Dep { to: "sim".into(), kind: DepKind::Dev, optional: false },
            ]
        );
    }
}
