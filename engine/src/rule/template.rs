//! Action templates filled for a subject: `{label}` placeholders replaced
//! by the subject's labels, so a firing instance proposes a concrete
//! [`Action`].

use std::collections::BTreeMap;

use super::ActionTemplate;
use crate::contracts::Action;
use crate::labels::Labels;

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
}
