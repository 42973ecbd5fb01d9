//! What a peer needs on the machine, found in one place, so a test that cannot run says why in
//! one voice, and so turning "skip" into "fail" (CI with its peers installed) is one edit here.

use std::path::{Path, PathBuf};

/// Overrides where SONiC's files are (`…/shared/peers/sonic`).
pub const SHARED_DIR_VAR: &str = "ROCEMEND_SONIC_PEER_DIR";
/// Overrides which `redis-server` to run.
pub const REDIS_SERVER_VAR: &str = "ROCEMEND_REDIS_SERVER";

/// The shared folder of SONiC's files, relative to an ancestor of the checkout.
const SHARED_SUBDIR: &str = "shared/peers/sonic";

/// What a peer needs: a `redis-server` and SONiC's files (sonic-utilities' databases, the
/// watchdog's Lua scripts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prerequisites {
    /// The `redis-server` binary.
    pub redis_server: PathBuf,
    /// The folder holding `sonic-utilities/`, `sonic-swss/` and `sonic-buildimage/`.
    pub shared: PathBuf,
}

impl Prerequisites {
    /// sonic-utilities' copy of file `name` (`config_db.json`, `database_config.json`, …).
    pub fn utilities_file(&self, name: &str) -> PathBuf {
        self.shared.join("sonic-utilities").join(name)
    }

    /// sonic-swss's copy of file `name` (`pfc_detect_broadcom.lua`, `pfc_restore.lua`).
    pub fn swss_file(&self, name: &str) -> PathBuf {
        self.shared.join("sonic-swss").join(name)
    }
}

/// The prerequisites of a peer, or `None` after printing why `test` is skipped.
///
/// This is the one place a test decides to skip for lack of a peer: every test that needs one
/// starts with `let Some(prereq) = peer::prerequisites("name") else { return };`.
pub fn prerequisites(test: &str) -> Option<Prerequisites> {
    match find() {
        Ok(found) => Some(found),
        Err(why) => {
            eprintln!("skipped: {test}: {why}");
            None
        }
    }
}

/// The prerequisites, or why they are missing.
pub fn find() -> Result<Prerequisites, String> {
    let redis_server = match std::env::var_os(REDIS_SERVER_VAR) {
        Some(path) => PathBuf::from(path),
        None => {
            on_path("redis-server").ok_or("redis-server is not installed (Debian: apt-get install redis-server)")?
        }
    };
    let shared = match std::env::var_os(SHARED_DIR_VAR) {
        Some(path) => PathBuf::from(path),
        None => shared_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
            .ok_or_else(|| format!("no {SHARED_SUBDIR} above {} (set {SHARED_DIR_VAR})", env!("CARGO_MANIFEST_DIR")))?,
    };
    if !shared.join("sonic-swss").is_dir() || !shared.join("sonic-utilities").is_dir() {
        return Err(format!("{} lacks sonic-swss/ or sonic-utilities/", shared.display()));
    }
    Ok(Prerequisites { redis_server, shared })
}

/// The nearest `shared/peers/sonic` above `start` (CI has `../shared` beside the checkout).
fn shared_dir(start: &Path) -> Option<PathBuf> {
    start.ancestors().map(|a| a.join(SHARED_SUBDIR)).find(|p| p.is_dir())
}

fn on_path(binary: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(binary)).find(|p| p.is_file())
}
