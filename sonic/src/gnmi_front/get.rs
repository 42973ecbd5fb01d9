//! Get, as `Server.Get` (`server.go:962-1087`) answers it.
//!
//! - Only type ALL; encodings JSON, JSON_IETF and PROTO (else Unimplemented
//!   "unsupported encoding: ASCII").
//! - Prefix target a database → the DB client; its paths must exist ("No valid entry found on
//!   CONFIG_DB with key PFC_WD|Ethernet9"); virtual paths never are checked. Values are
//!   `json_ietf_val` objects, or a `string_val` for a field.
//! - Origin `sonic-db` → the mixed client. It renders entries in JSON_IETF or PROTO only: a
//!   Get of an entry in the default encoding (JSON) fails "Unknown encoding JSON". A key or
//!   field with no data is "No valid entry found for path <path message>"; a table with none is
//!   an empty answer (no notification).
//! - Anything else → translib (not reproduced: Unimplemented, saying so).
//! - A client that cannot be made is NOT_FOUND with its error's text; a status error made
//!   there reads `rpc error: code = … desc = …` inside it (`server.go:1050-1053`).
//! - One notification per path, with the request's prefix and the path as asked.

use std::time::{SystemTime, UNIX_EPOCH};

use gnmi_proto::gnmi::{
    get_request::DataType, Encoding as GnmiEncoding, GetRequest, GetResponse, Notification, Update,
};
use tonic::{Code, Status};

use super::errors::{status, GoError};
use super::mixed::Mixed;
use super::render::{db_get_value, mixed_read, Encoding};
use super::routing::{parse_origin, target_db, translib_not_served, SONIC_DB};
use super::Shared;

/// Nanoseconds since the epoch, as notifications carry them.
pub(crate) fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The encodings sonic-gnmi accepts (`supportedEncodings`, `server.go:67`).
pub(crate) const SUPPORTED: [GnmiEncoding; 3] = [GnmiEncoding::Json, GnmiEncoding::JsonIetf, GnmiEncoding::Proto];

/// The mixed client's view of a request's encoding.
pub(crate) fn mixed_encoding(encoding: i32) -> Encoding {
    match GnmiEncoding::try_from(encoding) {
        Ok(GnmiEncoding::JsonIetf) => Encoding::JsonIetf,
        Ok(GnmiEncoding::Proto) => Encoding::Proto,
        Ok(GnmiEncoding::Json) => Encoding::Other("JSON"),
        Ok(GnmiEncoding::Bytes) => Encoding::Other("BYTES"),
        Ok(GnmiEncoding::Ascii) => Encoding::Other("ASCII"),
        Err(_) => Encoding::Other("UNKNOWN"),
    }
}

pub(crate) async fn get(shared: &Shared, req: GetRequest) -> Result<GetResponse, Status> {
    if req.r#type != DataType::All as i32 {
        let name =
            DataType::try_from(req.r#type).map_or_else(|_| req.r#type.to_string(), |t| t.as_str_name().to_string());
        return Err(status(Code::Unimplemented, format!("unsupported request type: {name}")));
    }
    let encoding = GnmiEncoding::try_from(req.encoding).ok().filter(|e| SUPPORTED.contains(e));
    if encoding.is_none() {
        let name = GnmiEncoding::try_from(req.encoding)
            .map_or_else(|_| req.encoding.to_string(), |e| e.as_str_name().to_string());
        return Err(status(Code::Unimplemented, format!("unsupported encoding: {name}")));
    }
    let prefix = req.prefix.as_ref();
    let target = prefix.map(|p| p.target.as_str()).unwrap_or_default();
    let backend = shared.backend.as_ref();
    let ts = now_ns();
    let mut notifications = Vec::new();
    let mut push = |path: &gnmi_proto::gnmi::Path, val| {
        notifications.push(Notification {
            timestamp: ts,
            prefix: req.prefix.clone(),
            update: vec![Update { path: Some(path.clone()), val: Some(val), ..Default::default() }],
            ..Default::default()
        });
    };
    if matches!(target, "OPERATIONAL" | "OTHERS" | "SHOW") {
        return Err(status(
            Code::Unimplemented,
            format!("target {target} (non-database data) is not reproduced by this front"),
        ));
    }
    let db = target_db(target, !shared.config.namespaces.is_empty());
    if db.valid {
        let resolver = shared.resolver(&db.namespace);
        let backend = resolver.backend;
        let mut resolved = Vec::new();
        for path in &req.path {
            let tps = resolver.resolve(prefix, path).await.map_err(|e| e.wrapped(Code::NotFound))?;
            resolved.push((path, tps));
        }
        for (_, tps) in &resolved {
            resolver.ensure_exist(tps).await.map_err(|e| e.wrapped(Code::NotFound))?;
        }
        for (path, tps) in resolved {
            let val = db_get_value(backend, &tps).await.map_err(|e| e.passed_or(Code::NotFound))?;
            push(path, val);
        }
        return Ok(GetResponse { notification: notifications, ..Default::default() });
    }
    let origin = match prefix.map(|p| p.origin.as_str()).filter(|o| !o.is_empty()) {
        Some(o) => o.to_string(),
        None => parse_origin(&req.path)?,
    };
    if origin != SONIC_DB || !shared.config.mixed_db {
        return Err(translib_not_served(&req.path).passed_or(Code::NotFound));
    }
    let mixed = Mixed::new(backend, &shared.config.namespaces, prefix, &req.path, mixed_encoding(req.encoding))
        .map_err(|e| e.wrapped(Code::NotFound))?;
    let backend = shared.backend_of(&mixed.namespace);
    for path in &mixed.paths {
        let (tp, _) = mixed.table_path(backend, path, None).await.map_err(|e| e.passed_or(Code::NotFound))?;
        let value = mixed_read(backend, std::slice::from_ref(&tp), mixed.encoding)
            .await
            .map_err(|e| e.passed_or(Code::NotFound))?;
        match value {
            Some(val) => push(path, val),
            // `mixed_db_client.go:1764-1775`.
            None if !tp.key.is_empty() || !tp.field.is_empty() => {
                let text = format!("No valid entry found for path {}", super::errors::go_path(path));
                return Err(GoError::plain(text).passed_or(Code::NotFound));
            }
            None => {}
        }
    }
    Ok(GetResponse { notification: notifications, ..Default::default() })
}
