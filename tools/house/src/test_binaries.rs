//! The test binaries `cargo test --workspace` links, counted from `cargo
//! metadata` without building: each library, binary and proc-macro target
//! with tests on (`test = false` turns one off), and each integration-test
//! target, all as built with default features (a target whose
//! `required-features` those lack is not built). Linking is most of a
//! test build's time, so their number is bounded, and a package's
//! integration tests are one binary (`tests/it/main.rs`) unless
//! `house.toml` says why a test needs a process of its own.

use crate::config::Config;
use crate::metadata::{Package, Target, Workspace};

/// The targets of `package` that `cargo test --workspace` links as test
/// binaries.
pub fn linked(package: &Package) -> Vec<&Target> {
    let built = |t: &&Target| t.required_features.iter().all(|f| package.default_features.contains(f));
    package
        .targets
        .iter()
        .filter(|t| match t.kind.as_str() {
            "lib" | "bin" | "proc-macro" => t.test,
            "test" => true,
            _ => false,
        })
        .filter(built)
        .collect()
}

/// The check: the count against `max_test_binaries`, then each package's
/// integration-test targets beyond its first that `house.toml` does not
/// allow.
pub fn check(workspace: &Workspace, config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let linked: Vec<(&Package, &Target)> =
        workspace.packages.iter().flat_map(|p| linked(p).into_iter().map(move |t| (p, t))).collect();
    if linked.len() > config.max_test_binaries {
        let list: Vec<String> = linked.iter().map(|(p, t)| format!("{} {} `{}`", p.short, t.kind, t.name)).collect();
        out.push(format!(
            "cargo test --workspace links {} test binaries, more than {}: {}\n  \
             (join integration tests into tests/it/main.rs; `test = false` on a target without unit tests)",
            linked.len(),
            config.max_test_binaries,
            list.join(", ")
        ));
    }
    for package in &workspace.packages {
        let tests: Vec<&Target> = package.targets.iter().filter(|t| t.kind == "test").collect();
        let allowed = |t: &Target| config.own_process.iter().any(|o| o.package == package.name && o.test == t.name);
        for extra in tests.iter().skip(1).filter(|t| !allowed(t)) {
            out.push(format!(
                "{}: a second integration-test binary `{}` ({}): make it a module of {} or allow it in house.toml with why it needs a process of its own",
                package.name,
                extra.name,
                workspace.relative(&extra.src_path),
                workspace.relative(&tests[0].src_path),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::tests::workspace;

    fn target(name: &str, kind: &str, test: bool, required: &[&str]) -> Target {
        Target {
            name: name.into(),
            kind: kind.into(),
            src_path: format!("/w/p/{name}.rs").into(),
            test,
            required_features: required.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn targets_without_tests_or_with_missing_features_are_not_linked_and_a_second_test_target_is_named() {
        let mut ws = workspace(&[("rocemend-fleet", &[])]);
        ws.packages[0].targets = vec![
            target("fleet", "lib", true, &[]),
            target("probe", "bin", false, &["etcd"]),
            target("it", "test", true, &["etcd"]),
            target("bench", "bench", true, &[]),
            target("other", "test", true, &[]),
        ];
        let names: Vec<&str> = linked(&ws.packages[0]).iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["fleet", "other"]);
        let config = Config::parse("max_test_binaries = 1\nmax_function_lines = 80\n").unwrap();
        let found = check(&ws, &config);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with(
                "cargo test --workspace links 2 test binaries, more than 1: fleet lib `fleet`, fleet test `other`"
            ),
            "{}",
            found[0]
        );
        assert!(found[1].starts_with("rocemend-fleet: a second integration-test binary `other`"), "{}", found[1]);
        let allowed = "max_test_binaries = 2\nmax_function_lines = 80\n\
                       [[own_process]]\npackage = \"rocemend-fleet\"\ntest = \"other\"\nreason = \"sets its own rlimits\"\n";
        assert_eq!(check(&ws, &Config::parse(allowed).unwrap()), Vec::<String>::new());
    }

    #[test]
    fn the_workspace_links_no_more_than_its_budget() {
        let ws = Workspace::read().expect("cargo metadata runs");
        let config = Config::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("house.toml")).unwrap();
        assert_eq!(check(&ws, &config), Vec::<String>::new());
    }
}
