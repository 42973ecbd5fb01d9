//! A table read as `T`, with where each of its keys was written: a table
//! that serves two harnesses (a [`FaultSpec`](super::FaultSpec)) or comes
//! from another crate's schema (a daemon's `[[fleet.budget]]`) is checked
//! after parsing, and its errors must still point at the key or the name
//! they are about.
//!
//! `Spanned<T>` would point at the table's header, and flattening `T`
//! beside spanned fields cannot work (serde would keep `name` from `T`,
//! and buffering loses the spans). So the table's entries are handed on to
//! `T` unchanged, straight from the TOML deserializer (every error keeps
//! its own position), and the place of each key is noted on the way.

use std::ops::Range;

use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// A table read as `T`, and where its keys were written.
#[derive(Debug, Clone)]
pub struct Keyed<T> {
    /// The table.
    pub value: T,
    /// Each key written, with where, in the file's order.
    pub keys: Vec<(String, Range<usize>)>,
}

impl<T> Keyed<T> {
    /// Where the value of `key` was written in `text`, the file the table
    /// was read from: what follows the key and its `=` to the end of the
    /// line (`0..0`, nowhere, when the key was not written).
    pub fn value_span(&self, key: &str, text: &str) -> Range<usize> {
        let Some((_, at)) = self.keys.iter().find(|(k, _)| k == key) else { return 0..0 };
        let line_end = text[at.end..].find('\n').map_or(text.len(), |i| at.end + i);
        let rest = &text[at.end..line_end];
        let value = rest.trim_start().strip_prefix('=').unwrap_or(rest).trim_start();
        line_end - value.len()..line_end - (value.len() - value.trim_end().len())
    }

    /// The first key written that `allowed` does not allow, with where.
    pub fn first_key_not(&self, allowed: impl Fn(&str) -> bool) -> Option<(&str, Range<usize>)> {
        self.keys.iter().find(|(k, _)| !allowed(k)).map(|(k, span)| (k.as_str(), span.clone()))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(KeyedVisitor(std::marker::PhantomData))
    }
}

struct KeyedVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for KeyedVisitor<T> {
    type Value = Keyed<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Keyed<T>, A::Error> {
        let mut keys = Vec::new();
        let tapped = Tap { inner: map, keys: &mut keys };
        let value = T::deserialize(serde::de::value::MapAccessDeserializer::new(tapped))?;
        Ok(Keyed { value, keys })
    }
}

/// Hands a table's entries on to `T`, noting each key's place.
struct Tap<'a, A> {
    inner: A,
    keys: &'a mut Vec<(String, Range<usize>)>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Tap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(KeyTap { seed, keys: self.keys })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

/// Reads a key with its place, notes it, and gives it to `T`'s key seed
/// inside the TOML deserializer's own call, so that an unknown key is still
/// reported at its position.
struct KeyTap<'a, K> {
    seed: K,
    keys: &'a mut Vec<(String, Range<usize>)>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeyTap<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<K::Value, D::Error> {
        let key = Spanned::<String>::deserialize(d)?;
        self.keys.push((key.get_ref().clone(), key.span()));
        self.seed.deserialize(key.into_inner().into_deserializer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Table {
        name: String,
        #[serde(default)]
        max: u32,
    }

    #[derive(Debug, Deserialize)]
    struct File {
        t: Vec<Keyed<Table>>,
    }

    #[test]
    fn each_key_and_its_value_are_placed_and_an_unknown_key_is_refused_where_it_is() {
        let text = "[[t]]\nname = \"a\"\nmax = 2\n";
        let file: File = toml::from_str(text).unwrap();
        let t = &file.t[0];
        assert_eq!((t.value.name.as_str(), t.value.max), ("a", 2));
        let keys: Vec<&str> = t.keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "max"]);
        assert_eq!(&text[t.keys[1].1.clone()], "max");
        assert_eq!(&text[t.value_span("name", text)], "\"a\"");
        assert_eq!(t.value_span("absent", text), 0..0);
        assert_eq!(t.first_key_not(|k| k == "name").map(|(k, _)| k), Some("max"));
        let e = toml::from_str::<File>("[[t]]\nname = \"a\"\nmaxx = 2\n").unwrap_err();
        assert!(e.message().contains("unknown field `maxx`"), "{e}");
        assert_eq!(e.span(), Some(17..21));
    }
}
