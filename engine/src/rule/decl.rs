//! Reading a rule file's declaration map into a [`Rule`].

use std::collections::BTreeMap;
use std::sync::Arc;

use rhai::{Dynamic, Map, AST};
use sha2::{Digest, Sha256};

use super::native::{NativePredicate, NotNative, Runs};
use super::script::{Condition, RuleScripts, ScriptError, WindowValues};
use super::selector::Selector;
use super::{RuleError, RuleErrors, Severity};
use crate::errors::Errors;
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
    /// Whether the rule proposes this action once per job that runs behind
    /// its subject (`each: "job"`) rather than once for the subject.
    pub each: Option<Each>,
}

/// What an action template is proposed once for, beside its subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Each {
    /// Every job with a node behind the subject: on the subject's own `node`
    /// when it names one, else on the nodes whose NICs face its `switch` (a
    /// leaf's senders). The job's name fills `{job}`. No job there, no
    /// proposal.
    Job,
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
    /// How `fire` runs: natively (compiled at load) or on Rhai, and why.
    pub fire_runs: Runs,
    /// How `clear` runs; without a `clear` in the file, as `!fire` does.
    pub clear_runs: Runs,
    /// Whether its conditions ask about other rules or jobs (`firing*`,
    /// `job_nodes`): their answers are part of its evaluation cache key.
    pub cross_series: bool,
    /// The file it came from.
    pub path: String,
    /// SHA-256 of the file's content, hex: the rule's version in records.
    pub hash: String,
    pub(crate) ast: Arc<AST>,
    pub(crate) native_fire: Option<NativePredicate>,
    pub(crate) native_clear: Option<NativePredicate>,
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

    /// How condition `cond` runs.
    pub fn runs(&self, cond: Condition) -> &Runs {
        match cond {
            Condition::Fire => &self.fire_runs,
            Condition::Clear => &self.clear_runs,
        }
    }

    /// Whether both conditions run natively.
    pub fn runs_natively(&self) -> bool {
        self.fire_runs.is_native() && self.clear_runs.is_native()
    }

    /// Condition `cond` on window `values` (in declaration order) by its
    /// native predicate. `None` when it has none, or when the script must
    /// run to report an error (integer overflow or division by zero): then
    /// [`RuleScripts::eval`] gives the answer.
    #[inline]
    pub fn eval_native(&self, cond: Condition, values: &[f64]) -> Option<bool> {
        self.eval_native_sized(cond, values).map(|(result, _)| result)
    }

    /// [`Rule::eval_native`], with the size of the predicate that answered
    /// (its nodes), for the cost meter.
    #[inline]
    pub fn eval_native_sized(&self, cond: Condition, values: &[f64]) -> Option<(bool, usize)> {
        let (predicate, negate) = match cond {
            Condition::Fire => (self.native_fire.as_ref()?, false),
            Condition::Clear if self.has_clear => (self.native_clear.as_ref()?, false),
            Condition::Clear => (self.native_fire.as_ref()?, true),
        };
        predicate.eval(values).map(|result| (result != negate, predicate.nodes()))
    }
}

fn err(path: &str, (line, column): (usize, usize), message: impl Into<String>) -> RuleError {
    RuleError { path: path.to_string(), line, column, message: message.into() }
}

/// The byte offset of 1-based (`line`, `column`) in `source` (the inverse
/// of [`crate::config::line_col`]); the start for a place before it.
fn offset_of(source: &str, (line, column): (usize, usize)) -> usize {
    let line_start: usize = source.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (line_start + column.saturating_sub(1)).min(source.len())
}

/// Where `field:` first appears in the source, else where the declaration
/// starts; good enough to put the cursor on the offending line.
pub(super) fn field_position(source: &str, field: &str, fallback: (usize, usize)) -> (usize, usize) {
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

/// The script compiled and its declaration map evaluated, with where the
/// map starts (for errors about the map as a whole).
fn declaration_map(scripts: &RuleScripts, path: &str, source: &str) -> Result<(AST, Map, (usize, usize)), RuleErrors> {
    let engine = scripts.engine();
    let ast = engine.compile(source).map_err(|e| {
        let pos = e.position();
        err(path, (pos.line().unwrap_or(0), pos.position().unwrap_or(0)), e.0.to_string())
    })?;
    let decl_pos = top_level_map_start(source).map(|i| crate::config::line_col(source, i)).unwrap_or((1, 1));
    let value: Dynamic = engine.eval_ast(&ast).map_err(|e| {
        let e = ScriptError::from_rhai(&e);
        err(path, (e.line, e.column), format!("evaluating the declaration: {}", e.message))
    })?;
    let map: Map = value.try_cast::<Map>().ok_or_else(|| {
        err(path, decl_pos, "the file must end with the rule's declaration map `#{ name: …, select: […], … }`")
    })?;
    Ok((ast, map, decl_pos))
}

/// Says, in the log, whether each condition of `rule` runs natively.
fn log_where_conditions_run(rule: &Rule) {
    for cond in [Condition::Fire, Condition::Clear] {
        match rule.runs(cond) {
            Runs::Native => {
                tracing::debug!(message = "Rule condition runs natively.", rule = %rule.name, condition = ?cond)
            }
            Runs::Rhai(reason) => {
                tracing::info!(message = "Rule condition runs on Rhai.", rule = %rule.name, condition = ?cond, %reason)
            }
        }
    }
}

pub(super) fn compile(scripts: &RuleScripts, path: &str, source: &str) -> Result<Rule, RuleErrors> {
    let (ast, map, decl_pos) = declaration_map(scripts, path, source)?;
    let mut decl = Declaration { map, source, path, decl_pos, errors: Vec::new() };
    decl.refuse_unknown_fields();
    let name = decl.name();
    let description = decl.string("description", false).unwrap_or_default();
    let severity = decl.severity();
    let mode = decl.mode();
    let selectors = decl.selectors();
    let group_by = decl.group_by();
    let windows = decl.windows(&selectors);
    let actions = decl.actions();
    decl.placeholders_filled(&group_by, &actions);
    let has_clear = decl.conditions(&ast);
    let (for_, keep_firing_for) = (decl.duration("for", 0), decl.duration("keep_firing_for", 0));
    let (cooldown, stale_after) = (decl.duration("cooldown", 0), decl.duration("stale_after", DEFAULT_STALE_AFTER));
    let mut errors = decl.errors;
    if !errors.is_empty() {
        errors.sort_by_key(|e| (e.line, e.column));
        return Err(Errors(errors));
    }

    let window_names: Arc<[String]> = windows.iter().map(|(n, _)| n.clone()).collect();
    let window_booleans: Arc<[bool]> = windows.iter().map(|(_, s)| s.func == WindowFn::Absent).collect();
    let typed: Vec<(&str, bool)> =
        window_names.iter().map(String::as_str).zip(window_booleans.iter().copied()).collect();
    let native_fire = NativePredicate::compile(&ast, "fire", &typed);
    let native_clear = if has_clear { NativePredicate::compile(&ast, "clear", &typed) } else { native_fire.clone() };
    let runs = |p: &Result<NativePredicate, NotNative>| match p {
        Ok(_) => Runs::Native,
        Err(why) => Runs::Rhai(why.to_string()),
    };
    let (fire_runs, clear_runs) = (runs(&native_fire), runs(&native_clear));
    let mut rule = Rule {
        name,
        description,
        severity,
        mode,
        selectors,
        group_by,
        for_,
        keep_firing_for,
        cooldown,
        stale_after,
        windows,
        actions,
        has_clear,
        fire_runs,
        clear_runs,
        cross_series: ["firing(", "firing_on(", "firing_where(", "job_nodes("].iter().any(|f| source.contains(f)),
        path: path.to_string(),
        hash: hex(&Sha256::digest(source.as_bytes())),
        ast: Arc::new(ast),
        native_fire: native_fire.ok(),
        native_clear: if has_clear { native_clear.ok() } else { None },
        window_names,
        window_booleans,
    };
    trial_run(scripts, &rule, source)?;
    cross_check(scripts, &mut rule);
    log_where_conditions_run(&rule);
    Ok(rule)
}

/// Window values [`cross_check`] tries: the edges of what windows hold.
const CROSS_CHECK_VALUES: [f64; 6] = [0.0, 1.0, -1.0, f64::NAN, f64::INFINITY, 1e300];

/// Runs each native predicate and the script side by side on a few window
/// values (every window at 0, 1, -1, NaN, inf, 1e300). They must agree (an
/// answer `None` natively is a script error); a predicate that does not is
/// dropped, so the condition runs on Rhai. This is a guard against a bug in
/// the compiler, never expected to trigger: the property tests of
/// `engine/tests/it/native_predicates.rs` hold the two to the same answers.
fn cross_check(scripts: &RuleScripts, rule: &mut Rule) {
    for cond in [Condition::Fire, Condition::Clear] {
        if !rule.runs(cond).is_native() {
            continue;
        }
        for value in CROSS_CHECK_VALUES {
            let values = vec![value; rule.windows.len()];
            let native = rule.eval_native(cond, &values);
            let script = scripts.eval(rule, cond, &LabelSet::default(), rule.window_values(values)).ok();
            if native != script {
                let why = format!(
                    "its native form answered {native:?} where Rhai answered {script:?} with every window at {value}"
                );
                tracing::error!(message = "Native predicate disagrees with Rhai; the condition runs on Rhai.", rule = %rule.name, condition = ?cond, %why);
                let runs = Runs::Rhai(why);
                match cond {
                    Condition::Fire => {
                        rule.native_fire = None;
                        rule.fire_runs = runs.clone();
                        if !rule.has_clear {
                            rule.clear_runs = runs;
                        }
                    }
                    Condition::Clear => {
                        rule.native_clear = None;
                        rule.clear_runs = runs;
                    }
                }
                break;
            }
        }
    }
}

/// A rule file's declaration map being read field by field. Each reader
/// records what is wrong with its field and returns a stand-in, so one pass
/// reports every error of the file, each at its field.
struct Declaration<'a> {
    map: Map,
    source: &'a str,
    path: &'a str,
    /// Where the map starts: the place of errors about the map as a whole.
    decl_pos: (usize, usize),
    errors: Vec<RuleError>,
}

impl Declaration<'_> {
    /// Records `message` at `field`.
    fn fail(&mut self, field: &str, message: String) {
        let at = field_position(self.source, field, self.decl_pos);
        self.errors.push(err(self.path, at, message));
    }

    /// Records `message` at the declaration map.
    fn fail_at_map(&mut self, message: &str) {
        self.errors.push(err(self.path, self.decl_pos, message));
    }

    fn refuse_unknown_fields(&mut self) {
        let unknown: Vec<String> =
            self.map.keys().filter(|k| !FIELDS.contains(&k.as_str())).map(|k| k.to_string()).collect();
        for key in unknown {
            self.fail(&key, format!("unknown field `{key}`; expected one of {}", FIELDS.join(", ")));
        }
    }

    fn string(&mut self, field: &str, required: bool) -> Option<String> {
        match self.map.get(field).cloned() {
            None if required => {
                self.fail_at_map(&format!("missing field `{field}`"));
                None
            }
            None => None,
            Some(v) => match v.into_string() {
                Ok(text) => Some(text),
                Err(ty) => {
                    self.fail(field, format!("`{field}` must be a string, found {ty}"));
                    None
                }
            },
        }
    }

    fn duration(&mut self, field: &str, default: Nanos) -> Nanos {
        let Some(text) = self.string(field, false) else { return default };
        parse_duration(&text).unwrap_or_else(|e| {
            self.fail(field, format!("`{field}`: {e}"));
            default
        })
    }

    fn strings(&mut self, field: &str) -> Vec<String> {
        match self.map.get(field).cloned() {
            None => Vec::new(),
            Some(v) if v.is_string() => vec![v.to_string()],
            Some(v) => match v.into_typed_array::<rhai::ImmutableString>() {
                Ok(array) => array.into_iter().map(|s| s.to_string()).collect(),
                Err(_) => {
                    self.fail(field, format!("`{field}` must be an array of strings"));
                    Vec::new()
                }
            },
        }
    }

    fn name(&mut self) -> String {
        let Some(name) = self.string("name", true) else { return String::new() };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            self.fail("name", format!("rule name {name:?} must be non-empty letters, digits, '-' or '_'"));
        }
        name
    }

    fn severity(&mut self) -> Severity {
        match self.string("severity", false).as_deref() {
            None | Some("warning") => Severity::Warning,
            Some("info") => Severity::Info,
            Some("critical") => Severity::Critical,
            Some(other) => {
                self.fail("severity", format!("severity {other:?}: expected info, warning or critical"));
                Severity::Warning
            }
        }
    }

    fn mode(&mut self) -> Mode {
        match self.string("mode", false).as_deref() {
            None | Some("enforce") => Mode::Enforce,
            Some("dry-run") => Mode::DryRun,
            Some("shadow") => Mode::Shadow,
            Some("off") => Mode::Off,
            Some(other) => {
                self.fail("mode", format!("mode {other:?}: expected enforce, dry-run, shadow or off"));
                Mode::Enforce
            }
        }
    }

    fn selectors(&mut self) -> Vec<Selector> {
        let before = self.errors.len();
        let texts = self.strings("select");
        if texts.is_empty() && self.errors.len() == before {
            self.fail("select", "`select` must name at least one series selector".into());
        }
        let mut selectors = Vec::new();
        for text in texts {
            match Selector::parse(&text) {
                Ok(selector) => selectors.push(selector),
                Err(e) => self.fail("select", e.to_string()),
            }
        }
        selectors
    }

    fn group_by(&mut self) -> Vec<String> {
        let group_by = self.strings("group_by");
        if group_by.len() > MAX_GROUP_BY {
            let n = group_by.len();
            self.fail("group_by", format!("`group_by` names {n} labels; at most {MAX_GROUP_BY} identify a subject"));
        }
        group_by
    }

    /// The declared windows; each must read a metric some selector names.
    fn windows(&mut self, selectors: &[Selector]) -> Vec<(String, WindowSpec)> {
        let mut windows = Vec::new();
        let Some(w) = self.map.get("windows").cloned() else {
            self.fail("windows", "a rule needs at least one window for its conditions to read".into());
            return windows;
        };
        let Some(wmap) = w.try_cast::<Map>() else {
            self.fail("windows", "`windows` must be a map of name: rate(…) / max_over(…) / …".into());
            return windows;
        };
        for (wname, spec) in wmap {
            let Some(spec) = spec.try_cast::<WindowSpec>() else {
                let known: Vec<&str> = WindowFn::ALL.iter().map(|f| f.name()).collect();
                self.fail(&wname, format!("window `{wname}` must be one of: {}", known.join(", ")));
                continue;
            };
            // Without valid selectors there is nothing to check against.
            if !selectors.is_empty() && !selectors.iter().any(|s| s.metric == spec.metric) {
                let metric = &spec.metric;
                self.fail(&wname, format!("window `{wname}` reads {metric:?}, which no selector in `select` names"));
            }
            windows.push((wname.to_string(), spec));
        }
        if windows.is_empty() {
            self.fail("windows", "a rule needs at least one window for its conditions to read".into());
        }
        windows
    }

    fn actions(&mut self) -> Vec<ActionTemplate> {
        let Some(v) = self.map.get("actions").cloned() else { return Vec::new() };
        let Some(array) = v.try_cast::<rhai::Array>() else {
            self.fail("actions", "`actions` must be an array of maps".into());
            return Vec::new();
        };
        let mut actions = Vec::new();
        for action in array {
            match action_template(action) {
                Ok(template) => actions.push(template),
                Err(message) => self.fail("actions", message),
            }
        }
        actions
    }

    /// Every `{label}` of an action template is one each subject carries
    /// (its `group_by` labels and what the inventory derives from them);
    /// else the action fails each time the rule fires. Placed at the
    /// placeholder in the source.
    fn placeholders_filled(&mut self, group_by: &[String], actions: &[ActionTemplate]) {
        if group_by.is_empty() {
            return; // A subject per series: every label of the series is its own.
        }
        let carried = super::template::subject_labels(group_by);
        let start = field_position(self.source, "actions", self.decl_pos);
        let from = offset_of(self.source, start);
        for action in actions {
            let values = action.target.values().chain(action.params.values());
            for label in values.flat_map(|v| super::template::placeholders(v)) {
                if carried.iter().any(|c| c == label) || (label == "job" && action.each == Some(Each::Job)) {
                    continue;
                }
                let written = format!("{{{label}}}");
                let at = self.source[from..]
                    .find(&written)
                    .map_or(start, |i| crate::config::line_col(self.source, from + i));
                let message = format!(
                    "action {:?}: {written} is not a label of this rule's subjects: it groups by {group_by:?}, whose \
                     subjects carry {}; add {label:?} to group_by, or take it out of the template",
                    action.kind,
                    carried.join(", ")
                );
                self.errors.push(err(self.path, at, message));
            }
        }
    }

    /// Checks `fn fire(w)` and the optional `fn clear(w)`; whether the file
    /// has `clear`.
    fn conditions(&mut self, ast: &AST) -> bool {
        match ast.iter_functions().find(|f| f.name == "fire") {
            Some(f) if f.params.len() == 1 => {}
            Some(_) => self.fail_at_map("fn fire must take one parameter, the windows: `fn fire(w)`"),
            None => self.fail_at_map("missing `fn fire(w)`: the condition under which the rule fires"),
        }
        match ast.iter_functions().find(|f| f.name == "clear") {
            Some(f) if f.params.len() == 1 => true,
            Some(_) => {
                self.fail_at_map("fn clear must take one parameter, the windows: `fn clear(w)`");
                false
            }
            None => false,
        }
    }
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
        if !["action", "target", "params", "each"].contains(&key.as_str()) {
            return Err(format!("unknown action field `{key}`; expected action, target, params, each"));
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
    let each = match map.get("each").map(|v| v.to_string()) {
        None => None,
        Some(each) if each == "job" => Some(Each::Job),
        Some(other) => {
            return Err(format!(
                "action {kind:?}: each = {other:?}; the only one is \"job\" (once per job running behind the subject)"
            ))
        }
    };
    Ok(ActionTemplate { kind, target: strings("target")?, params: strings("params")?, each })
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
