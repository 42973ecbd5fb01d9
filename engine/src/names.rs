//! Suggestions for mistyped names: an unknown rule, action kind or
//! rule-mode name is refused with the known name it was most likely meant
//! to be, so `switch-pfc-strom` says "did you mean switch-pfc-storm?".

/// The candidate closest to `word`, if one is close enough to be a typo
/// of it (at most a third of its letters edited, and at least one).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let most = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|&(distance, _)| distance <= most)
        .min_by_key(|&(distance, c)| (distance, c))
        .map(|(_, c)| c)
}

/// `"; did you mean NAME?"` for the closest candidate, or nothing.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates).map(|c| format!("; did you mean {c:?}?")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_name_and_a_different_word_finds_nothing() {
        let rules = ["switch-pfc-storm", "pfc-storm", "link-flap"];
        assert_eq!(closest("switch-pfc-strom", rules), Some("switch-pfc-storm"));
        assert_eq!(closest("link-flaps", rules), Some("link-flap"));
        assert_eq!(closest("gpu-xid", rules), None);
        assert_eq!(did_you_mean("lnk.*", ["link.*", "pfcwd.*"]), "; did you mean \"link.*\"?");
        assert_eq!(did_you_mean("zzz", ["link.*"]), "");
    }
}
