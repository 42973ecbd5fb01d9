//! The crate graph of docs/architecture.md, drawn from `cargo metadata`:
//! the part of the doc between [`BEGIN`] and [`END`] is this module's, so a
//! dependency added in a Cargo.toml shows in the doc (`--write`) or fails
//! CI (`--check`) until it does.

use std::collections::{BTreeMap, BTreeSet};

use crate::layering::RULES;
use crate::metadata::{DepKind, Workspace};

/// The doc, relative to the workspace root.
pub const DOC: &str = "docs/architecture.md";
/// The line before the drawn part.
pub const BEGIN: &str = "<!-- crate-graph:begin -->";
/// The line after it.
pub const END: &str = "<!-- crate-graph:end -->";

/// The drawn part: a table of every crate with its arrows, the binary
/// first and the crates that depend on no sibling last, then the rules the
/// layering check enforces.
pub fn draw(workspace: &Workspace) -> String {
    let layers = layers(workspace);
    let mut crates: Vec<_> = workspace.packages.iter().collect();
    crates.sort_by(|a, b| layers[&b.short].cmp(&layers[&a.short]).then_with(|| a.short.cmp(&b.short)));
    let mut out = String::new();
    out.push_str(
        "<!-- Drawn from `cargo metadata` by `cargo run -p rocemend-house -- --write`; CI fails when it differs. -->\n\n",
    );
    out.push_str("| crate | layer | depends on | and in its tests, benches and examples only |\n|---|---|---|---|\n");
    for p in crates {
        // One entry per crate: a dependency that is also a dev-dependency
        // (to turn on a test feature) is a normal one.
        let mut normal: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut dev = BTreeSet::new();
        for d in &p.deps {
            match d.kind {
                DepKind::Dev => {
                    dev.insert(d.to.as_str());
                }
                kind => {
                    let notes = normal.entry(d.to.as_str()).or_default();
                    if kind == DepKind::Build {
                        notes.push("build");
                    }
                    if d.optional {
                        notes.push("optional");
                    }
                }
            }
        }
        dev.retain(|d| !normal.contains_key(d));
        let normal: Vec<String> = normal
            .iter()
            .map(
                |(to, notes)| {
                    if notes.is_empty() {
                        format!("`{to}`")
                    } else {
                        format!("`{to}` ({})", notes.join(", "))
                    }
                },
            )
            .collect();
        let dev: Vec<String> = dev.iter().map(|to| format!("`{to}`")).collect();
        let cell = |names: Vec<String>| if names.is_empty() { "—".to_string() } else { names.join(", ") };
        out.push_str(&format!("| `{}` | {} | {} | {} |\n", p.short, layers[&p.short], cell(normal), cell(dev)));
    }
    out.push_str("\nA crate's layer is one more than its highest dependency's. The layering check refuses an arrow\n");
    out.push_str("that breaks one of these rules (`tools/house/src/layering.rs`):\n\n");
    for rule in RULES {
        out.push_str(&format!("- {rule}\n"));
    }
    out
}

/// Each crate's layer: 0 without a (non-dev) dependency in the workspace,
/// else one more than its highest dependency's. A cycle (which Cargo
/// refuses for normal dependencies) would stop at the crates count.
fn layers(workspace: &Workspace) -> BTreeMap<String, usize> {
    let mut layers: BTreeMap<String, usize> = workspace.packages.iter().map(|p| (p.short.clone(), 0)).collect();
    for _ in 0..workspace.packages.len() {
        let mut moved = false;
        for p in &workspace.packages {
            let above = p
                .deps
                .iter()
                .filter(|d| d.kind != DepKind::Dev)
                .filter_map(|d| layers.get(&d.to).map(|l| l + 1))
                .max()
                .unwrap_or(0);
            if above > layers[&p.short] {
                layers.insert(p.short.clone(), above);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    layers
}

/// The byte range of the drawn part of `doc`: after the [`BEGIN`] line, up
/// to the [`END`] line.
fn section(doc: &str) -> Result<std::ops::Range<usize>, String> {
    let begin = doc.find(BEGIN).ok_or_else(|| format!("{DOC} has no {BEGIN} line"))?;
    let start = begin + BEGIN.len() + doc[begin + BEGIN.len()..].find('\n').map_or(0, |n| n + 1);
    let end = doc[start..].find(END).ok_or_else(|| format!("{DOC} has no {END} line after {BEGIN}"))?;
    Ok(start..start + end)
}

/// The check: the drawn part of the committed doc is what `cargo metadata`
/// draws now. One finding, listing the lines that differ.
pub fn check(workspace: &Workspace) -> Result<Vec<String>, String> {
    let path = workspace.root.join(DOC);
    let doc = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let range = match section(&doc) {
        Ok(range) => range,
        Err(missing) => return Ok(vec![missing]),
    };
    let drawn = draw(workspace);
    if doc[range.clone()] == drawn {
        return Ok(Vec::new());
    }
    let committed: BTreeSet<&str> = doc[range].lines().collect();
    let now: BTreeSet<&str> = drawn.lines().collect();
    let mut finding = format!(
        "{DOC}: the crate graph differs from cargo metadata; redraw it with `cargo run -p rocemend-house -- --write`"
    );
    for line in committed.difference(&now) {
        finding.push_str(&format!("\n  - {line}"));
    }
    for line in now.difference(&committed) {
        finding.push_str(&format!("\n  + {line}"));
    }
    Ok(vec![finding])
}

/// Redraws the drawn part of the doc; whether it changed.
pub fn write(workspace: &Workspace) -> Result<bool, String> {
    let path = workspace.root.join(DOC);
    let doc = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let range = section(&doc)?;
    let drawn = draw(workspace);
    if doc[range.clone()] == drawn {
        return Ok(false);
    }
    let mut new = doc.clone();
    new.replace_range(range, &drawn);
    std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::tests::workspace;

    #[test]
    fn every_arrow_is_drawn_with_dev_only_ones_apart_and_the_top_crate_first() {
        let ws = workspace(&[
            ("rocemend-engine", &[("rocemend-test-peers", "dev")]),
            ("rocemend-sim", &[("rocemend-engine", "")]),
            ("rocemend-sensors", &[("rocemend-engine", ""), ("rocemend-engine", "dev"), ("rocemend-sim", "dev")]),
            ("rocemend-chaos", &[("rocemend-sim", ""), ("rocemend-sensors", "")]),
            ("rocemend-test-peers", &[]),
        ]);
        let drawn = draw(&ws);
        let rows: Vec<&str> = drawn.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(
            rows,
            [
                "| `chaos` | 2 | `sensors`, `sim` | — |",
                "| `sensors` | 1 | `engine` | `sim` |",
                "| `sim` | 1 | `engine` | — |",
                "| `engine` | 0 | — | `test-peers` |",
                "| `test-peers` | 0 | — | — |",
            ]
        );
        assert!(drawn.contains("\n- only the binary depends on chaos\n"), "{drawn}");
    }

    #[test]
    fn the_section_is_found_between_its_markers_and_a_missing_marker_is_named() {
        let doc = format!("# A\n\n{BEGIN}\nold\n{END}\nrest\n");
        assert_eq!(&doc[section(&doc).unwrap()], "old\n");
        let err = section("# A\n").unwrap_err();
        assert!(err.contains(BEGIN), "{err}");
        let err = section(&format!("{BEGIN}\nold\n")).unwrap_err();
        assert!(err.contains(END), "{err}");
    }

    #[test]
    fn the_committed_doc_is_drawn_from_cargo_metadata() {
        let ws = Workspace::read().expect("cargo metadata runs");
        assert_eq!(check(&ws).unwrap(), Vec::<String>::new());
    }
}
