//! Canary groups: a rule or a ladder enforced on a few nodes or switches
//! first, chosen by inventory labels, and shadowed everywhere else, so its
//! record (`rocemend rules`) is measured on real faults before it acts on
//! the whole fleet.
//!
//! ```toml
//! [canary_groups.rack-a]     # a group: the inventory labels its members carry
//! rack = "rack-a"
//!
//! [rule.link-flap]
//! mode = "enforce"
//! enforce_on = "rack-a"      # enforced on rack-a, shadowed elsewhere
//!
//! [[ladder]]
//! rules = ["pfc-storm"]
//! rungs = ["pfcwd.escalate", "link.isolate"]
//! enforce_on = "rack-a"      # every rule of the ladder
//! ```
//!
//! A proposal is in the group when every label of the group has that value
//! on its subject (enriched from the inventory: `rack`, `pod`, `zone` of a
//! node, `switch_role`, `rail`, `plane` of a switch) or, failing that, on
//! its action's target. Out of it, the rule's decisions are made in shadow
//! mode, a step saying why. Promotion to the whole fleet is deleting the
//! `enforce_on` line; `rocemend preview` on a recording shows what either
//! playbook would have done.

use std::collections::BTreeMap;

use crate::contracts::Proposal;
use crate::labels::Labels;

use super::PolicyError;

/// `[canary_groups]`: group name → the labels its members carry.
pub type CanaryGroupTables = BTreeMap<String, BTreeMap<String, String>>;

/// The canary groups and the rules enforced on one, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CanaryGroupSettings {
    groups: BTreeMap<String, Labels>,
    /// rule → its group.
    rules: BTreeMap<String, String>,
}

impl CanaryGroupSettings {
    /// The settings of `groups` and the `(rule, group)` pairs of the
    /// playbook's `enforce_on`s; errors name the field.
    pub fn new<'a>(
        groups: &CanaryGroupTables,
        enforced: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<CanaryGroupSettings, PolicyError> {
        for (name, labels) in groups {
            if labels.is_empty() {
                return Err(PolicyError(format!(
                    "canary_groups.{name} has no label: it would hold the whole fleet (name the inventory labels its members carry)"
                )));
            }
        }
        let mut rules: BTreeMap<String, String> = BTreeMap::new();
        for (rule, group) in enforced {
            if !groups.contains_key(group) {
                let known: Vec<&str> = groups.keys().map(String::as_str).collect();
                return Err(PolicyError(format!(
                    "enforce_on = {group:?} (rule {rule}) names no canary group (the [canary_groups]: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            }
            match rules.get(rule) {
                Some(other) if other != group => {
                    return Err(PolicyError(format!(
                        "rule {rule} is enforced on two canary groups, {other} and {group}: name one"
                    )))
                }
                _ => rules.insert(rule.to_string(), group.to_string()),
            };
        }
        let groups = groups.iter().map(|(n, l)| (n.clone(), Labels(l.clone().into_iter().collect()))).collect();
        Ok(CanaryGroupSettings { groups, rules })
    }

    /// The group `rule` is enforced on, with its labels.
    pub fn group_of(&self, rule: &str) -> Option<(&str, &Labels)> {
        let name = self.rules.get(rule)?;
        self.groups.get(name).map(|labels| (name.as_str(), labels))
    }

    /// Why `p` is shadowed (its rule is enforced on a group it is not in);
    /// `None` when it is decided in its mode.
    pub fn shadowed(&self, p: &Proposal) -> Option<String> {
        let (name, labels) = self.group_of(&p.rule)?;
        let of = |k: &str| p.subject.get(k).or_else(|| p.action.target.get(k));
        if labels.0.iter().all(|(k, v)| of(k) == Some(v.as_str())) {
            return None;
        }
        Some(format!("canary group {name} {labels}: {} is enforced there only; shadowed here", p.rule))
    }

    /// Each group with the rules enforced on it, for `preview` and `check`:
    /// `rack-a {rack="rack-a"}: link-flap, pfc-storm`.
    pub fn describe(&self) -> Vec<String> {
        let rules_of = |group: &str| -> Vec<&str> {
            self.rules.iter().filter(|(_, g)| g.as_str() == group).map(|(r, _)| r.as_str()).collect()
        };
        self.groups
            .iter()
            .map(|(name, labels)| {
                let rules = rules_of(name);
                let rules = if rules.is_empty() { "no rule".to_string() } else { rules.join(", ") };
                format!("{name} {labels}: {rules}")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> CanaryGroupTables {
        BTreeMap::from([("rack-a".to_string(), BTreeMap::from([("rack".to_string(), "rack-a".to_string())]))])
    }

    fn proposal(subject: &[(&str, &str)], target: &[(&str, &str)]) -> Proposal {
        let mut p = crate::testing::proposal(
            "link-flap",
            "link.isolate",
            "node-01",
            Labels::from_pairs(target.iter().copied()),
            0,
        );
        p.subject = Labels::from_pairs(subject.iter().copied());
        p
    }

    #[test]
    fn a_rule_on_a_group_is_shadowed_out_of_it_and_decided_in_it() {
        let s = CanaryGroupSettings::new(&groups(), [("link-flap", "rack-a")]).unwrap();
        assert_eq!(s.shadowed(&proposal(&[("node", "node-01"), ("rack", "rack-a")], &[])), None);
        assert_eq!(s.shadowed(&proposal(&[("switch", "leaf-rail0")], &[("rack", "rack-a")])), None, "by its target");
        let out = s.shadowed(&proposal(&[("node", "node-02"), ("rack", "rack-b")], &[])).unwrap();
        assert_eq!(out, "canary group rack-a {rack=\"rack-a\"}: link-flap is enforced there only; shadowed here");
        let other_rule = CanaryGroupSettings::new(&groups(), [("pfc-storm", "rack-a")]).unwrap();
        assert_eq!(other_rule.shadowed(&proposal(&[("rack", "rack-b")], &[])), None, "a rule on no group");
        assert_eq!(s.describe(), ["rack-a {rack=\"rack-a\"}: link-flap"]);
    }

    #[test]
    fn an_unknown_group_an_empty_one_and_a_rule_on_two_are_refused_by_name() {
        let e = CanaryGroupSettings::new(&groups(), [("link-flap", "rack-b")]).unwrap_err().to_string();
        assert_eq!(e, "enforce_on = \"rack-b\" (rule link-flap) names no canary group (the [canary_groups]: rack-a)");
        let mut two = groups();
        two.insert("pod-2".into(), BTreeMap::from([("pod".to_string(), "pod-2".to_string())]));
        let e = CanaryGroupSettings::new(&two, [("link-flap", "rack-a"), ("link-flap", "pod-2")]).unwrap_err();
        assert_eq!(e.to_string(), "rule link-flap is enforced on two canary groups, rack-a and pod-2: name one");
        let empty = BTreeMap::from([("all".to_string(), BTreeMap::new())]);
        let e = CanaryGroupSettings::new(&empty, []).unwrap_err().to_string();
        assert!(e.starts_with("canary_groups.all has no label"), "{e}");
    }
}
