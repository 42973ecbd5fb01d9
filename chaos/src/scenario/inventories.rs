//! The inventories the library's scenarios name, built in: a library scenario run where its
//! inventory file is not (`rocemend demo`, a scenario copied out of the repository) finds it
//! here, by the path it names.

/// `(path from the scenarios' folder, text)`.
pub const BUILT_IN: &[(&str, &str)] =
    &[("inventories/two_units.toml", include_str!("../../scenarios/inventories/two_units.toml"))];

/// The built-in inventory a scenario names `path`.
pub fn built_in(path: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(p, _)| *p == path).map(|(_, text)| *text)
}
