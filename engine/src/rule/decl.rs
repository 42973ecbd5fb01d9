//! Reading a rule file's declaration map into a [`Rule`].

use std::collections::BTreeMap;
use std::sync::Arc;

use rhai::{Dynamic, Map, AST};
use sha2::{Digest, Sha256};

use super::script::{Condition, RuleScripts, ScriptError, WindowValues};
use super::selector::Selector;
use super::{RuleError, Severity};
use crate::labels::LabelSet;
use crate::mode::Mode;
use crate::time::{parse_duration, Nanos, SECOND};
use crate::window::{WindowFn, WindowSpec};

/// The fields a declaration may have, for "unknown field" errors.
const FIELDS: &[&str] = &[
    "name",
    "description",
    "severity",
    "mode",
    "select",
    "group_by",
    "windows",
    "for",
    "keep_firing_for",
    "cooldown",
    "stale_after",
    "actions",
];

/// Most labels a `group_by` may name. Subjects are keyed by their label
/// values inline, without an allocation each; six covers every real subject
/// (node, netdev, prio, switch, port, queue).
pub const MAX_GROUP_BY: usize = 6;

/// How long a subject may go without samples before it is stale, unless a
/// rule says otherwise: ten 500 ms polls, or fifty of the 100 ms kind.
pub const DEFAULT_STALE_AFTER: Nanos = 5 * SECOND;

/// An action a rule proposes when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionTemplate {
    /// The action kind, `<actuator>.<verb>` (e.g. `pfcwd.escalate`).
    pub kind: String,
    /// Target labels; `{label}` in a value is replaced by the subject's label.
    pub target: BTreeMap<String, String>,
    /// Parameters for the actuator, templated the same way.
    pub params: BTreeMap<String, String>,
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Unique name.
    pub name: String,
    /// What it detects, for people.
    pub description: String,
    /// How bad it is.
    pub severity: Severity,
    /// What it does with its findings.
    pub mode: Mode,
    /// The series it reads.
    pub selectors: Vec<Selector>,
    /// Labels that identify one subject (one instance of the rule).
    pub group_by: Vec<String>,
    /// Declared windows, by name.
    pub windows: Vec<(String, WindowSpec)>,
    /// How long `fire` must hold before the instance fires.
    pub for_: Nanos,
    /// How long a firing instance stays firing once `clear` holds.
    pub keep_firing_for: Nanos,
    /// After resolving, how long the fire condition is ignored.
    pub cooldown: Nanos,
    /// A subject without samples for this long is stale and never fires.
    pub stale_after: Nanos,
    /// Actions proposed on firing.
    pub actions: Vec<ActionTemplate>,
    /// Whether the file defines `clear(w)`.
    pub has_clear: bool,
    /// Whether its conditions ask about other rules or jobs (`firing*`,
    /// `job_nodes`): their answers are part of its evaluation cache key.
    pub cross_series: bool,
    /// The file it came from.
    pub path: String,
    /// SHA-256 of the file's content, hex: the rule's version in records.
    pub hash: String,
    pub(crate) ast: Arc<AST>,
    /// Window names, shared by every evaluation.
    pub(crate) window_names: Arc<[String]>,
    pub(crate) window_booleans: Arc<[bool]>,
}

impl Rule {
    /// The first 12 hex digits of the content hash.
    pub fn short_hash(&self) -> &str {
        &self.hash[..12]
    }

    /// Window values for a script call.
    pub fn window_values(&self, values: Vec<f64>) -> WindowValues {
        WindowValues::new(self.window_names.clone(), self.window_booleans.clone(), values)
    }
}

fn err(path: &str, (line, column): (usize, usize), message: impl Into<String>) -> RuleError {
    RuleError { path: path.to_string(), line, column, message: message.into() }
}

/// Where `field:` first appears in the source, else where the declaration
/// starts; good enough to put the cursor on the offending line.
fn field_position(source: &str, field: &str, fallback: (usize, usize)) -> (usize, usize) {
    // Keys may be bare (`select:`) or quoted (`"for":`, needed for Rhai
    // keywords). Comments are blanked first so prose naming a field does not
    // catch the cursor; blanking keeps every offset.
    let f = regex::escape(field);
    let pattern = regex::Regex::new(&format!(r#"(?:\b{f}|"{f}")\s*:"#)).expect("static pattern");
    let code = without_comments(source);
    match pattern.find(&code) {
        Some(m) => crate::config::line_col(source, m.start()),
        None => fallback,
    }
}

pub(super) fn compile(scripts: &RuleScripts, path: &str, source: &str) -> Result<Rule, RuleError> {
    let engine = scripts.engine();
    let ast = engine.compile(source).map_err(|e| {
        let pos = e.position();
        err(path, (pos.line().unwrap_or(0), pos.position().unwrap_or(0)), e.0.to_string())
    })?;
    // Where the declaration map starts, for errors about the map as a whole.
    let decl_pos = top_level_map_start(source).map(|i| crate::config::line_col(source, i)).unwrap_or((1, 1));
    let value: Dynamic = engine.eval_ast(&ast).map_err(|e| {
        let e = ScriptError::from_rhai(&e);
        err(path, (e.line, e.column), format!("evaluating the declaration: {}", e.message))
    })?;
    let map: Map = value.try_cast::<Map>().ok_or_else(|| {
        err(path, decl_pos, "the file must end with the rule's declaration map `#{ name: …, select: […], … }`")
    })?;
    let at = |field: &str| field_position(source, field, decl_pos);
    let field_err = |field: &str, msg: String| err(path, at(field), msg);

    for key in map.keys() {
        if !FIELDS.contains(&key.as_str()) {
            return Err(field_err(key, format!("unknown field `{key}`; expected one of {}", FIELDS.join(", "))));
        }
    }
    let string = |field: &str, required: bool| -> Result<Option<String>, RuleError> {
        match map.get(field) {
            None if required => Err(err(path, decl_pos, format!("missing field `{field}`"))),
            None => Ok(None),
            Some(v) => v
                .clone()
                .into_string()
                .map(Some)
                .map_err(|ty| field_err(field, format!("`{field}` must be a string, found {ty}"))),
        }
    };
    let duration = |field: &str, default: Nanos| -> Result<Nanos, RuleError> {
        match string(field, false)? {
            None => Ok(default),
            Some(text) => parse_duration(&text).map_err(|e| field_err(field, format!("`{field}`: {e}"))),
        }
    };
    let strings = |field: &str| -> Result<Vec<String>, RuleError> {
        match map.get(field) {
            None => Ok(Vec::new()),
            Some(v) if v.is_string() => Ok(vec![v.to_string()]),
            Some(v) => {
                let array = v
                    .clone()
                    .into_typed_array::<rhai::ImmutableString>()
                    .map_err(|_| field_err(field, format!("`{field}` must be an array of strings")))?;
                Ok(array.into_iter().map(|s| s.to_string()).collect())
            }
        }
    };

    let name = string("name", true)?.unwrap_or_default();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(field_err("name", format!("rule name {name:?} must be non-empty letters, digits, '-' or '_'")));
    }
    let severity = match string("severity", false)?.as_deref() {
        None | Some("warning") => Severity::Warning,
        Some("info") => Severity::Info,
        Some("critical") => Severity::Critical,
        Some(other) => {
            return Err(field_err("severity", format!("severity {other:?}: expected info, warning or critical")))
        }
    };
    let mode = match string("mode", false)?.as_deref() {
        None | Some("enforce") => Mode::Enforce,
        Some("dry-run") => Mode::DryRun,
        Some("shadow") => Mode::Shadow,
        Some("off") => Mode::Off,
        Some(other) => {
            return Err(field_err("mode", format!("mode {other:?}: expected enforce, dry-run, shadow or off")))
        }
    };
    let selectors = strings("select")?
        .iter()
        .map(|s| Selector::parse(s).map_err(|e| field_err("select", e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    if selectors.is_empty() {
        return Err(field_err("select", "`select` must name at least one series selector".into()));
    }
    let group_by = strings("group_by")?;
    if group_by.len() > MAX_GROUP_BY {
        return Err(field_err(
            "group_by",
            format!("`group_by` names {} labels; at most {MAX_GROUP_BY} identify a subject", group_by.len()),
        ));
    }

    let mut windows = Vec::new();
    if let Some(w) = map.get("windows") {
        let wmap = w
            .clone()
            .try_cast::<Map>()
            .ok_or_else(|| field_err("windows", "`windows` must be a map of name: rate(…) / max_over(…) / …".into()))?;
        for (wname, spec) in wmap {
            let spec = spec.try_cast::<WindowSpec>().ok_or_else(|| {
                field_err(
                    &wname,
                    format!(
                        "window `{wname}` must be one of: {}",
                        WindowFn::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            if !selectors.iter().any(|s| s.metric == spec.metric) {
                return Err(field_err(
                    &wname,
                    format!("window `{wname}` reads {:?}, which no selector in `select` names", spec.metric),
                ));
            }
            windows.push((wname.to_string(), spec));
        }
    }
    if windows.is_empty() {
        return Err(field_err("windows", "a rule needs at least one window for its conditions to read".into()));
    }

    let actions = match map.get("actions") {
        None => Vec::new(),
        Some(v) => {
            let array = v
                .clone()
                .try_cast::<rhai::Array>()
                .ok_or_else(|| field_err("actions", "`actions` must be an array of maps".into()))?;
            array
                .into_iter()
                .map(|a| action_template(a).map_err(|m| field_err("actions", m)))
                .collect::<Result<Vec<_>, _>>()?
        }
    };

    let fire = ast.iter_functions().find(|f| f.name == "fire");
    match fire {
        Some(f) if f.params.len() == 1 => {}
        Some(_) => return Err(err(path, decl_pos, "fn fire must take one parameter, the windows: `fn fire(w)`")),
        None => return Err(err(path, decl_pos, "missing `fn fire(w)`: the condition under which the rule fires")),
    }
    let has_clear = match ast.iter_functions().find(|f| f.name == "clear") {
        Some(f) if f.params.len() == 1 => true,
        Some(_) => return Err(err(path, decl_pos, "fn clear must take one parameter, the windows: `fn clear(w)`")),
        None => false,
    };

    let window_names: Arc<[String]> = windows.iter().map(|(n, _)| n.clone()).collect();
    let window_booleans: Arc<[bool]> = windows.iter().map(|(_, s)| s.func == WindowFn::Absent).collect();
    let rule = Rule {
        name,
        description: string("description", false)?.unwrap_or_default(),
        severity,
        mode,
        selectors,
        group_by,
        for_: duration("for", 0)?,
        keep_firing_for: duration("keep_firing_for", 0)?,
        cooldown: duration("cooldown", 0)?,
        stale_after: duration("stale_after", DEFAULT_STALE_AFTER)?,
        windows,
        actions,
        has_clear,
        cross_series: ["firing(", "firing_on(", "firing_where(", "job_nodes("].iter().any(|f| source.contains(f)),
        path: path.to_string(),
        hash: hex(&Sha256::digest(source.as_bytes())),
        ast: Arc::new(ast),
        window_names,
        window_booleans,
    };
    trial_run(scripts, &rule, source)?;
    Ok(rule)
}

/// Runs `fire` and `clear` once with every window at zero, so a type error
/// (comparing a string with a number, a misspelt window) is reported at
/// load time with its position instead of quarantining the rule later.
fn trial_run(scripts: &RuleScripts, rule: &Rule, source: &str) -> Result<(), RuleError> {
    for cond in [Condition::Fire, Condition::Clear] {
        let values = rule.window_values(vec![0.0; rule.windows.len()]);
        scripts.eval(rule, cond, &LabelSet::default(), values).map_err(|e| {
            let func = if cond == Condition::Clear && rule.has_clear { "clear" } else { "fire" };
            // Errors without a position (a non-bool result) point at the function.
            let (line, column) = if e.line > 0 {
                (e.line, e.column)
            } else {
                let code = without_comments(source);
                code.find(&format!("fn {func}")).map(|i| crate::config::line_col(source, i)).unwrap_or((0, 0))
            };
            RuleError {
                path: rule.path.clone(),
                line,
                column,
                message: format!("{func}(w) fails with every window at 0: {}", e.message),
            }
        })?;
    }
    Ok(())
}

fn action_template(value: Dynamic) -> Result<ActionTemplate, String> {
    let map =
        value.try_cast::<Map>().ok_or("each action must be a map `#{ action: \"pfcwd.escalate\", target: #{…} }`")?;
    for key in map.keys() {
        if !["action", "target", "params"].contains(&key.as_str()) {
            return Err(format!("unknown action field `{key}`; expected action, target, params"));
        }
    }
    let kind = map
        .get("action")
        .and_then(|v| v.clone().into_string().ok())
        .ok_or("an action needs `action: \"<actuator>.<verb>\"`")?;
    if kind.split('.').count() != 2 || kind.split('.').any(str::is_empty) {
        return Err(format!("action {kind:?} must be written <actuator>.<verb>, e.g. \"node.cordon\""));
    }
    let strings = |field: &str| -> Result<BTreeMap<String, String>, String> {
        match map.get(field) {
            None => Ok(BTreeMap::new()),
            Some(v) => {
                let m = v.clone().try_cast::<Map>().ok_or(format!("action `{field}` must be a map"))?;
                m.into_iter()
                    .map(|(k, v)| {
                        let text = v.to_string();
                        check_template(&text)?;
                        Ok((k.to_string(), text))
                    })
                    .collect()
            }
        }
    };
    Ok(ActionTemplate { kind, target: strings("target")?, params: strings("params")? })
}

fn check_template(text: &str) -> Result<(), String> {
    let mut open = false;
    for c in text.chars() {
        match (c, open) {
            ('{', false) => open = true,
            ('}', true) => open = false,
            ('{', true) | ('}', false) => return Err(format!("unbalanced braces in template {text:?}")),
            _ => {}
        }
    }
    if open {
        return Err(format!("unclosed '{{' in template {text:?}"));
    }
    Ok(())
}

/// `source` with every `//` and `/* */` comment replaced by spaces (newlines
/// kept), so byte offsets stay the same.
fn without_comments(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'`' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    if bytes[i] != b'\n' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
                if i < bytes.len() {
                    out[i] = b' ';
                    out[i + 1] = b' ';
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Only ASCII bytes were replaced, by ASCII spaces: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| source.to_string())
}

/// The byte offset of the last `#{` outside any braces: the declaration
/// map. Strings and comments are skipped so their braces do not count.
fn top_level_map_start(source: &str) -> Option<usize> {
    let bytes = source.as_bytes();
    let (mut depth, mut i, mut found) = (0i32, 0usize, None);
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'`' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'#' if bytes.get(i + 1) == Some(&b'{') => {
                if depth == 0 {
                    found = Some(i);
                }
                depth += 1;
                i += 1;
            }
            b'{' => depth += 1,
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    found
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declaration_is_the_last_top_level_map() {
        let src = "fn fire(w) { let m = #{ a: 1 }; true }\n// #{ in a comment }\n#{ name: \"x\", windows: #{ y: 1 }, s: \"#{\" }\n";
        let at = top_level_map_start(src).unwrap();
        assert_eq!(crate::config::line_col(src, at), (3, 1));
    }

    #[test]
    fn quoted_keys_are_found_for_errors() {
        let src = "#{\n  name: \"x\",\n  \"for\": \"soon\",\n}";
        assert_eq!(field_position(src, "for", (1, 1)), (3, 3));
    }
}
