//! Keeps docs/config.md true: the reference table between its markers is
//! generated from the config structs of `config/mod.rs` and of the fleet
//! crate's `settings.rs` (each field's doc comment, and its default as a
//! minimal config deserializes it), and this
//! test fails when the file differs. `ROCEMEND_BLESS_DOCS=1 cargo test -p
//! rocemend-ops config::docs` rewrites the table.

use std::path::Path;

const SOURCE: &str = include_str!("mod.rs");
const FLEET_SOURCE: &str = include_str!("../../../fleet/src/settings.rs");
const BEGIN: &str = "<!-- BEGIN GENERATED: config reference (ops/src/config/docs.rs) -->";
const END: &str = "<!-- END GENERATED -->";

/// Each struct of the config file, the table key prefix its fields get.
const SECTIONS: &[(&str, &str)] = &[
    ("DaemonConfig", ""),
    ("EngineSection", "engine."),
    ("LogSection", "log."),
    ("ControlSection", "control."),
    ("MetricsSection", "metrics."),
    ("WebSection", "web."),
    ("SensorEntry", "sensor[]."),
    ("FleetConfig", "fleet."),
    ("BudgetConfig", "fleet.budget[]."),
    ("RemoteWriteSection", "remote_write."),
    ("BasicAuth", "remote_write.basic_auth."),
];

/// Fields with no default: the minimal configs below give them.
const REQUIRED: &[&str] = &[
    "state_dir",
    "playbook",
    "sensor[].type",
    "fleet.etcd",
    "fleet.budget[].name",
    "fleet.budget[].kinds",
    "fleet.budget[].max",
    "remote_write.url",
    "remote_write.basic_auth.username",
    "remote_write.basic_auth.password_file",
];

/// One field as the source declares it.
#[derive(Debug)]
struct Field {
    strukt: String,
    key: String,
    doc: String,
    flatten: bool,
}

/// Reads the structs' fields, their doc comments and serde renames from
/// the source texts. The files follow rustfmt, so line-based parsing holds.
fn fields() -> Vec<Field> {
    let mut out = Vec::new();
    let (mut current, mut doc, mut rename, mut flatten) = (None::<String>, Vec::<String>::new(), None, false);
    for line in SOURCE.lines().chain(FLEET_SOURCE.lines()).map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            current = Some(rest.trim_end_matches(" {").to_string());
            doc.clear();
        } else if line == "}" {
            current = None;
        } else if let Some(d) = line.strip_prefix("///") {
            doc.push(d.trim().to_string());
        } else if line.starts_with("#[serde(") {
            if let Some(r) = line.split("rename = \"").nth(1) {
                rename = r.split('"').next().map(str::to_string);
            }
            flatten |= line.contains("flatten");
        } else if let (Some(s), Some(decl)) = (&current, line.strip_prefix("pub ")) {
            if let Some((name, _)) = decl.split_once(':') {
                out.push(Field {
                    strukt: s.clone(),
                    key: rename.take().unwrap_or_else(|| name.to_string()),
                    doc: doc.join(" "),
                    flatten,
                });
            }
            doc.clear();
            flatten = false;
        } else if !line.starts_with("#[") {
            doc.clear();
        }
    }
    out
}

/// The defaults: a config with only its required fields, deserialized and
/// serialized back; and the same with a minimal `[fleet]` and one budget,
/// and a minimal `[remote_write]` with basic authentication.
fn defaults() -> (serde_json::Value, serde_json::Value) {
    let text = "state_dir = \"/var/lib/rocemend\"\nplaybook = \"/etc/rocemend/playbook.toml\"\n[[sensor]]\ntype = \"replay\"\n";
    let parse = |text: &str| {
        let config: super::DaemonConfig = toml::from_str(text).expect("the minimal config parses");
        serde_json::to_value(&config).expect("the config serializes")
    };
    let fleet = format!(
        "{text}[fleet]\netcd = [\"http://127.0.0.1:2379\"]\n[[fleet.budget]]\nname = \"b\"\nkinds = [\"node.cordon\"]\nmax = 1\n\
         [remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\n\
         [remote_write.basic_auth]\nusername = \"u\"\npassword_file = \"/p\"\n"
    );
    (parse(text), parse(&fleet))
}

fn default_of(defaults: &(serde_json::Value, serde_json::Value), prefix: &str, key: &str) -> String {
    let (plain, fleet) = defaults;
    let section = match prefix {
        "" => plain.clone(),
        "sensor[]." => plain["sensor"][0].clone(),
        "fleet." => fleet["fleet"].clone(),
        "fleet.budget[]." => fleet["fleet"]["budget"][0].clone(),
        "remote_write." => fleet["remote_write"].clone(),
        "remote_write.basic_auth." => fleet["remote_write"]["basic_auth"].clone(),
        p => plain[p.trim_end_matches('.')].clone(),
    };
    match &section[key] {
        serde_json::Value::Null => "unset".into(),
        serde_json::Value::String(s) if s.is_empty() => "unset".into(),
        serde_json::Value::Array(a) if a.is_empty() => "none".into(),
        serde_json::Value::Object(_) => "see below".into(),
        serde_json::Value::String(s) => format!("`{s:?}`"),
        v => format!("`{v}`"),
    }
}

fn table() -> String {
    let fields = fields();
    let defaults = defaults();
    let mut out = String::new();
    for (strukt, prefix) in SECTIONS {
        let mine: Vec<&Field> = fields.iter().filter(|f| f.strukt == *strukt).collect();
        assert!(!mine.is_empty(), "no fields found for {strukt} in config/mod.rs");
        let title = match *prefix {
            "" => "Top level".to_string(),
            "sensor[]." => "`[[sensor]]` (one per sensor)".to_string(),
            "fleet.budget[]." => "`[[fleet.budget]]` (one per budget)".to_string(),
            "remote_write.basic_auth." => "`[remote_write.basic_auth]`".to_string(),
            p => format!("`[{}]`", p.trim_end_matches('.')),
        };
        out.push_str(&format!("\n### {title}\n\n| key | default | meaning |\n|---|---|---|\n"));
        for f in mine {
            if f.flatten {
                out.push_str(&format!(
                    "| *other keys* | | {} See [sensors.md](sensors.md) for each type's keys. |\n",
                    f.doc
                ));
                continue;
            }
            let required = REQUIRED.contains(&format!("{prefix}{}", f.key).as_str());
            let default = if required { "required".to_string() } else { default_of(&defaults, prefix, &f.key) };
            let default = match (*prefix, f.key.as_str()) {
                ("", "sensor") => "none".into(),
                ("fleet.", "budget") => "built-in (see meaning)".into(),
                ("remote_write.", "headers" | "external_labels") => "none".into(),
                _ => default,
            };
            out.push_str(&format!("| `{prefix}{}` | {default} | {} |\n", f.key, f.doc.replace('|', "\\|")));
        }
    }
    out
}

#[test]
fn docs_config_md_documents_every_field_with_its_default() {
    for f in fields() {
        assert!(!f.doc.is_empty(), "{}.{} has no doc comment: docs/config.md needs one", f.strukt, f.key);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = text.split_once(BEGIN).expect("docs/config.md has the BEGIN marker");
    let (_, tail) = rest.split_once(END).expect("docs/config.md has the END marker");
    let want = format!("{head}{BEGIN}\n{}\n{END}{tail}", table());
    if std::env::var_os("ROCEMEND_BLESS_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    assert!(
        text == want,
        "docs/config.md is out of date with ops/src/config/mod.rs; regenerate it with\n  ROCEMEND_BLESS_DOCS=1 cargo test -p rocemend-ops config::docs\n--- expected table ---\n{}",
        table()
    );
}
