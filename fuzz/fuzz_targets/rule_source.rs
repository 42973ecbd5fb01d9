//! The rule loader on arbitrary UTF-8 source: compiling (parse, evaluating
//! the declaration, the trial run of `fire`/`clear`) never panics and ends
//! within the sandbox's operation limit; every error names the file and a
//! line of it (or none), and a rule that loads has a name and the source's
//! hash.

#![no_main]

use std::sync::OnceLock;

use engine::rule::{self, Helpers, RuleScripts};
use libfuzzer_sys::fuzz_target;

/// One sandboxed engine for every input, as the daemon keeps one for every
/// rule file: building it registers a few hundred functions, which would
/// otherwise be most of each execution.
fn scripts() -> &'static RuleScripts {
    static SCRIPTS: OnceLock<RuleScripts> = OnceLock::new();
    SCRIPTS.get_or_init(|| RuleScripts::new(Helpers::new(None, None)))
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    // A rule file is read whole only up to this size (`read_rule_file`).
    if source.len() as u64 > rule::MAX_RULE_FILE {
        return;
    }
    let lines = source.lines().count().max(1);
    match rule::compile(scripts(), "fuzz.rhai", source) {
        Ok(rule) => {
            assert!(!rule.name.is_empty(), "a rule without a name loaded");
            assert_eq!(rule.path, "fuzz.rhai");
            assert_eq!(rule.hash.len(), 64, "hash {:?}", rule.hash);
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "an error without a message");
            for e in &errors {
                assert_eq!(e.path, "fuzz.rhai");
                assert!(e.line <= lines + 1, "{e} is past the last line {lines}");
                assert!(!e.message.is_empty(), "{e:?}");
            }
        }
    }
});
