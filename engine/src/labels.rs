//! Interned strings and label sets.
//!
//! Metric names, label names and label values are interned to [`Sym`]s on
//! first sight, so the hot path compares and hashes integers, never strings.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// An interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// Owns every interned string. Strings are never freed: the set of metric
/// and label names is small and the set of label values is bounded by the
/// per-sensor series cap.
#[derive(Debug, Default)]
pub struct Interner {
    ids: HashMap<Arc<str>, Sym>,
    strings: Vec<Arc<str>>,
}

impl Interner {
    /// The symbol of `s`, interning it if new.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(sym) = self.ids.get(s) {
            return *sym;
        }
        let sym = Sym(self.strings.len() as u32);
        let owned: Arc<str> = Arc::from(s);
        self.strings.push(owned.clone());
        self.ids.insert(owned, sym);
        sym
    }

    /// The symbol of `s` if it was interned before.
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.ids.get(s).copied()
    }

    /// The string behind `sym`.
    pub fn resolve(&self, sym: Sym) -> &str {
        &self.strings[sym.0 as usize]
    }
}

/// A set of labels as interned (name, value) pairs, sorted by name symbol.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LabelSet(Arc<[(Sym, Sym)]>);

impl LabelSet {
    /// Builds a set from pairs; later duplicates of a name are dropped.
    pub fn new(mut pairs: Vec<(Sym, Sym)>) -> LabelSet {
        pairs.sort_by_key(|(name, _)| *name);
        pairs.dedup_by_key(|(name, _)| *name);
        LabelSet(pairs.into())
    }

    /// The value of label `name`, if present.
    pub fn get(&self, name: Sym) -> Option<Sym> {
        self.0.binary_search_by_key(&name, |(n, _)| *n).ok().map(|i| self.0[i].1)
    }

    /// The pairs, sorted by name symbol.
    pub fn pairs(&self) -> &[(Sym, Sym)] {
        &self.0
    }

    /// Resolves the set into owned strings, sorted by name.
    pub fn to_labels(&self, interner: &Interner) -> Labels {
        Labels(
            self.0.iter().map(|(n, v)| (interner.resolve(*n).to_string(), interner.resolve(*v).to_string())).collect(),
        )
    }
}

/// Labels as strings: the form that crosses the engine's boundary (rule
/// subjects, proposals, recordings, reports).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Labels(pub BTreeMap<String, String>);

impl Labels {
    /// Labels from `(name, value)` pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Labels {
        Labels(pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    /// The value of label `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Sets a label, replacing any earlier value.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.insert(name.into(), value.into());
    }

    /// Whether every label of `other` has the same value here.
    pub fn contains_all(&self, other: &Labels) -> bool {
        other.0.iter().all(|(k, v)| self.0.get(k) == Some(v))
    }
}

impl fmt::Display for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}={v:?}")?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_resolvable() {
        let mut i = Interner::default();
        let a = i.intern("node");
        let b = i.intern("rail");
        assert_ne!(a, b);
        assert_eq!(i.intern("node"), a);
        assert_eq!(i.resolve(b), "rail");
        assert_eq!(i.get("missing"), None);
    }

    #[test]
    fn label_sets_are_order_independent() {
        let mut i = Interner::default();
        let (n, r, x, y) = (i.intern("node"), i.intern("rail"), i.intern("n1"), i.intern("0"));
        let one = LabelSet::new(vec![(n, x), (r, y)]);
        let two = LabelSet::new(vec![(r, y), (n, x)]);
        assert_eq!(one, two);
        assert_eq!(one.get(r), Some(y));
        assert_eq!(one.to_labels(&i).to_string(), r#"{node="n1",rail="0"}"#);
    }
}
