//! A queue table (`COUNTERS/<port>/Queues`: `{"<port>:<q>": {"<field>":
//! "<n>", …}, …}`) mapped straight from its JSON text, field by field as
//! it is read, without building a JSON tree.
//!
//! A large aggregator reads a million of these fields a second; parsing
//! each update into a `serde_json::Value` (a B-tree map per queue, a string
//! allocation per field) and dropping it was two thirds of the gNMI path's
//! cost. This reader borrows the keys and values from the update's bytes.
//!
//! It takes only the shape SONiC sends: an object of objects of strings
//! (or numbers, or `null`). Anything else — a key that is not
//! `<port>:<queue>`, a queue that is not an object, a counter that does not
//! parse — makes it give up ([`Streamed::Other`]) and take back what it
//! mapped, and the caller maps the update the general way, which says
//! precisely what is wrong. So both ways give the same readings and the
//! same errors.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::mapping::{absent_text, port_queue, queue_reading, Reading, PAUSE_STATUS, QUEUE_FIELDS};

/// What became of a streamed table.
#[derive(Debug, PartialEq, Eq)]
pub enum Streamed {
    /// Mapped: the readings are in the output.
    Mapped,
    /// Not the common shape: nothing was added; map it the general way.
    Other,
}

/// Maps the counters of the queue table `json` into `out`.
pub fn queue_counters(json: &[u8], out: &mut Vec<Reading>) -> Streamed {
    let before = out.len();
    let mut de = serde_json::Deserializer::from_slice(json);
    let mapped = Table { out: &mut *out }.deserialize(&mut de).and_then(|ok| de.end().map(|()| ok));
    match mapped {
        Ok(true) => Streamed::Mapped,
        _ => {
            out.truncate(before);
            Streamed::Other
        }
    }
}

/// A string borrowed from the input where it has no escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field's value, as far as a counter cares.
enum Scalar<'de> {
    Text(Cow<'de, str>),
    Count(u64),
    Null,
    /// A negative or fractional number, a boolean, an array or an object.
    Other,
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Text(Cow::Owned(s.to_string())))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Count(n))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Scalar<'de>, E> {
                Ok(u64::try_from(n).map_or(Scalar::Other, Scalar::Count))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other)
            }
            fn visit_unit<E>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A seed that is its own visitor of whatever comes: the table and the
/// queue below, each answering whether the value had the common shape.
macro_rules! seed_of_any {
    ($ty:ty) => {
        impl<'de> DeserializeSeed<'de> for $ty {
            type Value = bool;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// The visits of values that are never the common shape of the table nor
/// of a queue: `Ok(false)`, so the general way reads the update and names
/// what is wrong with it.
macro_rules! not_the_common_shape {
    ($de:lifetime) => {
        fn visit_seq<A: SeqAccess<$de>>(self, _: A) -> Result<bool, A::Error> {
            Ok(false)
        }
        fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
    };
}

/// The whole table; `Ok(false)` when it is not the common shape.
struct Table<'o> {
    out: &'o mut Vec<Reading>,
}

seed_of_any!(Table<'_>);

impl<'de> Visitor<'de> for Table<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a queue table")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while let Some(Text(key)) = map.next_key::<Text>()? {
            // SONiC keeps the periodic watermarks beside the queue's own
            // entry (`Ethernet0:3:periodic`); the entry has the watermark.
            if key.ends_with(":periodic") {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let Some((port, q)) = port_queue(&key) else { return Ok(false) };
            if !map.next_value_seed(Queue { port, q, out: &mut *self.out })? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    // Any other top level is not a table: the general way says so.
    not_the_common_shape!('de);
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// One queue's fields; `Ok(false)` when they are not the common shape.
struct Queue<'p, 'o> {
    port: &'p str,
    q: u8,
    out: &'o mut Vec<Reading>,
}

seed_of_any!(Queue<'_, '_>);

impl<'de> Visitor<'de> for Queue<'_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a queue's fields")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while let Some(Text(field)) = map.next_key::<Text>()? {
            if field == PAUSE_STATUS {
                // Broadcom's pause status names priorities through the QoS maps: the general way.
                return Ok(false);
            }
            let Some(&(_, metric, kind)) = QUEUE_FIELDS.iter().find(|(f, _, _)| *f == field) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let n = match map.next_value::<Scalar>()? {
                Scalar::Null => continue,
                Scalar::Text(s) if absent_text(&s) => continue,
                Scalar::Text(s) => match s.trim().parse() {
                    Ok(n) => n,
                    Err(_) => return Ok(false),
                },
                Scalar::Count(n) => n,
                Scalar::Other => return Ok(false),
            };
            self.out.push(queue_reading(metric, kind, self.port, self.q, n));
        }
        Ok(true)
    }
    // An absent queue (`null`, `"None"`, `"N/A"`, empty) is skipped, as
    // the general way skips it; anything else not an object is its error.
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_str<E>(self, s: &str) -> Result<bool, E> {
        Ok(absent_text(s))
    }
    not_the_common_shape!('de);
}

#[cfg(test)]
mod tests {
    use super::super::mapping::{queue_table, QueueFields};
    use super::*;

    /// The readings of `json` the general way (a tree), or its error.
    fn general(json: &str) -> Result<Vec<Reading>, String> {
        let tree: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        queue_table("COUNTERS/Ethernet0/Queues", &tree, QueueFields { counters: true, watchdog: false }, &mut out)
            .map_err(|e| e.to_string())?;
        Ok(out)
    }

    fn sorted(mut v: Vec<Reading>) -> Vec<Reading> {
        v.sort_by(|a, b| (&a.port, a.queue, a.metric).cmp(&(&b.port, b.queue, b.metric)));
        v
    }

    #[test]
    fn the_common_shape_is_mapped_as_the_general_way_maps_it() {
        let tables = [
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "12", "SAI_QUEUE_STAT_BYTES": "4096",
                "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": " 77 ", "SAI_QUEUE_STAT_UNKNOWN": [1, 2]},
               "Ethernet0:4": {"SAI_QUEUE_STAT_DROPPED_PACKETS": 5, "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES": null,
                "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "N/A", "SAI_QUEUE_STAT_DROPPED_BYTES": "None"},
               "Ethernet0:3:periodic": {"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "1"},
               "Ethernet0:5": null, "Ethernet0:6": "", "Ethern\u0065t4:1": {"SAI_QUEUE_STAT_PACKETS": "1"}}"#,
            "{}",
        ];
        for json in tables {
            let mut out = vec![];
            assert_eq!(queue_counters(json.as_bytes(), &mut out), Streamed::Mapped, "{json}");
            assert_eq!(sorted(out), sorted(general(json).unwrap()), "{json}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_general_way_with_nothing_added() {
        let others = [
            r#"{"Ethernet0": {"SAI_QUEUE_STAT_PACKETS": "1"}}"#,
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "1"}, "Ethernet0:4": 7}"#,
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "many"}}"#,
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": -1}}"#,
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": 1.5}}"#,
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": {"a": 1}}}"#,
            r#"["Ethernet0:3"]"#,
            r#"{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "1"}"#,
            r#"{"Ethernet0:3": {}} trailing"#,
        ];
        for json in others {
            let mut out =
                vec![queue_reading("switch_queue_packets", super::super::mapping::ReadingKind::Counter, "x", 0, 1)];
            assert_eq!(queue_counters(json.as_bytes(), &mut out), Streamed::Other, "{json}");
            assert_eq!(out.len(), 1, "{json}: nothing added");
        }
        // The general way gives the error (where it is one: a truncated
        // document does not parse at all).
        assert!(general(others[0]).unwrap_err().contains("is not <port>:<queue>"));
        assert!(general(others[2]).unwrap_err().contains("is not a counter"));
    }
}
