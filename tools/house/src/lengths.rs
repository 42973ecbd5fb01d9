//! Long functions: a function's lines from its `fn` to its closing brace,
//! tests included, against `max_function_lines`; the allow-list holds
//! measured hot paths, each with its reason, and an entry that allows
//! nothing any more is a finding too, so the list cannot rot.
//!
//! Free functions, methods, trait methods with a body and functions nested
//! in other functions count; closures are part of the function they are
//! in. Functions written inside a macro call (`proptest! { … }`) are not
//! seen: `syn` does not parse a macro's input.

use proc_macro2::Span;
use syn::visit::Visit;

use crate::config::Config;
use crate::sources::Sources;

/// A function and its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its file, relative to the workspace root.
    pub file: String,
    /// The line of its `fn`.
    pub line: usize,
    /// Its own name (`ingest_one`).
    pub name: String,
    /// Its name with what it is in: `Evaluator::ingest_one`, `outer::inner`.
    pub qualified: String,
    /// Lines from `fn` to the closing brace, both included.
    pub lines: usize,
}

/// The check: one finding per function over the limit and not allowed,
/// and one per allow-list entry that matches no long function.
pub fn check(sources: &Sources, config: &Config) -> Vec<String> {
    let max = config.max_function_lines;
    let mut long: Vec<Function> = Vec::new();
    for (path, file) in &sources.files {
        long.extend(functions(&sources.relative(path), file).into_iter().filter(|f| f.lines > max));
    }
    let allowed = |f: &Function| config.long_function.iter().any(|a| a.file == f.file && a.name == f.name);
    let mut out: Vec<String> = long
        .iter()
        .filter(|f| !allowed(f))
        .map(|f| format!("{}:{}: fn {} is {} lines (at most {max})", f.file, f.line, f.qualified, f.lines))
        .collect();
    for entry in &config.long_function {
        if !long.iter().any(|f| f.file == entry.file && f.name == entry.name) {
            out.push(format!(
                "house.toml allows {}::{} to be long, and no function of that name there is over {max} lines: remove the entry",
                entry.file, entry.name
            ));
        }
    }
    out
}

/// Every function of `file` with a body, with its length.
pub fn functions(relative: &str, file: &syn::File) -> Vec<Function> {
    let mut visitor = Lengths { file: relative, scope: Vec::new(), found: Vec::new() };
    visitor.visit_file(file);
    visitor.found
}

/// Walks a file, keeping the names of what a function is in.
struct Lengths<'a> {
    file: &'a str,
    /// Enclosing impl types, traits and functions.
    scope: Vec<String>,
    found: Vec<Function>,
}

impl Lengths<'_> {
    /// Records the function `name` from `fn_span` to `close`, then walks
    /// its body with its name in scope.
    fn function(&mut self, name: &syn::Ident, fn_span: Span, close: Span, walk: impl FnOnce(&mut Self)) {
        let (line, end) = (fn_span.start().line, close.end().line);
        let mut qualified = self.scope.clone();
        qualified.push(name.to_string());
        self.found.push(Function {
            file: self.file.to_string(),
            line,
            name: name.to_string(),
            qualified: qualified.join("::"),
            lines: end + 1 - line,
        });
        self.scope.push(name.to_string());
        walk(self);
        self.scope.pop();
    }
}

impl<'ast> Visit<'ast> for Lengths<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig.ident, f.sig.fn_token.span, f.block.brace_token.span.close(), |v| {
            syn::visit::visit_item_fn(v, f)
        });
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.sig.ident, f.sig.fn_token.span, f.block.brace_token.span.close(), |v| {
            syn::visit::visit_impl_item_fn(v, f)
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        match &f.default {
            Some(block) => self.function(&f.sig.ident, f.sig.fn_token.span, block.brace_token.span.close(), |v| {
                syn::visit::visit_trait_item_fn(v, f)
            }),
            None => syn::visit::visit_trait_item_fn(self, f),
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let name = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.scope.push(name.unwrap_or_else(|| "impl".into()));
        syn::visit::visit_item_impl(self, i);
        self.scope.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.scope.push(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.scope.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// The functions of `text` as the file `a.rs`.
    fn of(text: &str) -> Vec<Function> {
        functions("a.rs", &syn::parse_file(text).unwrap())
    }

    fn body(lines: usize) -> String {
        "    let _x = 1;\n".repeat(lines)
    }

    #[test]
    fn a_function_counts_from_fn_to_its_closing_brace_methods_and_nested_ones_too() {
        let text = format!(
            "/// doc\n#[inline]\nfn free() {{\n{}}}\n\nimpl<T> Thing<T> {{\n    pub fn method(&self) {{\n        fn inner() {{}}\n    }}\n}}\n\ntrait T {{\n    fn no_body();\n    fn with_body() {{\n    }}\n}}\n",
            body(3)
        );
        let found: Vec<(String, usize, usize)> =
            of(&text).into_iter().map(|f| (f.qualified, f.line, f.lines)).collect();
        assert_eq!(
            found,
            [
                ("free".to_string(), 3, 5),
                ("Thing::method".to_string(), 10, 3),
                ("Thing::method::inner".to_string(), 11, 1),
                ("T::with_body".to_string(), 17, 2),
            ]
        );
    }

    #[test]
    fn a_long_function_is_found_unless_allowed_and_a_stale_allowance_is_found_too() {
        let root = std::env::temp_dir();
        let text = format!("fn long() {{\n{}}}\nfn short() {{}}\nfn also_long() {{\n{}}}\n", body(9), body(9));
        let file = syn::parse_file(&text).unwrap();
        let sources = Sources { root: root.clone(), files: [(root.join("a.rs"), file)].into() };
        let config = Config::parse(
            "max_function_lines = 10\nmax_test_binaries = 15\n\
             [[long_function]]\nfile = \"a.rs\"\nname = \"also_long\"\nreason = \"measured\"\n\
             [[long_function]]\nfile = \"a.rs\"\nname = \"short\"\nreason = \"measured once\"\n",
        )
        .unwrap();
        assert_eq!(
            check(&sources, &config),
            [
                "a.rs:1: fn long is 11 lines (at most 10)",
                "house.toml allows a.rs::short to be long, and no function of that name there is over 10 lines: remove the entry",
            ]
        );
    }
}
