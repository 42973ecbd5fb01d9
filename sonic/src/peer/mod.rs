//! The peer (to come).
