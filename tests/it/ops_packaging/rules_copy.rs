//! The standard rules work wherever they are copied (`cp -r rules
//! /etc/rocemend/`, docs/operations.md): their tests name the inventory
//! shipped beside them, which stays the example inventory.

use std::path::Path;
use std::process::Command;

use crate::common::{bin, repo, text};

/// `cp -r SRC DST`, files only (rules/ has no subdirectory the tests need).
fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn rocemend_test_passes_on_a_copy_of_rules_from_another_directory() {
    let etc = tempfile::tempdir().unwrap();
    let rules = etc.path().join("rules");
    copy_dir(&repo("rules"), &rules);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(bin()).arg("test").arg(&rules).current_dir(elsewhere.path()).output().unwrap();
    assert!(out.status.success(), "rocemend test {}:\n{}", rules.display(), text(&out));
    // Without the inventory beside them, the tests that name it fail, and say where it was looked for.
    std::fs::remove_file(rules.join("inventory.toml")).unwrap();
    let out = Command::new(bin()).arg("test").arg(&rules).current_dir(elsewhere.path()).output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("inventory"), "{}", text(&out));
}

#[test]
fn the_rules_inventory_is_the_example_inventory() {
    let example = std::fs::read_to_string(repo("docs/examples/inventory.toml")).unwrap();
    let beside = std::fs::read_to_string(repo("rules/inventory.toml")).unwrap();
    let body = beside.strip_suffix(example.as_str()).unwrap_or_else(|| {
        panic!("rules/inventory.toml no longer ends with docs/examples/inventory.toml: copy it again")
    });
    assert!(body.lines().all(|l| l.is_empty() || l.starts_with('#')), "only a comment comes before the copy: {body}");
}
