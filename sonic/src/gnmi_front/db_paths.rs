//! The DB client's paths (prefix target a database): `parsePath`, `probePathElements` and
//! `ensureKeysExistInRedis` (`db_client.go:656-906`).
//!
//! The prefix's elements and the path's are joined; element keys are ignored (only names
//! count). After the database: table, then key, then a second key part (joined with the
//! separator), then a field; a third element that is not a key but a field of the table's hash
//! (`COUNTERS_PORT_NAME_MAP/Ethernet0`) is read as that field. A Get of a key that does not
//! exist is NOT_FOUND "No valid entry found on <db> with key <redis key>"; a Subscribe to it is
//! accepted (it may appear later).

use gnmi_proto::gnmi::Path;

use super::backend::Backend;
use super::errors::{go_slice, GoError};
use super::render::{redis_error, TablePath};
use super::routing::target_db;
use super::virtual_paths::{self, MapsCache};

/// What path resolution needs of the front.
pub(crate) struct Resolver<'a> {
    /// The databases.
    pub backend: &'a dyn Backend,
    /// The virtual paths' name maps.
    pub maps: &'a MapsCache,
    /// The switch's namespaces (empty: single ASIC).
    pub namespaces: &'a [String],
    /// Whether each namespace has databases of its own (then the virtual paths, which
    /// sonic-gnmi builds across every namespace's name maps, are not served).
    pub per_asic: bool,
}

impl Resolver<'_> {
    /// `parsePath` + `probePathElements` of one path under `prefix`.
    pub async fn resolve(&self, prefix: Option<&Path>, path: &Path) -> Result<Vec<TablePath>, GoError> {
        let target = prefix.map(|p| p.target.as_str()).unwrap_or_default();
        let t = target_db(target, !self.namespaces.is_empty());
        if !t.valid {
            return Err(GoError::plain(format!("Invalid target dbName {}", t.name)));
        }
        if !t.namespace.is_empty() && !self.namespaces.contains(&t.namespace) {
            return Err(GoError::plain(format!("Invalid target dbNameSpace {}", t.namespace)));
        }
        let Some(info) = self.backend.database(&t.name) else {
            return Err(GoError::plain(format!(
                "Redis Client not present for dbName {} dbNamespace {}",
                t.name, t.namespace
            )));
        };
        let maps = if t.name == "COUNTERS_DB" { Some(self.maps.get(self.backend).await?) } else { None };
        let mut elems = vec![t.name.clone()];
        elems.extend(prefix.into_iter().flat_map(|p| p.elem.iter()).chain(&path.elem).map(|e| e.name.clone()));
        if let (Some(kind), Some(maps)) = (virtual_paths::lookup(&elems), &maps) {
            if self.per_asic {
                return Err(GoError::status(
                    tonic::Code::Unimplemented,
                    "the virtual paths of a multi-ASIC switch (name maps across namespaces) are not \
                     reproduced by this front; use origin sonic-db with the namespace",
                ));
            }
            if t.namespace_given {
                return Err(GoError::plain(format!(
                    "Target having {} namespace is not supported for V2R Dataset",
                    t.namespace
                )));
            }
            return virtual_paths::translate(kind, &elems, maps, info.separator);
        }
        let sep = info.separator;
        let mut tp = TablePath { db: t.name.clone(), sep, ..TablePath::default() };
        if let Some(table) = elems.get(1) {
            tp.table = table.clone();
        }
        match elems.len() {
            2 => {}
            3 => tp.key = elems[2].clone(),
            4 => tp.key = format!("{}{sep}{}", elems[2], elems[3]),
            5 => {
                tp.key = format!("{}{sep}{}", elems[2], elems[3]);
                tp.field = elems[4].clone();
            }
            _ => return Err(GoError::plain(format!("Invalid db table Path {}", go_slice(&elems)))),
        }
        self.probe(&mut tp).await?;
        Ok(vec![tp])
    }

    /// `probePathElements`: is the element after the table a key or a field?
    async fn probe(&self, tp: &mut TablePath) -> Result<(), GoError> {
        if !tp.field.is_empty() || tp.key.is_empty() {
            return Ok(());
        }
        let (b, db, sep) = (self.backend, tp.db.clone(), tp.sep);
        if let Some((first, second)) = tp.key.clone().split_once(sep) {
            let composite = format!("{}{sep}{}", tp.table, tp.key);
            if b.exists(&db, &composite).await.map_err(|_| redis_op("Exists", &composite))? {
                return Ok(());
            }
            let single = format!("{}{sep}{first}", tp.table);
            if b.hget(&db, &single, second).await.map_err(|_| redis_op("HExists", &single))?.is_some() {
                tp.key = first.to_string();
                tp.field = second.to_string();
            }
        } else {
            let full = format!("{}{sep}{}", tp.table, tp.key);
            if b.exists(&db, &full).await.map_err(|_| redis_op("Exists", &full))? {
                return Ok(());
            }
            if b.hget(&db, &tp.table, &tp.key).await.map_err(|_| redis_op("HExists", &tp.table))?.is_some() {
                tp.field = std::mem::take(&mut tp.key);
            }
        }
        Ok(())
    }

    /// `ensureKeysExistInRedis`: a Get's keys must exist.
    pub async fn ensure_exist(&self, tps: &[TablePath]) -> Result<(), GoError> {
        for tp in tps.iter().filter(|t| !t.key.is_empty() && !t.is_virtual) {
            let key = tp.redis_key();
            if !self.backend.exists(&tp.db, &key).await.map_err(redis_error)? {
                return Err(GoError::plain(format!("No valid entry found on {} with key {key}", tp.db)));
            }
        }
        Ok(())
    }
}

fn redis_op(op: &str, key: &str) -> GoError {
    GoError::plain(format!("redis {op} op failed for {key}"))
}
