//! Which aggregator the hash gives a switch to: rendezvous
//! (highest-random-weight) hashing over the live members, with a weight
//! fixed across builds so that every aggregator computes the same.

use std::hash::Hasher;

use fnv::FnvHasher;

/// The rendezvous weight of `member` for `switch`: FNV-1a (64 bits) of the
/// switch, a zero byte and the member, through the splitmix64 finaliser.
/// Fixed, so every aggregator computes the same.
pub fn weight(switch: &str, member: &str) -> u64 {
    let mut fnv = FnvHasher::default();
    fnv.write(switch.as_bytes());
    fnv.write(&[0]);
    fnv.write(member.as_bytes());
    let mut h = fnv.finish();
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The member the hash gives `switch` to: the highest [`weight`] (ties, if
/// ever, to the greater identity). `None` without members.
pub fn owner_of<'a>(switch: &str, members: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    members.into_iter().max_by(|a, b| (weight(switch, a), *a).cmp(&(weight(switch, b), *b)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn switches(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("leaf-{i:02}")).collect()
    }

    fn share(switches: &[String], members: &[&str]) -> BTreeMap<String, String> {
        switches.iter().map(|s| (s.clone(), owner_of(s, members.iter().copied()).unwrap().to_string())).collect()
    }

    #[test]
    fn the_weight_is_fixed_across_builds() {
        // Every aggregator must compute the same: these values are part of
        // the protocol between versions (the values were computed apart,
        // from the FNV-1a and splitmix64 definitions).
        assert_eq!(weight("", ""), 0x25fc_6dd3_6ce0_4b20);
        assert_eq!(weight("leaf-00", "agg-a"), 0x3c87_a032_dec3_4ccd);
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(weight("ab", "c"), weight("a", "bc"));
    }

    #[test]
    fn three_members_get_about_a_third_each() {
        let all = switches(48);
        let share = share(&all, &["agg-a", "agg-b", "agg-c"]);
        for m in ["agg-a", "agg-b", "agg-c"] {
            let n = share.values().filter(|o| *o == m).count();
            assert!((8..=24).contains(&n), "{m} gets {n} of 48");
        }
    }

    #[test]
    fn a_join_or_a_leave_moves_only_what_must_move() {
        let all = switches(200);
        let before = share(&all, &["agg-a", "agg-b", "agg-c"]);
        let joined = share(&all, &["agg-a", "agg-b", "agg-c", "agg-d"]);
        let mut moved = 0;
        for s in &all {
            if before[s] != joined[s] {
                assert_eq!(joined[s], "agg-d", "{s} moved from {} to {}", before[s], joined[s]);
                moved += 1;
            }
        }
        assert!((30..=70).contains(&moved), "{moved} of 200 moved to the fourth member");
        let left = share(&all, &["agg-a", "agg-c"]);
        for s in &all {
            if before[s] != "agg-b" {
                assert_eq!(before[s], left[s], "{s} moved although its owner stayed");
            }
        }
        assert_eq!(owner_of("leaf-00", std::iter::empty()), None);
    }

    #[test]
    fn the_owner_does_not_depend_on_the_order_of_the_members() {
        for s in switches(20) {
            assert_eq!(owner_of(&s, ["x", "y", "z"]), owner_of(&s, ["z", "x", "y"]));
        }
    }
}
