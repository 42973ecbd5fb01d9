//! Set, as `Server.Set` (`server.go:1108-1273`) and the mixed client's CONFIG_DB write
//! (`mixed_db_client.go:1388-1675`) apply it.
//!
//! - Neither write flag → Unimplemented "GNMI is in read-only mode". The route is the origin
//!   alone (the prefix's, else the paths'): the target is never looked at. Origin `sonic-db`
//!   needs native write ("GNMI native write is disabled"); every other Set goes to translib
//!   ("Translib write is disabled"; with it on, not reproduced here).
//! - CONFIG_DB through the mixed client is not written key by key: sonic-gnmi checks each
//!   operation against a checkpoint of the configuration (`JsonClient`, `json_client.go`),
//!   turns the request into one JSON patch, and hands it to the host's generic config updater
//!   (`config apply-patch`, over D-Bus). The updater computes the target configuration, checks
//!   it, and writes the **difference** from the running one with `ConfigDBConnector.set_entry`
//!   (sonic-utilities `change_applier.py:127-135`; swss-common `configdb.cpp:72-94`): `HSET` of
//!   the new fields and `HDEL` of the dropped ones, `DEL` only for an entry that is gone, then
//!   sleeps a second (`change_applier.py:166`). So one Set that deletes an entry and writes it
//!   again **changes it in place**; a started PFC watchdog keeps its old action. Only a Set
//!   that deletes it, then another that writes it, makes orchagent restart it.
//! - Update of a table or an entry replaces it whole (`JsonClient.Add`); update of a field sets
//!   that field; replace needs the path to exist ("Invalid entry map[…]"); delete of a path
//!   that does not exist is skipped, and a Set whose operations are all skipped succeeds
//!   without writing. Values must be JSON_IETF (a `string_val` fails "Fail to parse "); a
//!   field's value must be a JSON string or list.
//! - The updater refuses a configuration its YANG models refuse; this front checks the fields
//!   rocemend writes of the tables it writes (`PFC_WD`, `PORT`, `QUEUE`, `WRED_PROFILE`) with
//!   [`gnmi_proto::sonic`]'s rules, and `PFC_WD` keys against `PORT` (a leafref); the other
//!   fields of those tables pass unchecked.
//! - A Set that fails returns the error alone (grpc-go drops the response): Unknown with the
//!   updater's line "Failed to apply patch due to: … Error: …" or "Error: …".

use std::collections::BTreeMap;

use gnmi_proto::gnmi::typed_value::Value as Typed;
use gnmi_proto::gnmi::update_result::Operation;
use gnmi_proto::gnmi::{Path, SetRequest, SetResponse, Update, UpdateResult};
use serde_json::{Map, Value as Json};
use tonic::{Code, Status};

use super::backend::{Backend, Entry, WriteOp};
use super::errors::{go_slice, go_value, py_repr, status, GoError};
use super::mixed::Mixed;
use super::render::{redis_error, Encoding};
use super::routing::{parse_origin, translib_not_served, SONIC_DB};
use super::Shared;

pub(crate) async fn set(shared: &Shared, req: SetRequest) -> Result<SetResponse, Status> {
    let config = &shared.config;
    if !config.native_write && !config.translib_write {
        return Err(status(Code::Unimplemented, "GNMI is in read-only mode"));
    }
    let prefix = req.prefix.as_ref();
    let paths: Vec<Path> = req
        .delete
        .iter()
        .cloned()
        .chain(req.replace.iter().chain(&req.update).map(|u| u.path.clone().unwrap_or_default()))
        .collect();
    let origin = match prefix.map(|p| p.origin.as_str()).filter(|o| !o.is_empty()) {
        Some(o) => o.to_string(),
        None => parse_origin(&paths)?,
    };
    if origin != SONIC_DB || !config.mixed_db {
        if !config.translib_write {
            return Err(status(Code::Unimplemented, "Translib write is disabled"));
        }
        return Err(translib_not_served(&paths).passed_or(Code::NotFound));
    }
    if !config.native_write {
        return Err(status(Code::Unimplemented, "GNMI native write is disabled"));
    }
    let backend = shared.backend.as_ref();
    let mixed = Mixed::new(backend, &config.namespaces, prefix, &paths, Encoding::JsonIetf)
        .map_err(|e| e.wrapped(Code::NotFound))?;
    let mut results = Vec::new();
    let result = |path: Option<Path>, op: Operation| UpdateResult { path, op: op as i32, ..Default::default() };
    results.extend(req.delete.iter().map(|p| result(Some(p.clone()), Operation::Delete)));
    results.extend(req.replace.iter().map(|u| result(u.path.clone(), Operation::Replace)));
    results.extend(req.update.iter().map(|u| result(u.path.clone(), Operation::Update)));
    let applied = match mixed.target.as_str() {
        "CONFIG_DB" => config_db(shared, &mixed, &req.delete, &req.replace, &req.update).await,
        "APPL_DB" | "DPU_APPL_DB" => Err(GoError::status(
            Code::Unimplemented,
            "writes to APPL_DB (swss ProducerStateTable) are not reproduced by this front",
        )),
        other => Err(GoError::plain(format!("Set RPC does not support {other}"))),
    };
    // A plain Go error returned by a handler reaches the client as Unknown.
    applied.map_err(|e| e.passed_or(Code::Unknown))?;
    Ok(SetResponse { prefix: req.prefix.clone(), response: results, ..Default::default() })
}

/// One operation of the JSON patch handed to the updater.
#[derive(Debug, Clone)]
struct PatchOp {
    op: &'static str,
    path: String,
    value: Option<Json>,
}

/// `SetConfigDB` → `SetIncrementalConfig` (`mixed_db_client.go:1388-1556`, `:1643-1673`).
async fn config_db(
    shared: &Shared,
    mixed: &Mixed,
    delete: &[Path],
    replace: &[Update],
    update: &[Update],
) -> Result<(), GoError> {
    let backend = shared.backend_of(&mixed.namespace);
    let names = |path: &Path| -> Result<Vec<String>, GoError> {
        Ok(mixed.full_elems(path)?.into_iter().map(|e| e.name).collect())
    };
    let whole = |path: &Path| names(path).map(|n| n.is_empty());
    if (delete.len() == 1 && replace.is_empty() && update.len() == 1)
        && whole(&delete[0])?
        && whole(&update[0].path.clone().unwrap_or_default())?
        || (delete.is_empty() && replace.len() == 1 && update.is_empty())
            && whole(&replace[0].path.clone().unwrap_or_default())?
    {
        return Err(GoError::status(
            Code::Unimplemented,
            "whole-configuration Set (YANG validation, config replace) is not reproduced by this front",
        ));
    }
    // The checkpoint: the configuration of the tables the request touches (sonic-gnmi's holds
    // every table; the texts that print it here print these).
    let mut touched: Vec<String> = Vec::new();
    for path in delete.iter().chain(replace.iter().chain(update).filter_map(|u| u.path.as_ref())) {
        if let Some(table) = names(path)?.first() {
            let table = table.replace("~1", "/");
            if !touched.contains(&table) {
                touched.push(table);
            }
        }
    }
    let running = read_tables(backend, mixed, &touched).await?;
    let mut checkpoint = running.clone();
    let mut patch = Vec::new();
    for path in delete {
        let n = names(path)?;
        if !n.is_empty() && json_remove(&mut checkpoint, &n).is_err() {
            continue;
        }
        patch.push(PatchOp { op: "remove", path: pointer(&n), value: None });
    }
    for item in replace {
        let path = item.path.clone().unwrap_or_default();
        let n = names(&path)?;
        let text = ietf_text(item);
        match &item.val {
            None => {
                if !n.is_empty() && json_remove(&mut checkpoint, &n).is_err() {
                    continue;
                }
            }
            Some(_) if !n.is_empty() => {
                json_remove(&mut checkpoint, &n)?;
                json_add(&mut checkpoint, &n, &text)?;
            }
            Some(_) => {}
        }
        patch.push(patch_op("replace", &n, item)?);
    }
    for item in update {
        let path = item.path.clone().unwrap_or_default();
        let n = names(&path)?;
        if !n.is_empty() {
            if item.val.is_none() {
                return Err(GoError::plain(format!("Invalid update {}", super::errors::go_path(&path))));
            }
            json_add(&mut checkpoint, &n, &ietf_text(item))?;
        }
        patch.push(patch_op("add", &n, item)?);
    }
    if patch.is_empty() {
        return Ok(());
    }
    apply_patch(shared, mixed, running, &patch).await
}

fn ietf_text(update: &Update) -> String {
    match update.val.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Typed::JsonIetfVal(j)) => String::from_utf8_lossy(j).into_owned(),
        _ => String::new(),
    }
}

/// `ConvertToJsonPatch`: the path's names joined with `/`, as they are (a `/` inside a name is
/// not escaped, so the updater reads it as one more level).
fn patch_op(op: &'static str, names: &[String], update: &Update) -> Result<PatchOp, GoError> {
    let value = match &update.val {
        None => None,
        Some(_) => {
            let text = ietf_text(update);
            if text.is_empty() {
                return Err(GoError::plain("Value encoding is not IETF JSON"));
            }
            Some(serde_json::from_str(&text).map_err(|e| GoError::plain(format!("JSON unmarshalling error: {e}")))?)
        }
    };
    Ok(PatchOp { op, path: pointer(names), value })
}

fn pointer(names: &[String]) -> String {
    format!("/{}", names.join("/"))
}

/// The tables `touched` as `config checkpoint` writes them: table → key → field → value, a
/// `name@` field as a list.
async fn read_tables(backend: &dyn Backend, mixed: &Mixed, touched: &[String]) -> Result<Map<String, Json>, GoError> {
    let mut out = Map::new();
    for table in touched {
        let prefix = format!("{table}{}", mixed.sep);
        let pattern = format!("{}*", crate::client::escape_glob(&prefix));
        let mut entries = Map::new();
        for key in backend.keys(&mixed.target, &pattern).await.map_err(redis_error)? {
            let fields = backend.hgetall(&mixed.target, &key).await.map_err(redis_error)?;
            let mut entry = Map::new();
            for (f, v) in fields {
                match f.strip_suffix('@') {
                    Some(name) => {
                        entry.insert(name.into(), Json::Array(v.split(',').map(|s| Json::String(s.into())).collect()))
                    }
                    None => entry.insert(f, Json::String(v)),
                };
            }
            entries.insert(key[prefix.len()..].to_string(), Json::Object(entry));
        }
        if !entries.is_empty() {
            out.insert(table.clone(), Json::Object(entries));
        }
    }
    Ok(out)
}

fn fix_path(names: &[String]) -> Vec<String> {
    let mut n = names.to_vec();
    if n.len() >= 2 {
        n[1] = n[1].replace("~1", "/");
    }
    n
}

fn parse(value: &str) -> Result<Json, GoError> {
    serde_json::from_str(value).map_err(|_| GoError::plain(format!("Fail to parse {value}")))
}

fn object<'a>(
    parent: &'a mut Map<String, Json>,
    name: &str,
    missing: impl FnOnce(&Map<String, Json>) -> String,
) -> Result<&'a mut Map<String, Json>, GoError> {
    let shown = missing(parent);
    match parent.get_mut(name) {
        None => Err(GoError::plain(shown)),
        Some(Json::Object(m)) => Ok(m),
        Some(other) => Err(GoError::plain(format!("Invalid entry {}", go_value(other)))),
    }
}

/// `JsonClient.Remove` (`json_client.go:340-424`, lists by index not reproduced).
fn json_remove(db: &mut Map<String, Json>, names: &[String]) -> Result<(), GoError> {
    let n = fix_path(names);
    let whole = Json::Object(db.clone());
    match n.len() {
        1 => {
            object(db, &n[0], |_| format!("Invalid database {} -> {}", n[0], go_value(&whole)))?;
            db.remove(&n[0]);
        }
        2 | 3 => {
            let table = object(db, &n[0], |_| format!("Invalid database {} -> {}", n[0], go_value(&whole)))?;
            let table_shown = Json::Object(table.clone());
            let entry = object(table, &n[1], |_| format!("Invalid entry {}", go_value(&table_shown)))?;
            if n.len() == 3 {
                let entry_shown = Json::Object(entry.clone());
                match entry.get(&n[2]) {
                    None => return Err(GoError::plain(format!("Invalid entry {}", go_value(&entry_shown)))),
                    Some(Json::String(_) | Json::Array(_)) => {}
                    Some(other) => return Err(GoError::plain(format!("Invalid field {}", go_value(other)))),
                }
                entry.remove(&n[2]);
                if !entry.is_empty() {
                    return Ok(());
                }
            }
            table.remove(&n[1]);
            if table.is_empty() {
                db.remove(&n[0]);
            }
        }
        _ => return Err(GoError::plain(format!("Invalid db table Path {}", go_slice(&n)))),
    }
    Ok(())
}

/// `JsonClient.Add` (`json_client.go:206-300`): a table or an entry is replaced whole.
fn json_add(db: &mut Map<String, Json>, names: &[String], value: &str) -> Result<(), GoError> {
    let n = fix_path(names);
    match n.len() {
        1 => match parse(value)? {
            Json::Object(m) => {
                db.insert(n[0].clone(), Json::Object(m));
            }
            other => return Err(GoError::plain(format!("Invalid table {}", go_value(&other)))),
        },
        2 | 3 => {
            // The table is taken out and put back, so the entry can be borrowed alone.
            let mut t = match db.remove(&n[0]) {
                Some(Json::Object(m)) => m,
                _ => Map::new(),
            };
            let result = (|| {
                if n.len() == 2 {
                    match parse(value)? {
                        Json::Object(m) => {
                            t.insert(n[1].clone(), Json::Object(m));
                            Ok(())
                        }
                        other => Err(GoError::plain(format!("Invalid entry {}", go_value(&other)))),
                    }
                } else {
                    let entry = t.entry(n[1].clone()).or_insert_with(|| Json::Object(Map::new()));
                    if !entry.is_object() {
                        *entry = Json::Object(Map::new());
                    }
                    let field = parse(value)?;
                    match field {
                        Json::String(_) | Json::Array(_) => {
                            if let Json::Object(e) = entry {
                                e.insert(n[2].clone(), field);
                            }
                            Ok(())
                        }
                        other => Err(GoError::plain(format!("Invalid field {}", go_value(&other)))),
                    }
                }
            })();
            db.insert(n[0].clone(), Json::Object(t));
            result?;
        }
        _ => return Err(GoError::plain(format!("Invalid db table Path {}", go_slice(&n)))),
    }
    Ok(())
}

/// What the host's updater prints when it fails: the first stderr line holding "Error"
/// (sonic-host-services `host_modules/gcu.py`).
fn updater_error(text: String) -> GoError {
    GoError::plain(if text.contains("Error") {
        format!("Failed to apply patch due to: {text}")
    } else {
        format!("Error: {text}")
    })
}

/// The updater (`PatchApplier.apply`, sonic-utilities `generic_updater.py:106-160`): the
/// target configuration, its checks, and the difference written entry by entry.
async fn apply_patch(
    shared: &Shared,
    mixed: &Mixed,
    running: Map<String, Json>,
    patch: &[PatchOp],
) -> Result<(), GoError> {
    let mut target = Json::Object(running.clone());
    for op in patch {
        simulate(&mut target, op).map_err(updater_error)?;
    }
    let Json::Object(target) = target else {
        return Err(updater_error("the patch removed the whole configuration".into()));
    };
    let empty: Vec<&String> =
        target.iter().filter(|(_, t)| t.as_object().is_some_and(Map::is_empty)).map(|(k, _)| k).collect();
    if !empty.is_empty() {
        let names: Vec<&str> = empty.iter().map(|s| s.as_str()).collect();
        return Err(updater_error(format!(
            "localhost: given patch is not valid because it will result in empty tables which is not allowed in ConfigDb. Table{}: {}",
            if names.len() != 1 { "s" } else { "" },
            names.join(", ")
        )));
    }
    // `StrictPatchSorter.sort`: every table the patch touches must have a YANG model. This
    // front takes the tables CONFIG_DB already has, and those rocemend writes, as modelled.
    for op in patch {
        let table = op.path.split('/').nth(1).unwrap_or_default().replace("~1", "/").replace("~0", "~");
        if !running.contains_key(&table) && !gnmi_proto::sonic::TABLES.contains(&table.as_str()) {
            return Err(updater_error(
                "Given patch is not valid because it has changes to tables without YANG models".into(),
            ));
        }
    }
    let backend = shared.backend_of(&mixed.namespace);
    validate(backend, mixed, &running, &target)
        .await
        .map_err(|e| updater_error(format!("{}. Error: {e}", crate::gnmi::texts::PATCH_INVALID)))?;
    let mut ops = Vec::new();
    let tables: std::collections::BTreeSet<&String> = running.keys().chain(target.keys()).collect();
    for table in tables {
        let (old, new) = (entries(running.get(table)), entries(target.get(table)));
        let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for key in keys {
            let (o, n) = (old.get(key), new.get(key));
            if o == n {
                continue;
            }
            let redis_key = format!("{table}{}{key}", mixed.sep);
            match n {
                // `set_entry(…, None)`.
                None => ops.push(WriteOp::Del { key: redis_key }),
                Some(n) => {
                    ops.push(WriteOp::HSet { key: redis_key.clone(), fields: n.clone() });
                    let dropped: Vec<String> =
                        o.into_iter().flat_map(|o| o.keys()).filter(|f| !n.contains_key(*f)).cloned().collect();
                    if !dropped.is_empty() {
                        ops.push(WriteOp::HDel { key: redis_key, fields: dropped });
                    }
                }
            }
        }
    }
    if ops.is_empty() {
        return Ok(());
    }
    backend.write(&mixed.target, &ops).await.map_err(|e| updater_error(e.to_string()))?;
    tokio::time::sleep(shared.config.gcu_step).await;
    Ok(())
}

/// A table's entries as Redis fields (`typed_to_raw`: lists as `name@` joined with `,`).
fn entries(table: Option<&Json>) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    for (key, entry) in table.and_then(Json::as_object).into_iter().flatten() {
        let mut fields = Entry::new();
        for (f, v) in entry.as_object().into_iter().flatten() {
            match v {
                Json::Array(items) => {
                    let items: Vec<String> =
                        items.iter().map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string)).collect();
                    fields.insert(format!("{f}@"), items.join(","));
                }
                Json::String(s) => {
                    fields.insert(f.clone(), s.clone());
                }
                other => {
                    fields.insert(f.clone(), other.to_string());
                }
            }
        }
        out.insert(key.clone(), fields);
    }
    out
}

/// One JSON patch operation on the configuration, as python's `jsonpatch` applies it.
fn simulate(doc: &mut Json, op: &PatchOp) -> Result<(), String> {
    let parts: Vec<String> = op.path.split('/').skip(1).map(|p| p.replace("~1", "/").replace("~0", "~")).collect();
    let Some((last, parents)) = parts.split_last() else {
        return match op.op {
            "remove" => Err("removing the whole configuration is not allowed".into()),
            _ => {
                *doc = op.value.clone().unwrap_or(Json::Null);
                Ok(())
            }
        };
    };
    let mut cur = &mut *doc;
    for part in parents {
        let shown = py_repr(cur);
        cur = match cur.as_object_mut().and_then(|m| m.get_mut(part)) {
            Some(next) => next,
            None => return Err(format!("member '{part}' not found in {shown}")),
        };
    }
    let Some(obj) = cur.as_object_mut() else { return Err(format!("can't address '{last}' in a value")) };
    match op.op {
        "remove" => obj.remove(last).map(drop).ok_or_else(|| format!("can't remove a non-existent object '{last}'")),
        "replace" => {
            if !obj.contains_key(last) {
                return Err(format!("can't replace a non-existent object '{last}'"));
            }
            obj.insert(last.clone(), op.value.clone().unwrap_or(Json::Null));
            Ok(())
        }
        _ => {
            obj.insert(last.clone(), op.value.clone().unwrap_or(Json::Null));
            Ok(())
        }
    }
}

/// The YANG checks this front knows, on the tables the patch changed.
async fn validate(
    backend: &dyn Backend,
    mixed: &Mixed,
    running: &Map<String, Json>,
    target: &Map<String, Json>,
) -> Result<(), String> {
    use gnmi_proto::sonic;
    for (table, entries_json) in target {
        if running.get(table) == Some(entries_json) {
            continue;
        }
        // A table is an object of entries, an entry an object of fields (strings or lists).
        let Some(table_entries) = entries_json.as_object() else {
            return Err(format!("{table}: a table is an object of entries"));
        };
        for (key, entry) in table_entries {
            let fields_ok = entry.as_object().is_some_and(|f| f.values().all(|v| v.is_string() || v.is_array()));
            if !fields_ok {
                return Err(format!("{table}|{key}: an entry is an object of string or list fields"));
            }
        }
        if !sonic::TABLES.contains(&table.as_str()) {
            continue;
        }
        let before = entries(running.get(table));
        for (key, fields) in entries(Some(entries_json)) {
            if before.get(&key) == Some(&fields) {
                continue;
            }
            if table == sonic::PFC_WD && key == "GLOBAL" {
                continue;
            }
            sonic::check_key(table, &key).map_err(|e| e.to_string())?;
            // The fields rocemend writes are checked; the others of these tables (a queue's
            // `scheduler`, a port's `lanes`) are in SONiC's YANG models but not in this front's,
            // which passes them rather than refuse what the switch accepts.
            let known: Entry = fields.into_iter().filter(|(f, _)| sonic::known_field(table, f)).collect();
            sonic::check_entry(table, &known).map_err(|e| e.to_string())?;
            if table == sonic::PFC_WD {
                // `sonic-pfcwd.yang`: the key is a leafref to a port.
                let port = format!("PORT{}{key}", mixed.sep);
                let exists = target.get("PORT").and_then(|t| t.get(&key)).is_some()
                    || backend.exists(&mixed.target, &port).await.map_err(|e| e.to_string())?;
                if !exists {
                    return Err(format!("PFC_WD {key:?}: no such PORT entry (a leafref to PORT)"));
                }
            }
        }
    }
    Ok(())
}
