//! Module cycles inside a crate: the arrows between the top-level modules
//! of each library and binary target, and every cycle they make.
//!
//! An arrow `a → b` is a path in a file of module `a` (its file, its
//! folder, inline modules in them) that names `crate::b…` — in a `use`, in
//! code, or in a macro's input — or a `super::` path that climbs out of `a`
//! into `b`. A name the crate root re-exports (`crate::Action`, from `pub
//! use action::Action;`) counts as the module it comes from. What the crate
//! root itself names is its table of contents, not an arrow; items under
//! `#[cfg(test)]` are left out: a test may reach anything, the arrows that
//! must run one way are the product's.
//!
//! A knot of modules that all reach each other (a strongly connected
//! component) is reported with its members, then as cycles: for each of
//! its arrows, the shortest way back, so every arrow to cut is shown once,
//! with the `file:line` that makes it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use crate::metadata::Workspace;
use crate::sources::Sources;

/// Where an arrow is made: the first place in the crate's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The file, relative to the workspace root.
    pub file: String,
    /// The line.
    pub line: usize,
    /// The path as written (`crate::dispatch::Decision`).
    pub path: String,
}

/// One crate's module graph: top-level modules and the arrows between
/// them, each with the first place that makes it.
#[derive(Debug, Default)]
pub struct Graph {
    /// The top-level modules, declared in the crate root.
    pub modules: BTreeSet<String>,
    /// `(from, to)` → where.
    pub arrows: BTreeMap<(String, String), Site>,
}

/// The check: for each library and binary target of the workspace, one
/// finding per knot of modules, with its cycles.
pub fn check(workspace: &Workspace, sources: &Sources) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for package in &workspace.packages {
        for target in package.targets.iter().filter(|t| matches!(t.kind.as_str(), "lib" | "bin" | "proc-macro")) {
            let label = if target.kind == "bin" && target.name != package.name {
                format!("{} (bin {})", package.short, target.name)
            } else {
                package.short.clone()
            };
            let graph = graph(&target.src_path, sources)?;
            out.extend(knots(&graph).into_iter().map(|knot| describe(&label, &graph, &knot)));
        }
    }
    Ok(out)
}

/// The module graph of the crate whose root file is `root`.
pub fn graph(root: &Path, sources: &Sources) -> Result<Graph, String> {
    let root_file =
        sources.files.get(root).ok_or_else(|| format!("{}: not found among the parsed sources", root.display()))?;
    let crate_root = Unit {
        module: Vec::new(),
        file: root.to_path_buf(),
        dir: root.parent().unwrap_or(Path::new("")).to_path_buf(),
        inline: false,
        body: Body::File(root.to_path_buf()),
    };
    let mut graph = Graph::default();
    let mut reexports = BTreeMap::new();
    let mut queue = VecDeque::new();
    for item in &root_file.items {
        match item {
            syn::Item::Mod(m) if !is_cfg_test(&m.attrs) => {
                graph.modules.insert(m.ident.to_string());
                queue.push_back(crate_root.child(m, sources));
            }
            syn::Item::Use(u) => reexported(&u.tree, &mut reexports),
            _ => {}
        }
    }
    let mut collector = Collector { sources, graph: &mut graph, reexports: &reexports, unit: None, found: Vec::new() };
    while let Some(unit) = queue.pop_front() {
        let items: &[syn::Item] = match &unit.body {
            Body::Inline(items) => items,
            Body::File(path) => match sources.files.get(path) {
                Some(f) => &f.items,
                // `mod x;` whose file is not where rustc would look without
                // help (generated into OUT_DIR, say): nothing to read.
                None => continue,
            },
        };
        collector.unit = Some(unit);
        for item in items {
            collector.visit_item(item);
        }
        queue.extend(collector.found.drain(..));
    }
    Ok(graph)
}

/// A module whose items are to be walked, in the parsed `sources` (`'a`).
#[derive(Clone)]
struct Unit<'a> {
    /// Its path from the crate root (`["evaluator", "intake"]`).
    module: Vec<String>,
    /// The file its code is in.
    file: PathBuf,
    /// The folder its `mod x;` children are in.
    dir: PathBuf,
    /// Whether it is a `mod x { … }` block (where `#[path]` is relative to
    /// `dir`, not to the file's folder).
    inline: bool,
    body: Body<'a>,
}

#[derive(Clone)]
enum Body<'a> {
    /// `mod x { … }`.
    Inline(&'a [syn::Item]),
    /// `mod x;`, in this file.
    File(PathBuf),
}

impl<'a> Unit<'a> {
    /// The module `m` declared in this one, where rustc finds it: the
    /// block itself; `#[path]`; `dir/x.rs`, else `dir/x/mod.rs`. A file's
    /// own children are next to it for `mod.rs` and `#[path]` files, in the
    /// folder named after it otherwise.
    fn child(&self, m: &'a syn::ItemMod, sources: &Sources) -> Unit<'a> {
        let name = m.ident.to_string();
        let mut module = self.module.clone();
        module.push(name.clone());
        let path = path_attr(&m.attrs);
        if let Some((_, items)) = &m.content {
            return Unit {
                module,
                file: self.file.clone(),
                dir: self.dir.join(path.unwrap_or_else(|| name.clone())),
                inline: true,
                body: Body::Inline(items),
            };
        }
        let (file, owns_dir) = match path {
            Some(path) if self.inline => (self.dir.join(path), true),
            Some(path) => (self.file.parent().unwrap_or(Path::new("")).join(path), true),
            None => {
                let flat = self.dir.join(format!("{name}.rs"));
                if sources.files.contains_key(&flat) {
                    (flat, false)
                } else {
                    (self.dir.join(&name).join("mod.rs"), true)
                }
            }
        };
        let dir = if owns_dir { file.parent().unwrap_or(Path::new("")).to_path_buf() } else { self.dir.join(&name) };
        Unit { module, file: file.clone(), dir, inline: false, body: Body::File(file) }
    }
}

/// The value of `#[path = "…"]`, if any.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether `attrs` hold exactly `#[cfg(test)]`.
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && matches!(&a.meta, syn::Meta::List(list) if list.tokens.to_string().trim() == "test")
    })
}

/// The names a crate-root `use` brings in, each with the top-level module
/// it comes from (`pub use action::{Action, Proposal};`).
fn reexported(tree: &syn::UseTree, out: &mut BTreeMap<String, String>) {
    fn walk(tree: &syn::UseTree, first: Option<&str>, out: &mut BTreeMap<String, String>) {
        match tree {
            syn::UseTree::Path(p) => {
                let segment = p.ident.to_string();
                // `crate::x::…` and `self::x::…` name the module after them.
                let next = match (first, segment.as_str()) {
                    (None, "crate" | "self") => None,
                    (None, _) => Some(segment.as_str()),
                    (Some(f), _) => Some(f),
                };
                walk(&p.tree, next, out);
            }
            syn::UseTree::Name(n) => {
                if let Some(m) = first {
                    out.insert(n.ident.to_string(), m.to_string());
                }
            }
            syn::UseTree::Rename(r) => {
                if let Some(m) = first {
                    out.insert(r.rename.to_string(), m.to_string());
                }
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, first, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    walk(tree, None, out);
}

/// Walks one module's items, recording arrows and the modules to walk next.
struct Collector<'a> {
    sources: &'a Sources,
    graph: &'a mut Graph,
    /// Crate-root names and the top-level module each comes from.
    reexports: &'a BTreeMap<String, String>,
    /// The module being walked.
    unit: Option<Unit<'a>>,
    /// Child modules found in it.
    found: Vec<Unit<'a>>,
}

impl<'a> Collector<'a> {
    fn unit(&self) -> &Unit<'a> {
        self.unit.as_ref().expect("a unit is being walked")
    }

    /// An arrow from the walked module for the path `segments`, written at
    /// `line`, if it leaves its top-level module.
    fn path(&mut self, segments: &[String], line: usize) {
        let module = &self.unit().module;
        let target = match segments.first().map(String::as_str) {
            Some("crate" | "$crate") => segments.get(1).cloned(),
            Some("super") => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                if ups > module.len() {
                    return;
                }
                match &module[..module.len() - ups] {
                    [] => segments.get(ups).cloned(),
                    [top, ..] => Some(top.clone()),
                }
            }
            _ => None,
        };
        let Some(target) = target else { return };
        let to = if self.graph.modules.contains(&target) {
            target
        } else if let Some(m) = self.reexports.get(&target) {
            m.clone()
        } else {
            return;
        };
        let from = module[0].clone();
        if from == to || !self.graph.modules.contains(&to) {
            return;
        }
        let site = Site { file: self.sources.relative(&self.unit().file), line, path: segments.join("::") };
        self.graph.arrows.entry((from, to)).or_insert(site);
    }

    /// Paths written inside a macro's input: `crate :: x`, `super :: x`.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let line = id.span().start().line;
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) =
                        (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.path(&segments, line);
                    }
                    i = j - 1;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'a> Visit<'a> for Collector<'a> {
    fn visit_item(&mut self, item: &'a syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        let child = self.unit().child(m, self.sources);
        match child.body {
            // Walked now, as a module of its own in the same file.
            Body::Inline(items) => {
                let outer = self.unit.replace(child);
                for item in items {
                    self.visit_item(item);
                }
                self.unit = outer;
            }
            Body::File(_) => self.found.push(child),
        }
    }

    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        /// Each name the tree brings in, with the line it is written on.
        fn walk(c: &mut Collector<'_>, tree: &syn::UseTree, prefix: &mut Vec<String>) {
            fn leaf(c: &mut Collector<'_>, prefix: &mut Vec<String>, ident: &syn::Ident) {
                prefix.push(ident.to_string());
                c.path(prefix, ident.span().start().line);
                prefix.pop();
            }
            match tree {
                syn::UseTree::Path(p) => {
                    prefix.push(p.ident.to_string());
                    walk(c, &p.tree, prefix);
                    prefix.pop();
                }
                syn::UseTree::Name(n) => leaf(c, prefix, &n.ident),
                syn::UseTree::Rename(r) => leaf(c, prefix, &r.ident),
                syn::UseTree::Glob(g) => c.path(prefix, g.star_token.spans[0].start().line),
                syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(c, t, prefix)),
            }
        }
        walk(self, &u.tree, &mut Vec::new());
    }

    fn visit_path(&mut self, p: &'a syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.path(&segments, first.ident.span().start().line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The knots of `graph`: sets of two or more modules that all reach each
/// other (Tarjan's strongly connected components), in a stable order.
pub fn knots(graph: &Graph) -> Vec<Vec<String>> {
    let next = successors(graph);
    let names: Vec<&String> = graph.modules.iter().collect();
    let index_of: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut state = Tarjan { index: vec![None; names.len()], low: vec![0; names.len()], ..Tarjan::default() };
    for v in 0..names.len() {
        if state.index[v].is_none() {
            state.connect(v, &|v| next[names[v]].iter().map(|n| index_of[n]).collect());
        }
    }
    let mut out: Vec<Vec<String>> = state
        .components
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect();
    out.sort();
    out
}

/// Each module's successors.
fn successors(graph: &Graph) -> BTreeMap<&String, Vec<&String>> {
    let mut next: BTreeMap<&String, Vec<&String>> = graph.modules.iter().map(|m| (m, Vec::new())).collect();
    for (from, to) in graph.arrows.keys() {
        next.entry(from).or_default().push(to);
    }
    next
}

#[derive(Default)]
struct Tarjan {
    counter: usize,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: BTreeSet<usize>,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn connect(&mut self, v: usize, next: &dyn Fn(usize) -> Vec<usize>) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack.insert(v);
        for w in next(v) {
            match self.index[w] {
                None => {
                    self.connect(w, next);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack.contains(&w) => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// The cycles that cover every arrow of `knot`: for each arrow `a → b`,
/// `a → b` then the shortest way from `b` back to `a` inside the knot;
/// each cycle once, started at its least module.
pub fn cycles(graph: &Graph, knot: &[String]) -> Vec<Vec<String>> {
    let inside: BTreeSet<&String> = knot.iter().collect();
    let next = successors(graph);
    let mut out: Vec<Vec<String>> = Vec::new();
    for (a, b) in graph.arrows.keys().filter(|(a, b)| inside.contains(a) && inside.contains(b)) {
        let Some(back) = shortest(&next, &inside, b, a) else { continue };
        // a → b → … → a, without repeating a at the end.
        let mut cycle: Vec<String> = vec![a.clone()];
        cycle.extend(back.into_iter().take_while(|m| m != a));
        let least = (0..cycle.len()).min_by_key(|&i| &cycle[i]).unwrap_or(0);
        cycle.rotate_left(least);
        if !out.contains(&cycle) {
            out.push(cycle);
        }
    }
    out.sort_by(|x, y| x.len().cmp(&y.len()).then_with(|| x.cmp(y)));
    out
}

/// The shortest path `from` … `to` through `inside`, both ends included.
fn shortest(
    next: &BTreeMap<&String, Vec<&String>>,
    inside: &BTreeSet<&String>,
    from: &String,
    to: &String,
) -> Option<Vec<String>> {
    let mut before: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(m) = queue.pop_front() {
        if m == to {
            let mut path = vec![m.clone()];
            let mut at = m;
            while let Some(p) = before.get(at) {
                path.push((*p).clone());
                at = p;
            }
            path.reverse();
            return Some(path);
        }
        for n in next.get(m).into_iter().flatten() {
            if inside.contains(n) && seen.insert(n) {
                before.insert(n, m);
                queue.push_back(n);
            }
        }
    }
    None
}

/// One finding: the knot, then each cycle as a chain with a `file:line`
/// per arrow.
fn describe(label: &str, graph: &Graph, knot: &[String]) -> String {
    let arrows = graph.arrows.keys().filter(|(a, b)| knot.contains(a) && knot.contains(b)).count();
    let mut out = format!(
        "{label}: {} modules depend on each other ({arrows} arrows between them): {}",
        knot.len(),
        knot.join(", ")
    );
    for cycle in cycles(graph, knot) {
        let mut chain = cycle.clone();
        chain.push(cycle[0].clone());
        out.push_str(&format!("\n  cycle {}", chain.join(" → ")));
        for pair in chain.windows(2) {
            let site = &graph.arrows[&(pair[0].clone(), pair[1].clone())];
            out.push_str(&format!("\n    {} → {}: {}:{} ({})", pair[0], pair[1], site.file, site.line, site.path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (path, text) under a temporary folder and parses them.
    fn crate_of(files: &[(&str, &str)]) -> (tempfile::TempDir, Sources) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let sources = Sources::read(dir.path()).unwrap();
        (dir, sources)
    }

    fn arrows(graph: &Graph) -> Vec<(String, String, String)> {
        graph.arrows.iter().map(|((a, b), s)| (a.clone(), b.clone(), format!("{}:{}", s.file, s.line))).collect()
    }

    #[test]
    fn arrows_come_from_crate_paths_reexports_super_and_macros_but_not_from_tests() {
        let (_dir, sources) = crate_of(&[
            ("src/lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\npub use d::Thing;\nfn root() { a::f(); }\n"),
            ("src/a.rs", "use crate::b::X;\nmod inner;\n#[cfg(test)]\nmod tests { use crate::c::Y; }\n"),
            // super:: inside a stays in a; super::super leaves it for c.
            ("src/a/inner.rs", "use super::Z;\nfn f() { super::super::c::g(); }\n"),
            ("src/b.rs", "fn f(t: crate::Thing) -> usize { std::mem::size_of_val(&t) }\n"),
            ("src/c.rs", "fn f() { println!(\"{}\", crate::a::N); }\n"),
            ("src/d.rs", "pub struct Thing;\n"),
        ]);
        let graph = graph(&sources.root.join("src/lib.rs"), &sources).unwrap();
        assert_eq!(graph.modules, ["a", "b", "c", "d"].map(String::from).into());
        assert_eq!(
            arrows(&graph),
            [
                ("a".into(), "b".into(), "src/a.rs:1".into()),
                ("a".into(), "c".into(), "src/a/inner.rs:2".into()),
                ("b".into(), "d".into(), "src/b.rs:1".into()),
                ("c".into(), "a".into(), "src/c.rs:1".into()),
            ]
        );
    }

    #[test]
    fn a_cycle_is_printed_as_a_chain_with_a_place_per_arrow() {
        let (_dir, sources) = crate_of(&[
            ("src/main.rs", "mod cli;\nmod commands;\nmod web;\nmod leaf;\n"),
            ("src/cli.rs", "use crate::commands::run;\nuse crate::leaf::x;\n"),
            ("src/commands/mod.rs", "mod why;\n"),
            ("src/commands/why.rs", "\nfn f() { crate::web::page(); }\n"),
            ("src/web.rs", "pub fn page() { crate::cli::parse(); crate::commands::why::answer(); }\n"),
            ("src/leaf.rs", "pub fn x() {}\n"),
        ]);
        let graph = graph(&sources.root.join("src/main.rs"), &sources).unwrap();
        let knots = knots(&graph);
        assert_eq!(knots, [["cli", "commands", "web"].map(String::from)]);
        assert_eq!(
            describe("rocemend", &graph, &knots[0]),
            "rocemend: 3 modules depend on each other (4 arrows between them): cli, commands, web\n  \
             cycle commands → web → commands\n    \
             commands → web: src/commands/why.rs:2 (crate::web::page)\n    \
             web → commands: src/web.rs:1 (crate::commands::why::answer)\n  \
             cycle cli → commands → web → cli\n    \
             cli → commands: src/cli.rs:1 (crate::commands::run)\n    \
             commands → web: src/commands/why.rs:2 (crate::web::page)\n    \
             web → cli: src/web.rs:1 (crate::cli::parse)"
        );
    }

    #[test]
    fn an_acyclic_crate_has_no_knot() {
        let (_dir, sources) = crate_of(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::B;\n"),
            ("src/b.rs", "pub struct B;\n"),
        ]);
        let graph = graph(&sources.root.join("src/lib.rs"), &sources).unwrap();
        assert_eq!(graph.arrows.len(), 1);
        assert!(knots(&graph).is_empty());
    }
}
