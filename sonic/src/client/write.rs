//! Writing CONFIG_DB: a list of [`Change`]s in one transaction.
//!
//! SONiC's daemons see a CONFIG_DB write through keyspace notifications, one per command
//! (swss-common `SubscriberStateTable::pops`): a `del` becomes a DEL of the entry, anything else
//! a SET carrying every field the entry then has. So the commands chosen matter, not only the
//! end state: orchagent's watchdog ignores a SET of a port it already watches
//! (`pfcwdsworch.cpp:268`, `m_entryMap.emplace` keeps the old action), and starts afresh only
//! after a DEL. [`Change::Replace`] sends exactly that pair, as `pfcwd start` does
//! (sonic-utilities `pfcwd/main.py:292-297`: `mod_entry(…, None)` then `set_entry`).

use std::collections::BTreeMap;

use super::db::Db;
use super::error::DbError;

/// One change to one CONFIG_DB entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `HSET` these fields of `table|key` (creating the entry if needed); other fields stay.
    Set {
        /// The table (`PFC_WD`).
        table: String,
        /// The key (`Ethernet4`).
        key: String,
        /// Field → value.
        fields: BTreeMap<String, String>,
    },
    /// `HDEL` these fields (Redis deletes the entry with its last field).
    DeleteFields {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// The fields.
        fields: Vec<String>,
    },
    /// `DEL` the whole entry.
    Delete {
        /// The table.
        table: String,
        /// The key.
        key: String,
    },
    /// `HSET` the fields of an entry that does not exist yet: over Redis the same command as
    /// [`Change::Set`]; over gNMI the entry written whole in one update, which is how
    /// sonic-gnmi's config updater takes a new entry (a field-by-field update of an entry that
    /// is not there is refused: its JSON patch has no parent to add to).
    Create {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// Field → value; at least one.
        fields: BTreeMap<String, String>,
    },
    /// `DEL` the entry, then `HSET` exactly these fields: the entry afterwards has these and no
    /// others, and SONiC's daemons see it deleted and created again.
    Replace {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// Field → value; at least one (a replace by nothing is a [`Change::Delete`]).
        fields: BTreeMap<String, String>,
    },
}

impl Change {
    /// The table and key changed.
    pub fn table_key(&self) -> (&str, &str) {
        match self {
            Change::Set { table, key, .. }
            | Change::DeleteFields { table, key, .. }
            | Change::Delete { table, key }
            | Change::Create { table, key, .. }
            | Change::Replace { table, key, .. } => (table, key),
        }
    }
}

/// CONFIG_DB: the reads of [`Db`] (through `Deref`) and the one way rocemend writes it.
#[derive(Clone, Debug)]
pub struct ConfigDb {
    db: Db,
}

impl std::ops::Deref for ConfigDb {
    type Target = Db;

    fn deref(&self) -> &Db {
        &self.db
    }
}

impl ConfigDb {
    pub(crate) fn new(db: Db) -> Self {
        ConfigDb { db }
    }

    /// Applies `changes` in one `MULTI`/`EXEC`, in order: no other client's command runs
    /// between them, and if Redis refuses one while queueing it (a malformed command) none is
    /// applied. Redis does not roll back a command that fails while `EXEC` runs (one aimed at
    /// a key that is not a hash); CONFIG_DB holds only hashes, and the error is returned.
    ///
    /// Checked before sending: a table name must be non-empty and free of the separator (else
    /// the key would land in another table), a key and field names non-empty, a Set or Replace
    /// must carry fields.
    pub async fn apply(&self, changes: &[Change]) -> Result<(), DbError> {
        let separator = self.db.database().separator;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for change in changes {
            let (table, key) = change.table_key();
            if table.is_empty() || table.contains(separator) || key.is_empty() {
                return Err(DbError::InvalidChange(format!(
                    "table {table:?} key {key:?}: a table is a non-empty name without {separator:?}, a key is non-empty"
                )));
            }
            let redis_key = self.db.key(table, key);
            match change {
                Change::Set { fields, .. } | Change::Create { fields, .. } | Change::Replace { fields, .. } => {
                    if fields.is_empty() || fields.keys().any(String::is_empty) {
                        return Err(DbError::InvalidChange(format!(
                            "{redis_key}: a Set, Create or Replace needs fields, each with a name"
                        )));
                    }
                    if matches!(change, Change::Replace { .. }) {
                        pipe.cmd("DEL").arg(&redis_key).ignore();
                    }
                    let mut hset = redis::cmd("HSET");
                    hset.arg(&redis_key);
                    for (field, value) in fields {
                        hset.arg(field).arg(value);
                    }
                    pipe.add_command(hset).ignore();
                }
                Change::DeleteFields { fields, .. } => {
                    if fields.is_empty() {
                        return Err(DbError::InvalidChange(format!("{redis_key}: no fields to delete")));
                    }
                    pipe.cmd("HDEL").arg(&redis_key).arg(fields).ignore();
                }
                Change::Delete { .. } => {
                    pipe.cmd("DEL").arg(&redis_key).ignore();
                }
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let what = changes.iter().map(|c| self.db.key(c.table_key().0, c.table_key().1)).collect::<Vec<_>>().join(" ");
        let mut conn = self.db.connection();
        self.db.run("MULTI/EXEC", &what, pipe.query_async::<()>(&mut conn)).await
    }
}
