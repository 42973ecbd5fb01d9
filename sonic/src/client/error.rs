//! What can go wrong talking to the switch's Redis.

use crate::layout::LayoutError;

/// A failed read, write or subscription on the switch's Redis. None of these means "absent":
/// absence is an `Ok(None)` (or [`FieldRead::NoEntry`](super::FieldRead::NoEntry)) that Redis
/// itself answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// The layout has no such database (or namespace).
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The instance could not be reached (socket missing, refused, authentication refused).
    #[error("cannot connect to {database} at {endpoint}: {source}")]
    Connect {
        /// The database.
        database: String,
        /// Where it was looked for.
        endpoint: String,
        /// Why.
        source: redis::RedisError,
    },
    /// A command failed: Redis refused it, or the connection broke while it ran.
    #[error("{database}: {operation} {key}: {source}")]
    Command {
        /// The database.
        database: String,
        /// The command (`HGETALL`, `MULTI/EXEC`, …).
        operation: &'static str,
        /// The key it was about.
        key: String,
        /// Why.
        source: redis::RedisError,
    },
    /// No answer within the deadline.
    #[error("{database}: {operation} {key}: no answer within {timeout:?}")]
    Timeout {
        /// The database.
        database: String,
        /// The command.
        operation: &'static str,
        /// The key it was about.
        key: String,
        /// The deadline.
        timeout: std::time::Duration,
    },
    /// Redis answered with something SONiC never writes there (a key that exists but is not a
    /// hash, a name map whose value is not an object id, a notification that is not JSON).
    #[error("{database}: {key}: {problem}")]
    Malformed {
        /// The database.
        database: String,
        /// The key (or channel).
        key: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A change refused before sending: it would not do what it says (an empty table name, a
    /// separator inside a table name, a Set with no fields).
    #[error("refused before sending: {0}")]
    InvalidChange(String),
    /// A subscription ended (the connection to Redis was lost): the notifications since are
    /// gone, so whatever was being waited for cannot be known from it.
    #[error("{database}: the subscription to {subscription} ended; notifications since then are lost")]
    SubscriptionEnded {
        /// The database.
        database: String,
        /// What was subscribed to.
        subscription: String,
    },
    /// Something SONiC's daemons write is not there yet (orchagent has not written the name
    /// maps): the switch is not ready, which is not the same as "nothing there".
    #[error("{database}: {key} is missing: {why}")]
    NotReady {
        /// The database.
        database: String,
        /// The key.
        key: String,
        /// Who writes it, and when.
        why: &'static str,
    },
}

impl DbError {
    /// Whether trying again later can help: a connection that broke or timed out can; a refusal,
    /// a malformed value or a change refused before sending cannot.
    pub fn is_transient(&self) -> bool {
        match self {
            DbError::Timeout { .. } | DbError::NotReady { .. } | DbError::SubscriptionEnded { .. } => true,
            DbError::Connect { source, .. } | DbError::Command { source, .. } => {
                source.is_io_error() || source.is_timeout() || source.is_connection_dropped()
            }
            _ => false,
        }
    }
}
