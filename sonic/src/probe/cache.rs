//! One profile per switch, shared by whoever talks to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::{probe, ProbeError, ProbeTarget, StyleSetting, SwitchProfile, WriteAccess};

/// Profiles by switch name. Bounded by the switches configured (the inventory's, a few hundred
/// at most): a switch is added only when something that talks to it asks.
#[derive(Debug)]
pub struct ProfileCache {
    max_age: Duration,
    profiles: Mutex<HashMap<String, Cached>>,
}

#[derive(Debug, Clone)]
struct Cached {
    /// What it was probed as: a target configured otherwise is probed anew.
    address: String,
    style: StyleSetting,
    instance: String,
    profile: Arc<SwitchProfile>,
}

impl ProfileCache {
    /// How long a profile is used before the switch is probed again: long enough that a
    /// storm's actions never wait for a probe, short enough that a switch reconfigured by hand
    /// (write flags, aliases) is seen within minutes even by a component that never reconnects.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);

    /// An empty cache whose profiles are used for `max_age`.
    pub fn new(max_age: Duration) -> Self {
        ProfileCache { max_age, profiles: Mutex::new(HashMap::new()) }
    }

    /// The process's cache: the one the gNMI sensor and the switch actuators share, so that a
    /// switch is probed once and both address it alike.
    pub fn global() -> &'static ProfileCache {
        static GLOBAL: OnceLock<ProfileCache> = OnceLock::new();
        GLOBAL.get_or_init(|| ProfileCache::new(Self::DEFAULT_MAX_AGE))
    }

    /// `target`'s profile: the cached one while it is fresh and was probed as `target` is
    /// configured (and with writes checked when `target` asks for it), else a new probe. A
    /// failed probe is not cached.
    pub async fn profile(&self, target: &ProbeTarget) -> Result<Arc<SwitchProfile>, ProbeError> {
        if let Some(cached) = self.lock().get(&target.switch) {
            let fresh = cached.profile.probed_at.elapsed() < self.max_age;
            let same = cached.address == target.client.address
                && cached.style == target.style
                && cached.instance == target.instance
                && !(target.check_writes && cached.profile.writes == WriteAccess::Unchecked);
            if fresh && same {
                return Ok(cached.profile.clone());
            }
        }
        self.reprobe(target).await
    }

    /// Probes `target` now and caches the result: what a component does when it reconnects to
    /// the switch (its telemetry server may have restarted with other settings).
    pub async fn reprobe(&self, target: &ProbeTarget) -> Result<Arc<SwitchProfile>, ProbeError> {
        let mut found = probe(target).await;
        // A sensor's probe (writes unchecked) must not erase what an actuator's found.
        if let (Ok(profile), Some(cached)) = (&mut found, self.lock().get(&target.switch)) {
            let recent = cached.profile.probed_at.elapsed() < self.max_age;
            if profile.writes == WriteAccess::Unchecked && recent && cached.address == target.client.address {
                profile.writes = cached.profile.writes;
            }
        }
        let profile = Arc::new(found?);
        self.lock().insert(
            target.switch.clone(),
            Cached {
                address: target.client.address.clone(),
                style: target.style,
                instance: target.instance.clone(),
                profile: profile.clone(),
            },
        );
        Ok(profile)
    }

    /// The cached profile of `switch`, however old, without probing.
    pub fn cached(&self, switch: &str) -> Option<Arc<SwitchProfile>> {
        self.lock().get(switch).map(|c| c.profile.clone())
    }

    /// Drops `switch`'s profile, so the next use probes it: after an answer that contradicts
    /// it (a write refused at a gate the profile said was open).
    pub fn forget(&self, switch: &str) {
        self.lock().remove(switch);
    }

    /// The lock, even if a holder panicked (the map is only ever replaced whole per key).
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.profiles.lock().unwrap_or_else(|e| e.into_inner())
    }
}
