//! The ConfigMaps of packaging/kubernetes/base/configmaps/ are copies of
//! repository files (the Kubernetes configs of packaging/kubernetes/config/,
//! playbooks/default.toml, rules/, the example inventory): this test fails
//! when a copy and its file differ, and writes the copies again under
//! `ROCEMEND_BLESS_MANIFESTS=1`. kustomize's configMapGenerator cannot do it:
//! it refuses files outside the kustomization's directory.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::repo;

use super::model::ConfigMap;

/// Where the generated ConfigMaps are.
pub const DIR: &str = "packaging/kubernetes/base/configmaps";

/// One generated ConfigMap: its name and its files, key → repository path.
pub struct Generated {
    pub name: &'static str,
    pub files: BTreeMap<String, PathBuf>,
}

/// Every generated ConfigMap.
pub fn generated() -> Vec<Generated> {
    let files = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, p)| (k.to_string(), repo(p))).collect();
    let inventory = "docs/examples/inventory.toml";
    let mut rules = BTreeMap::new();
    for entry in std::fs::read_dir(repo("rules")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".rhai") || name.ends_with(".test.toml") || name == "inventory.toml" {
            rules.insert(name, path);
        }
    }
    vec![
        Generated {
            name: "rocemend-node",
            files: files(&[("rocemend.toml", "packaging/kubernetes/config/node.toml"), ("inventory.toml", inventory)]),
        },
        Generated {
            name: "rocemend-aggregator",
            files: files(&[
                ("rocemend.toml", "packaging/kubernetes/config/aggregator.toml"),
                ("inventory.toml", inventory),
            ]),
        },
        Generated {
            name: "rocemend-playbooks",
            files: files(&[
                ("default.toml", "playbooks/default.toml"),
                ("node.toml", "packaging/kubernetes/config/node-playbook.toml"),
            ]),
        },
        Generated { name: "rocemend-rules", files: rules },
    ]
}

impl Generated {
    /// The manifest's path in the repository.
    pub fn path(&self) -> PathBuf {
        repo(&format!("{DIR}/{}.yaml", self.name))
    }

    /// The files' contents, by key.
    fn data(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .map(|(k, p)| (k.clone(), std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))))
            .collect()
    }

    /// The manifest as written.
    fn render(&self) -> String {
        let sources: Vec<String> =
            self.files.values().map(|p| p.strip_prefix(repo("")).unwrap_or(p).display().to_string()).collect();
        let manifest = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": "rocemend",
                "labels": { "app.kubernetes.io/name": "rocemend" },
            },
            "data": self.data(),
        });
        format!(
            "# Generated from {} by `ROCEMEND_BLESS_MANIFESTS=1 cargo test --test it -- ops_packaging::`;\n\
             # edit those files, not this one (tests/it/ops_packaging/configmaps.rs fails when they differ).\n{}",
            sources.join(", "),
            serde_yaml_ng::to_string(&manifest).unwrap()
        )
    }

    /// The committed manifest, parsed.
    pub fn committed(&self) -> ConfigMap {
        let path = self.path();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

#[test]
fn the_configmaps_hold_the_repository_files() {
    let bless = std::env::var_os("ROCEMEND_BLESS_MANIFESTS").is_some_and(|v| v == "1");
    for g in generated() {
        if bless {
            std::fs::create_dir_all(repo(DIR)).unwrap();
            std::fs::write(g.path(), g.render()).unwrap();
        }
        let committed = g.committed();
        assert_eq!((committed.api_version.as_str(), committed.kind.as_str()), ("v1", "ConfigMap"));
        assert_eq!(committed.metadata.name.as_deref(), Some(g.name));
        let want = g.data();
        let keys = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&committed.data),
            keys(&want),
            "{}: its keys are not the files it copies; run ROCEMEND_BLESS_MANIFESTS=1 cargo test --test it -- ops_packaging::",
            g.path().display()
        );
        for (key, text) in &want {
            assert!(
                committed.data[key] == *text,
                "{}: {key} differs from {}; run ROCEMEND_BLESS_MANIFESTS=1 cargo test --test it -- ops_packaging::",
                g.path().display(),
                g.files[key].display()
            );
        }
    }
}

#[test]
fn the_rules_configmap_holds_every_rule_and_its_tests() {
    let rules = generated().into_iter().find(|g| g.name == "rocemend-rules").unwrap();
    let rhai = rules.files.keys().filter(|k| k.ends_with(".rhai")).count();
    let tests = rules.files.keys().filter(|k| k.ends_with(".test.toml")).count();
    assert_eq!(rhai, rules::RULES.len(), "every standard rule");
    assert_eq!(tests, rhai, "every rule's tests");
    assert!(rules.files.contains_key("inventory.toml"), "the tests' inventory");
}
