//! What a playbook must be before anything runs on it, each problem placed
//! at its line and column:
//!
//! - every duration parses, the action timeout and every approval's
//!   timeout are above 0, and values with no meaning (a percentage over
//!   100, zero or billions of attempts) are refused outright;
//! - no limit switches a safety off, all but switches it off (no cooldown,
//!   a limits window of a millisecond, a breaker that trips after a million
//!   hits, more than half the fleet cordoned at once) or contradicts itself
//!   (a target that may never be acted on, a cooldown longer than its
//!   window) unless `allow_unsafe = true` says it is meant; only these get
//!   that hint, since `allow_unsafe` lets only these through;
//! - every actuator has a name of its own and handles action kinds written
//!   `*`, `actuator.*` or `actuator.verb`, none already taken by an earlier
//!   actuator (the first match wins, so the later one would never act);
//! - every kind `[[approval]]`, `[undo]` and `[verify]` name is one some
//!   actuator handles (a typo there silently switches the approval off).
//!
//! Which rules' actions reach which actuator needs the rules and the built
//! actuators: the binary checks that.

use std::collections::BTreeSet;

use super::Playbook;
use crate::catalog::Catalog;
use crate::config::duration::{nanos, show};
use crate::config::{Key, TomlError};
use crate::time::{Nanos, Span};

/// The most attempts an action may get: more only keeps a dispatch slot
/// busy on a target that is not answering.
pub const MAX_ATTEMPTS: u32 = 10;

/// The longest action timeout: a call that takes longer holds the
/// dispatcher (and every decision behind it).
pub const MAX_ACTION_TIMEOUT: Nanos = 600 * crate::time::SECOND;

/// The shortest `limits.window` that is not unsafe: the per-window limits
/// count the actions of the window, and a window shorter than a second
/// holds only the actions of one burst, so the limits hardly hold anything.
pub const MIN_LIMITS_WINDOW: Nanos = crate::time::SECOND;

/// The largest `breaker.trip_after` that is not unsafe: the breaker stops a
/// daemon whose limits keep being hit, and past a hundred hits in its window
/// it would stop one only after the damage is done.
pub const MAX_TRIP_AFTER: u32 = 100;

/// The largest `limits.max_cordon_percent` that is not unsafe: above half
/// the fleet, the limit no longer keeps the fleet running.
pub const MAX_SAFE_CORDON_PERCENT: f64 = 50.0;

/// The hint on an unsafe setting refused without `allow_unsafe`.
pub const ALLOW_UNSAFE_HINT: &str = " (set `allow_unsafe = true` if this is meant)";

/// What checking a playbook found.
#[derive(Debug, Default)]
pub(super) struct Checked {
    /// Problems that refuse the playbook.
    pub errors: Vec<TomlError>,
    /// Limits that switch safety off or contradict themselves; errors unless
    /// `allow_unsafe`.
    pub unsafe_settings: Vec<TomlError>,
}

/// Checks `p` (see the module doc).
pub(super) fn check(p: &Playbook) -> Checked {
    let mut c = Checked::default();
    durations(p, &mut c.errors);
    meaningless(p, &mut c.errors);
    ladders(p, &mut c.errors);
    expectations(p, &mut c.errors);
    canary_groups(p, &mut c.errors);
    limits(p, &mut c.unsafe_settings);
    actuators(p, &mut c.errors);
    kinds_named(p, &mut c.errors);
    super::node_condition::check(p, &mut c.errors);
    if !p.allow_unsafe {
        let unsafe_settings = std::mem::take(&mut c.unsafe_settings);
        c.errors.extend(unsafe_settings.into_iter().map(|mut e| {
            e.message.push_str(ALLOW_UNSAFE_HINT);
            e
        }));
    }
    c.errors.sort_by_key(|e| (e.line, e.column));
    c
}

/// The action timeout is above 0 and bounded. (Every duration parses when
/// the playbook is read: a bad one is refused there, at its line.)
fn durations(p: &Playbook, errors: &mut Vec<TomlError>) {
    let timeout = ["action_timeout".into()];
    let t = nanos(p.action_timeout);
    if t <= 0 || t > MAX_ACTION_TIMEOUT {
        let expected = format!("above 0 and at most {}", Span(MAX_ACTION_TIMEOUT));
        let written = p.written("action_timeout").map_or_else(|| show(p.action_timeout), str::to_string);
        errors.push(p.error(&timeout, format!("action_timeout = {written:?}: expected {expected}")));
    }
    for (i, approval) in p.approval.iter().enumerate() {
        if approval.timeout.is_zero() {
            errors.push(p.error(
                &["approval".into(), i.into(), "timeout".into()],
                "approval.timeout = \"0\": a request would expire as it is made, so no action it names could \
                 ever be approved; expected above 0",
            ));
        }
    }
}

/// Values no setting of `allow_unsafe` can give a meaning: refused outright,
/// without its hint.
fn meaningless(p: &Playbook, errors: &mut Vec<TomlError>) {
    if let Some(pct) = p.limits.max_cordon_percent {
        if !(0.0..=100.0).contains(&pct) {
            errors.push(p.error(
                &["limits".into(), "max_cordon_percent".into()],
                format!("limits.max_cordon_percent: {pct}: expected a percentage, 0 to 100"),
            ));
        }
    }
    if p.retry.attempts == 0 || p.retry.attempts > MAX_ATTEMPTS {
        let n = p.retry.attempts;
        errors.push(
            p.error(&["retry".into(), "attempts".into()], format!("retry.attempts: {n}: expected 1 to {MAX_ATTEMPTS}")),
        );
    }
    for (i, c) in p.canary.iter().enumerate() {
        let at = |key: &'static str| vec![Key::from("canary"), i.into(), key.into()];
        if c.after.is_zero() {
            errors.push(p.error(&at("after"), format!("canary[{i}].after = 0: a canary must be given time to show")));
        }
        if !(c.margin.is_finite() && c.margin >= 0.0) {
            errors.push(p.error(&at("margin"), format!("canary[{i}].margin = {}: expected 0 or more", c.margin)));
        }
    }
}

/// Each `[[ladder]]` is well formed, at its line (the rules and kinds it
/// names are checked against the rule directory by `check`).
fn ladders(p: &Playbook, errors: &mut Vec<TomlError>) {
    let mut checked = Vec::new();
    for (i, l) in p.ladder.iter().enumerate() {
        match crate::policy::LadderSettings::check_one(i, l, &checked) {
            Ok(ladder) => checked.push(ladder),
            Err(e) => errors.push(p.error(&["ladder".into(), i.into()], e.to_string())),
        }
    }
}

/// `[outcomes]` and each `[[expect]]` as the policy takes them, an error
/// placed at the table it is about.
fn expectations(p: &Playbook, errors: &mut Vec<TomlError>) {
    use crate::policy::OutcomeSettings;
    if let Err(error) = OutcomeSettings::new(&p.outcomes, &[]) {
        errors.push(p.error(&["outcomes".into(), "expect_within".into()], error.to_string()));
        return;
    }
    for (i, e) in p.expect.iter().enumerate() {
        if let Err(error) = OutcomeSettings::new(&p.outcomes, std::slice::from_ref(e)) {
            let message = error.to_string().replacen("expect[0]", &format!("expect[{i}]"), 1);
            errors.push(p.error(&["expect".into(), i.into()], message));
        }
    }
}

/// The `(rule, group)` pairs of one `enforce_on`, and where it is written.
type Placed<'a> = (Vec<(&'a str, &'a str)>, Vec<Key<'a>>);

/// Every `enforce_on` names a `[canary_groups]` group with labels, and no
/// rule is enforced on two groups (its own and its ladder's).
fn canary_groups(p: &Playbook, errors: &mut Vec<TomlError>) {
    use crate::policy::CanaryGroupSettings;
    let empty = |(_, labels): &(&String, &std::collections::BTreeMap<String, String>)| labels.is_empty();
    for (name, _) in p.canary_groups.iter().filter(empty) {
        let e = CanaryGroupSettings::new(&p.canary_groups, []).expect_err("an empty group is refused");
        errors.push(p.error(&["canary_groups".into(), name.as_str().into()], e.to_string()));
    }
    let own = p.rule.iter().filter_map(|(r, rp)| Some((vec![(r.as_str(), rp.enforce_on.as_deref()?)], r.as_str())));
    let mut placed: Vec<Placed<'_>> =
        own.map(|(pairs, r)| (pairs, vec!["rule".into(), r.into(), "enforce_on".into()])).collect();
    for (i, l) in p.ladder.iter().enumerate() {
        if let Some(group) = l.enforce_on.as_deref() {
            let pairs = l.rules.iter().map(|r| (r.as_str(), group)).collect();
            placed.push((pairs, vec!["ladder".into(), i.into(), "enforce_on".into()]));
        }
    }
    let groups: crate::policy::CanaryGroupTables =
        p.canary_groups.iter().filter(|g| !empty(g)).map(|(n, l)| (n.clone(), l.clone())).collect();
    let mut so_far: Vec<(&str, &str)> = Vec::new();
    for (pairs, at) in placed {
        let refused = CanaryGroupSettings::new(&groups, pairs.iter().copied())
            .and_then(|_| CanaryGroupSettings::new(&groups, so_far.iter().chain(&pairs).copied()));
        // A group refused for having no label was reported as such.
        let on_an_empty_group = pairs.iter().any(|(_, g)| p.canary_groups.get(*g).is_some_and(|l| l.is_empty()));
        match refused {
            Err(_) if on_an_empty_group => {}
            Err(e) => errors.push(p.error(&at, e.to_string())),
            Ok(_) => so_far.extend(pairs),
        }
    }
}

/// `limits.window` as the user wrote it.
fn dotted(path: &[Key<'_>]) -> String {
    let parts: Vec<String> = path
        .iter()
        .map(|k| match k {
            Key::Name(n) => n.to_string(),
            Key::Index(i) => format!("[{i}]"),
        })
        .collect();
    parts.join(".").replace(".[", "[")
}

/// Limits that switch a safety off, all but switch it off, or contradict
/// themselves.
fn limits(p: &Playbook, out: &mut Vec<TomlError>) {
    let mut flag = |path: &[Key<'_>], why: String| out.push(p.error(path, format!("{}: {why}", dotted(path))));
    let positive = |d: std::time::Duration| Some(nanos(d)).filter(|ns| *ns > 0);
    if p.breaker.trip_after == 0 {
        flag(&["breaker".into(), "trip_after".into()], "0 means the circuit breaker never trips".into());
    }
    if p.breaker.window.is_zero() {
        flag(&["breaker".into(), "window".into()], "a window of 0 counts no hits: the breaker never trips".into());
    }
    if p.limits.window.is_zero() {
        flag(&["limits".into(), "window".into()], "a window of 0 counts nothing: every per-window limit is off".into());
    } else if nanos(p.limits.window) < MIN_LIMITS_WINDOW {
        flag(
            &["limits".into(), "window".into()],
            format!(
                "a window of {} counts the actions of one burst at most: the per-window limits hardly hold (at least {})",
                Span(nanos(p.limits.window)),
                Span(MIN_LIMITS_WINDOW)
            ),
        );
    }
    if p.breaker.trip_after > MAX_TRIP_AFTER {
        flag(
            &["breaker".into(), "trip_after".into()],
            format!(
                "{}: the breaker would trip only after the damage is done (at most {MAX_TRIP_AFTER})",
                p.breaker.trip_after
            ),
        );
    }
    if p.target.cooldown.is_zero() {
        flag(
            &["target".into(), "cooldown".into()],
            "a cooldown of 0 lets a target be acted on again at once, before the last action took effect".into(),
        );
    }
    if p.target.max_per_window == 0 {
        flag(&["target".into(), "max_per_window".into()], "0 suppresses every action on every target".into());
    }
    if let (Some(cooldown), Some(window)) = (positive(p.target.cooldown), positive(p.target.window)) {
        if cooldown > window {
            flag(
                &["target".into(), "cooldown".into()],
                format!(
                    "a cooldown of {} is longer than the target window of {}: max_per_window can never be reached",
                    Span(cooldown),
                    Span(window)
                ),
            );
        }
    }
    held(p, out);
}

/// Limits of 0, which hold every action they count.
fn held(p: &Playbook, out: &mut Vec<TomlError>) {
    let mut flag = |path: &[Key<'_>], why: String| out.push(p.error(path, format!("{}: {why}", dotted(path))));
    if p.limits.max_rails_per_plane == Some(0) {
        flag(&["limits".into(), "max_rails_per_plane".into()], "0 holds every rail drain".into());
    }
    if p.limits.max_cordons == Some(0) {
        flag(&["limits".into(), "max_cordons".into()], "0 holds every cordon".into());
    }
    if p.limits.max_isolated_ports_per_switch == Some(0) {
        flag(&["limits".into(), "max_isolated_ports_per_switch".into()], "0 holds every port isolation".into());
    }
    if p.limits.max_ecn_queues_per_switch == Some(0) {
        flag(&["limits".into(), "max_ecn_queues_per_switch".into()], "0 holds every ECN lowering".into());
    }
    if p.limits.max_hash_changes_per_plane == Some(0) {
        flag(&["limits".into(), "max_hash_changes_per_plane".into()], "0 holds every ECMP hash change".into());
    }
    match p.limits.max_cordon_percent {
        Some(0.0) => flag(&["limits".into(), "max_cordon_percent".into()], "0 holds every cordon".into()),
        Some(pct) if pct > MAX_SAFE_CORDON_PERCENT && pct <= 100.0 => flag(
            &["limits".into(), "max_cordon_percent".into()],
            format!("{pct}: more than half the fleet may be cordoned at once (at most {MAX_SAFE_CORDON_PERCENT})"),
        ),
        _ => {}
    }
    for (kind, n) in &p.limits.per_kind {
        if *n == 0 {
            flag(&["limits".into(), "per_kind".into(), kind.as_str().into()], format!("0 holds every {kind}"));
        }
    }
}

/// Whether `pattern` is written as an action-kind pattern: `*`,
/// `actuator.*` or `actuator.verb`.
fn well_formed(pattern: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match pattern.split_once('.') {
        None => pattern == "*",
        Some((actuator, "*")) => word(actuator),
        Some((actuator, verb)) => word(actuator) && word(verb),
    }
}

/// Whether every kind `q` matches is matched by `p`.
pub fn covers(p: &str, q: &str) -> bool {
    p == "*" || p == q || p.strip_suffix('*').is_some_and(|prefix| q.starts_with(prefix) && q != "*")
}

/// Whether some kind is matched by both patterns.
pub fn overlaps(p: &str, q: &str) -> bool {
    covers(p, q) || covers(q, p)
}

/// Names, patterns and shadowed routes of the actuators.
fn actuators(p: &Playbook, errors: &mut Vec<TomlError>) {
    let mut names = BTreeSet::new();
    let mut earlier: Vec<(&str, &str)> = Vec::new();
    for (i, a) in p.actuator.iter().enumerate() {
        let at = |rest: &[Key<'static>]| -> Vec<Key<'static>> { [&["actuator".into(), i.into()], rest].concat() };
        if !names.insert(a.name.as_str()) {
            errors.push(p.error(&at(&["name".into()]), format!("actuator {:?} is defined twice", a.name)));
        }
        if a.handles.is_empty() {
            errors.push(p.error(&at(&["handles".into()]), format!("actuator {:?} handles no action kind", a.name)));
        }
        for (j, pattern) in a.handles.iter().enumerate() {
            let here = at(&["handles".into(), j.into()]);
            if !well_formed(pattern) {
                errors.push(p.error(
                    &here,
                    format!("actuator {:?}: {pattern:?} is not an action kind: write \"*\", \"actuator.*\" or \"actuator.verb\"", a.name),
                ));
                continue;
            }
            if let Some((other, theirs)) = earlier.iter().find(|(_, e)| covers(e, pattern)) {
                errors.push(p.error(
                    &here,
                    format!(
                        "actuator {:?}: {pattern:?} never reaches it: actuator {other:?} (handles {theirs:?}) comes first and takes every such action",
                        a.name
                    ),
                ));
            }
        }
        earlier.extend(a.handles.iter().filter(|h| well_formed(h)).map(|h| (a.name.as_str(), h.as_str())));
    }
}

/// The kinds `[[approval]]`, `[undo]` and `[verify]` name: each must be one
/// some actuator handles.
fn kinds_named(p: &Playbook, errors: &mut Vec<TomlError>) {
    let handled: Vec<&str> = p.actuator.iter().flat_map(|a| a.handles.iter().map(String::as_str)).collect();
    for named in p.named_kinds() {
        let (pattern, what) = (named.pattern, named.what);
        if !well_formed(pattern) {
            errors.push(p.error(&named.at, format!("{what}: {pattern:?} is not an action kind")));
        } else if !handled.iter().any(|h| overlaps(h, pattern)) {
            let known = if handled.is_empty() { "none".to_string() } else { handled.join(", ") };
            errors.push(
                p.error(&named.at, format!("{what}: no actuator handles {pattern:?} (actuators handle: {known})")),
            );
        }
    }
}

/// An action-kind pattern the playbook names outside its actuators.
pub struct NamedKind<'a> {
    /// Where it is written.
    pub at: Vec<Key<'a>>,
    /// The pattern (`node.cordon`, `rail.*`).
    pub pattern: &'a str,
    /// The setting that names it, for messages (`approval`, `undo.on_resolve`).
    pub what: &'static str,
}

impl Playbook {
    /// The action kinds `[[approval]]`, `[[canary]]`, `[undo]` and `[verify]`
    /// name, where the playbook writes them.
    pub fn named_kinds(&self) -> Vec<NamedKind<'_>> {
        let mut named = Vec::new();
        for (i, a) in self.approval.iter().enumerate() {
            for (j, pattern) in a.actions.iter().enumerate() {
                named.push(NamedKind {
                    at: vec!["approval".into(), i.into(), "actions".into(), j.into()],
                    pattern,
                    what: "approval",
                });
            }
        }
        for (j, pattern) in self.undo.on_resolve.iter().enumerate() {
            named.push(NamedKind {
                at: vec!["undo".into(), "on_resolve".into(), j.into()],
                pattern,
                what: "undo.on_resolve",
            });
        }
        for (i, c) in self.canary.iter().enumerate() {
            for (j, pattern) in c.actions.iter().enumerate() {
                named.push(NamedKind {
                    at: vec!["canary".into(), i.into(), "actions".into(), j.into()],
                    pattern,
                    what: "canary",
                });
            }
        }
        for (i, e) in self.expect.iter().enumerate() {
            for (j, pattern) in e.actions.iter().enumerate() {
                named.push(NamedKind {
                    at: vec!["expect".into(), i.into(), "actions".into(), j.into()],
                    pattern,
                    what: "expect",
                });
            }
        }
        if let Some(kinds) = &self.verify.reapply_reverted {
            for (j, pattern) in kinds.iter().enumerate() {
                named.push(NamedKind {
                    at: vec!["verify".into(), "reapply_reverted".into(), j.into()],
                    pattern,
                    what: "verify.reapply_reverted",
                });
            }
        }
        named
    }
}

impl Playbook {
    /// The `[undo] on_resolve` patterns that name a kind the actuator it is
    /// routed to declares it cannot undo (a command without `undo_argv`):
    /// each at its line. The undo would only fail when the incident ends.
    pub fn undo_refusals(&self, catalog: &Catalog) -> Vec<TomlError> {
        let mut out = Vec::new();
        for (j, pattern) in self.undo.on_resolve.iter().enumerate() {
            let routes = catalog.routes();
            for (n, route) in routes.iter().enumerate() {
                // The kinds an earlier route takes whole never reach this one.
                if !overlaps(&route.pattern, pattern) || routes[..n].iter().any(|r| covers(&r.pattern, pattern)) {
                    continue;
                }
                let refused = route.actuator.kinds().iter().filter(|d| !d.undoable);
                for d in refused.filter(|d| overlaps(&d.kind, pattern) && overlaps(&d.kind, &route.pattern)) {
                    let message = format!(
                        "undo.on_resolve: {pattern:?} is routed to actuator {:?} (handles {:?}), which cannot undo {}",
                        route.actuator.name(),
                        route.pattern,
                        d.kind
                    );
                    out.push(self.error(&["undo".into(), "on_resolve".into(), j.into()], message));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        match Playbook::parse(text, "p.toml") {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    const ACTUATORS: &str = "[[actuator]]\nname = \"wd\"\ntype = \"log\"\nhandles = [\"pfcwd.*\"]\n";

    #[test]
    fn limits_that_switch_safety_off_are_refused_at_their_line_unless_allowed() {
        let text = format!(
            "name = \"p\"\n[breaker]\ntrip_after = 0\n[target]\ncooldown = \"2h\"\nwindow = \"1m\"\n{ACTUATORS}"
        );
        let found = errors(&text);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].starts_with("p.toml:3:1: breaker.trip_after: 0 means the circuit breaker never trips"),
            "{}",
            found[0]
        );
        assert!(
            found[1].starts_with(
                "p.toml:5:1: target.cooldown: a cooldown of 7200s is longer than the target window of 60s"
            ),
            "{}",
            found[1]
        );
        assert!(found[1].ends_with("(set `allow_unsafe = true` if this is meant)"), "{}", found[1]);
        let allowed = Playbook::parse(&format!("allow_unsafe = true\n{text}"), "p.toml").unwrap();
        assert_eq!(allowed.allowed_unsafe().len(), 2);
    }

    #[test]
    fn routing_mistakes_are_named_with_the_actuator_and_the_kind() {
        let text = "name = \"p\"\n[[approval]]\nactions = [\"node.cordon\"]\n[undo]\non_resolve = [\"ecn.lower\"]\n\
                    [[actuator]]\nname = \"all\"\ntype = \"log\"\nhandles = [\"*\", \"\"]\n\
                    [[actuator]]\nname = \"wd\"\ntype = \"log\"\nhandles = [\"pfcwd.*\"]\n";
        let found = errors(text);
        assert!(found.iter().any(|e| e.contains("actuator \"all\": \"\" is not an action kind")), "{found:#?}");
        assert!(
            found.iter().any(|e| e.contains("actuator \"wd\": \"pfcwd.*\" never reaches it: actuator \"all\"")),
            "{found:#?}"
        );
        let text = format!(
            "name = \"p\"\n[[approval]]\nactions = [\"node.cordon\"]\n[undo]\non_resolve = [\"lnk.*\"]\n{ACTUATORS}"
        );
        let found = errors(&text);
        assert!(found[0].starts_with("p.toml:3:12: approval: no actuator handles \"node.cordon\""), "{found:#?}");
        assert!(found[1].starts_with("p.toml:5:15: undo.on_resolve: no actuator handles \"lnk.*\""), "{found:#?}");
    }

    #[test]
    fn a_zero_action_timeout_and_absurd_retries_are_refused() {
        let found =
            errors(&format!("name = \"p\"\naction_timeout = \"0\"\n[retry]\nattempts = 4000000000\n{ACTUATORS}"));
        assert!(found[0].starts_with("p.toml:2:1: action_timeout = \"0\": expected above 0"), "{found:#?}");
        assert!(found[1].starts_with("p.toml:4:1: retry.attempts: 4000000000: expected 1 to 10"), "{found:#?}");
    }

    #[test]
    fn dangerous_limits_are_unsafe_and_let_through_only_by_allow_unsafe() {
        let text = format!(
            "name = \"p\"\n[target]\ncooldown = \"0\"\n[limits]\nwindow = \"1ms\"\nmax_cordon_percent = 100.0\n\
             [breaker]\ntrip_after = 1000000\n{ACTUATORS}"
        );
        let found = errors(&text);
        let wanted = [
            "p.toml:3:1: target.cooldown: a cooldown of 0",
            "p.toml:5:1: limits.window: a window of 1ms",
            "p.toml:6:1: limits.max_cordon_percent: 100: more than half the fleet",
            "p.toml:8:1: breaker.trip_after: 1000000: the breaker would trip only after the damage is done",
        ];
        assert_eq!(found.len(), wanted.len(), "{found:#?}");
        for (found, wanted) in found.iter().zip(wanted) {
            assert!(found.starts_with(wanted) && found.ends_with(ALLOW_UNSAFE_HINT), "{found}");
        }
        let allowed = Playbook::parse(&format!("allow_unsafe = true\n{text}"), "p.toml").unwrap();
        assert_eq!(allowed.allowed_unsafe().len(), wanted.len());
    }

    #[test]
    fn values_allow_unsafe_cannot_let_through_get_no_hint_to_set_it() {
        for (setting, wanted) in [
            ("[limits]\nmax_cordon_percent = 150.0\n", "limits.max_cordon_percent: 150: expected a percentage"),
            ("[retry]\nattempts = 0\n", "retry.attempts: 0: expected 1 to 10"),
            (
                "[[approval]]\nactions = [\"pfcwd.*\"]\ntimeout = \"0\"\n",
                "approval.timeout = \"0\": a request would expire",
            ),
        ] {
            for allow in ["", "allow_unsafe = true\n"] {
                let found = errors(&format!("name = \"p\"\n{allow}{setting}{ACTUATORS}"));
                assert_eq!(found.len(), 1, "{found:#?}");
                assert!(found[0].contains(wanted) && !found[0].contains("allow_unsafe"), "{}", found[0]);
            }
        }
    }

    #[test]
    fn a_duration_that_does_not_parse_is_named_by_its_key_and_value_at_its_line() {
        let found = errors(&format!("name = \"p\"\n[limits]\nwindow = \"5 parsecs\"\n{ACTUATORS}"));
        assert!(found[0].starts_with("p.toml:3:10: limits.window: invalid duration \"5 parsecs\""), "{found:#?}");
        let found = errors(&format!("name = \"p\"\naction_timeout = \"soon\"\n{ACTUATORS}"));
        assert!(found[0].starts_with("p.toml:2:18: action_timeout: invalid duration \"soon\""), "{found:#?}");
    }

    #[test]
    fn a_negative_max_jobs_touched_is_refused_naming_the_field_at_its_value() {
        let found = errors(&format!("name = \"p\"\n[limits]\nmax_jobs_touched = -1\n{ACTUATORS}"));
        assert!(
            found[0].starts_with("p.toml:3:20: limits.max_jobs_touched: -1: expected a number of running jobs"),
            "{found:#?}"
        );
        let p = Playbook::parse(&format!("name = \"p\"\n[limits]\nmax_jobs_touched = 0\n{ACTUATORS}"), "p.toml");
        assert_eq!(p.unwrap().limits.max_jobs_touched, Some(0), "0: every action touching a job waits for a human");
    }

    #[test]
    fn an_undo_on_resolve_of_a_kind_its_actuator_cannot_undo_is_refused_at_its_line() {
        use crate::catalog::ActuatorRoute;
        use crate::contracts::ActionKindDecl;
        use crate::testing::Knobs;
        let p = Playbook::parse(&format!("name = \"p\"\n[undo]\non_resolve = [\"pfcwd.*\"]\n{ACTUATORS}"), "p.toml")
            .unwrap();
        let route = |kinds: Vec<ActionKindDecl>| ActuatorRoute {
            pattern: "pfcwd.*".into(),
            actuator: std::sync::Arc::new(Knobs::declaring(kinds)),
            destructive: true,
        };
        let once = route(vec![ActionKindDecl::new("pfcwd.escalate", &[]).not_undoable()]);
        let found = p.undo_refusals(&Catalog::new(vec![once]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].to_string().starts_with(
                "p.toml:3:15: undo.on_resolve: \"pfcwd.*\" is routed to actuator \"knobs\" (handles \"pfcwd.*\"), \
                 which cannot undo pfcwd.escalate"
            ),
            "{}",
            found[0]
        );
        let undoable = route(vec![ActionKindDecl::new("pfcwd.escalate", &[])]);
        assert!(p.undo_refusals(&Catalog::new(vec![undoable])).is_empty());
    }

    #[test]
    fn patterns_cover_and_overlap_as_the_dispatcher_matches_them() {
        assert!(covers("*", "pfcwd.escalate") && covers("pfcwd.*", "pfcwd.escalate") && covers("pfcwd.*", "pfcwd.*"));
        assert!(!covers("pfcwd.escalate", "pfcwd.*") && overlaps("pfcwd.escalate", "pfcwd.*"));
        assert!(!overlaps("link.*", "lnk.*"));
    }
}
