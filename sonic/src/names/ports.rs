//! Port names and aliases, from CONFIG_DB `PORT|<name>` `alias`.

use std::collections::BTreeMap;

use super::error::NameError;
use crate::client::Db;

/// The CONFIG_DB table of ports.
pub const PORT: &str = "PORT";
/// The field holding a port's vendor alias.
pub const ALIAS: &str = "alias";

/// Every port's SONiC name and alias. Names and aliases are opaque text: `Ethernet1/1`,
/// `etp2`, `fortyGigE0/4` are all fine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortNames {
    alias_of: BTreeMap<String, Option<String>>,
    name_of: BTreeMap<String, String>,
}

impl PortNames {
    /// From (name, alias) pairs. Two ports with one alias is an error: an alias read from a
    /// virtual path could then mean either.
    pub fn new(ports: impl IntoIterator<Item = (String, Option<String>)>) -> Result<Self, NameError> {
        let mut names = PortNames::default();
        for (name, alias) in ports {
            let alias = alias.filter(|a| !a.is_empty());
            if let Some(alias) = &alias {
                if let Some(first) = names.name_of.insert(alias.clone(), name.clone()) {
                    if first != name {
                        return Err(NameError::DuplicateAlias { alias: alias.clone(), first, second: name });
                    }
                }
            }
            names.alias_of.insert(name, alias);
        }
        Ok(names)
    }

    /// Reads every `PORT|<name>`'s `alias` from CONFIG_DB (one pipelined round trip after the
    /// scan of the keys).
    pub async fn read(config: &Db) -> Result<Self, NameError> {
        let names = config.keys(PORT).await?;
        if names.is_empty() {
            return Ok(PortNames::default());
        }
        let mut pipe = redis::pipe();
        for name in &names {
            pipe.cmd("HGET").arg(config.key(PORT, name)).arg(ALIAS);
        }
        let mut conn = config.connection();
        let aliases: Vec<Option<String>> = config.run("HGET alias", "PORT|*", pipe.query_async(&mut conn)).await?;
        Self::new(names.into_iter().zip(aliases))
    }

    /// Every port's SONiC name, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.alias_of.keys().map(String::as_str)
    }

    /// Whether `name` is a port's SONiC name.
    pub fn contains(&self, name: &str) -> bool {
        self.alias_of.contains_key(name)
    }

    /// The alias of port `name`, if it has one.
    pub fn alias(&self, name: &str) -> Option<&str> {
        self.alias_of.get(name)?.as_deref()
    }

    /// The SONiC name of the port whose alias is `alias` (strictly by alias: what a virtual
    /// path's key means).
    pub fn name_of_alias(&self, alias: &str) -> Option<&str> {
        self.name_of.get(alias).map(String::as_str)
    }

    /// The SONiC name of the port `given` names, by its name or its alias. Text that is one
    /// port's name and another's alias is refused rather than guessed.
    pub fn resolve<'a>(&'a self, given: &str) -> Result<&'a str, NameError> {
        let by_name = self.alias_of.get_key_value(given).map(|(k, _)| k.as_str());
        let by_alias = self.name_of_alias(given);
        match (by_name, by_alias) {
            (Some(name), None) => Ok(name),
            (None, Some(name)) => Ok(name),
            (Some(a), Some(b)) if a == b => Ok(a),
            (Some(_), Some(other)) => {
                Err(NameError::AmbiguousPort { given: given.to_string(), alias_of: other.to_string() })
            }
            (None, None) => Err(NameError::UnknownPort(given.to_string())),
        }
    }

    /// `Ethernet4 (etp2)`, or the bare name for a port without an alias: for messages.
    pub fn display(&self, name: &str) -> String {
        match self.alias(name) {
            Some(alias) => format!("{name} ({alias})"),
            None => name.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, Option<&str>)]) -> Result<PortNames, NameError> {
        PortNames::new(pairs.iter().map(|(n, a)| (n.to_string(), a.map(str::to_string))))
    }

    #[test]
    fn aliases_with_slashes_map_both_ways() {
        let ports =
            names(&[("Ethernet0", Some("Ethernet1/1")), ("Ethernet4", Some("etp2")), ("Ethernet8", None)]).unwrap();
        assert_eq!(ports.name_of_alias("Ethernet1/1"), Some("Ethernet0"));
        assert_eq!(ports.alias("Ethernet0"), Some("Ethernet1/1"));
        assert_eq!(ports.resolve("Ethernet1/1").unwrap(), "Ethernet0");
        assert_eq!(ports.resolve("etp2").unwrap(), "Ethernet4");
        assert_eq!(ports.resolve("Ethernet8").unwrap(), "Ethernet8");
        assert_eq!(ports.alias("Ethernet8"), None);
        assert_eq!(ports.display("Ethernet4"), "Ethernet4 (etp2)");
        assert_eq!(ports.display("Ethernet8"), "Ethernet8");
        assert!(matches!(ports.resolve("etp9"), Err(NameError::UnknownPort(p)) if p == "etp9"));
    }

    #[test]
    fn a_name_that_is_another_ports_alias_is_refused_not_guessed() {
        // Some platforms alias Ethernet0 as "Ethernet4"; then "Ethernet4" could mean either.
        let ports = names(&[("Ethernet0", Some("Ethernet4")), ("Ethernet4", Some("Ethernet5"))]).unwrap();
        let e = ports.resolve("Ethernet4").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"Ethernet4\" is port Ethernet4's name and port Ethernet0's alias; say which port by its SONiC name"
        );
        // Strictly by alias (a virtual path's key) it is unambiguous.
        assert_eq!(ports.name_of_alias("Ethernet4"), Some("Ethernet0"));
        // A port aliased as itself is not ambiguous.
        let ports = names(&[("Ethernet0", Some("Ethernet0"))]).unwrap();
        assert_eq!(ports.resolve("Ethernet0").unwrap(), "Ethernet0");
    }

    #[test]
    fn two_ports_with_one_alias_is_an_error() {
        let e = names(&[("Ethernet0", Some("etp1")), ("Ethernet4", Some("etp1"))]).unwrap_err();
        assert_eq!(e.to_string(), "ports Ethernet0 and Ethernet4 both have alias \"etp1\"");
    }
}
