//! Action templates filled for a subject: `{label}` placeholders replaced
//! by the subject's labels, so a firing instance proposes a concrete
//! [`Action`].

use std::collections::BTreeMap;

use super::ActionTemplate;
use crate::contracts::Action;
use crate::labels::Labels;
use crate::topology::derivable_labels;

/// An action template could not be filled for a subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(String);

/// Fills `{label}` placeholders from `labels`; a missing label is an error,
/// so an action never goes out with a hole in its target.
pub fn render(template: &str, labels: &Labels) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close =
            rest[open..].find('}').ok_or_else(|| TemplateError(format!("unclosed '{{' in {template:?}")))? + open;
        let name = &rest[open + 1..close];
        let value = labels.get(name).ok_or_else(|| {
            TemplateError(format!("template {template:?} needs label {name:?}, which the subject {labels} lacks"))
        })?;
        out.push_str(value);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The `{label}` placeholders of `template`, in order (an unclosed `{`
/// ends the list: [`render`] refuses it where it is filled).
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        out.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    out
}

/// The labels every subject of a rule grouped by `group_by` carries: its
/// `group_by` labels and what the inventory derives from them. Other labels
/// of its series differ from series to series of one subject (the netdevs of
/// a node), so a template naming one has nothing to fill it with.
pub fn subject_labels(group_by: &[String]) -> Vec<String> {
    derivable_labels(group_by)
}

/// Resolves an action template for a subject.
pub fn resolve(template: &ActionTemplate, labels: &Labels) -> Result<Action, TemplateError> {
    let render_map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, TemplateError> {
        m.iter().map(|(k, v)| Ok((k.clone(), render(v, labels)?))).collect()
    };
    Ok(Action {
        kind: template.kind.clone(),
        target: Labels(render_map(&template.target)?),
        params: render_map(&template.params)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_labels_and_refuse_holes() {
        let labels = Labels::from_pairs([("switch", "leaf-rail3"), ("switch_port", "Ethernet8")]);
        assert_eq!(render("{switch}/{switch_port}", &labels).unwrap(), "leaf-rail3/Ethernet8");
        assert_eq!(render("plain", &labels).unwrap(), "plain");
        let err = render("{node}", &labels).unwrap_err().to_string();
        assert!(err.contains("needs label \"node\""), "{err}");
    }

    #[test]
    fn a_subject_grouped_by_node_carries_no_netdev_but_one_by_node_and_netdev_its_far_end() {
        assert_eq!(placeholders("{switch}/{switch_port} {"), vec!["switch", "switch_port"]);
        let by_node = subject_labels(&["node".into()]);
        assert!(by_node.contains(&"pod".to_string()) && !by_node.contains(&"netdev".to_string()), "{by_node:?}");
        let by_nic = subject_labels(&["node".into(), "netdev".into()]);
        for label in ["rdma_dev", "switch", "switch_port", "rail", "plane", "switch_role"] {
            assert!(by_nic.contains(&label.to_string()), "{label} of {by_nic:?}");
        }
    }
}
