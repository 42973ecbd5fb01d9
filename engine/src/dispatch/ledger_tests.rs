//! Intent first, or nothing: what the dispatcher does while its ledger
//! cannot be written (a full disk), and after.

use std::io::ErrorKind;

use super::tests::{dispatcher, knobs, proposal, Setup};
use super::*;
use crate::labels::Labels;
use crate::ledger::{Ledger, Retention};
use crate::store::Store;
use crate::time::SECOND;

fn held_unwritable(d: &Decision) -> bool {
    matches!(&d.verdict, Verdict::Held { reason } if reason == LEDGER_UNWRITABLE)
}

#[tokio::test]
async fn nothing_is_sent_while_the_ledger_is_unwritable_and_held_undos_run_once_it_recovers() {
    let knobs = knobs();
    let store = Store::temporary().unwrap();
    let l = Ledger::open(&store, Retention::default()).unwrap();
    let undo = vec!["node.*".into()];
    let mut d = dispatcher(Setup { undo, ..Setup::default() }, knobs.clone(), Some(l.clone()));
    let first = d.dispatch(proposal("r", "a", 0)).await;
    assert!(matches!(first.verdict, Verdict::Executed { .. }));

    store.inject_write_failure(Some(ErrorKind::StorageFull));
    // An action: held, nothing sent, and its record says why (in memory).
    let held = d.dispatch(proposal("r", "b", SECOND)).await;
    assert!(held_unwritable(&held), "{held:?}");
    assert_eq!(held.phase, Phase::Decided);
    assert!(held.steps.iter().all(|s| !s.what.contains("intent on disk")), "{:?}", held.steps);
    assert_eq!(knobs.executes(), 1);
    assert_eq!(l.get(&held.id).unwrap().unwrap().verdict, held.verdict, "read from memory");
    assert!(!d.ledger_health().unwrap().writable);
    // An undo: held too, and the action stays in effect.
    let a = Labels::from_pairs([("node", "a")]);
    let undos = d.instance_resolved("r", &a, 2 * SECOND).await;
    assert_eq!(undos.len(), 1);
    assert!(held_unwritable(&undos[0]), "{undos:?}");
    assert_eq!(knobs.undos(), 0);
    assert_eq!(d.changed_in_effect().map(|e| e.id.as_str()).collect::<Vec<_>>(), [first.id.as_str()]);
    // Still full: the tick changes nothing.
    assert!(d.keep_ledger(3 * SECOND).await.is_empty());
    assert_eq!(knobs.undos(), 0);

    // Space is back: the tick opens the ledger again and runs the undo.
    store.inject_write_failure(None);
    let ran = d.keep_ledger(4 * SECOND).await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(matches!(&ran[0].verdict, Verdict::Executed { .. }), "{ran:?}");
    assert_eq!(knobs.undos(), 1);
    assert_eq!(d.changed_in_effect().count(), 0);
    assert!(d.ledger_health().unwrap().writable);
    assert_eq!(l.get(&first.id).unwrap().unwrap().undone_by.as_deref(), Some(ran[0].id.as_str()));
    // What was kept in memory is written, and the next tick runs nothing again.
    assert_eq!(l.unsaved(), (0, 0));
    assert!(d.keep_ledger(5 * SECOND).await.is_empty());
    assert_eq!(knobs.undos(), 1);
}

#[tokio::test]
async fn a_dry_run_is_not_listed_in_effect() {
    let knobs = knobs();
    let mut d =
        dispatcher(Setup { mode: Mode::DryRun, ..Setup::default() }, knobs.clone(), Some(super::tests::ledger()));
    let planned = d.dispatch(proposal("r", "a", 0)).await;
    assert!(matches!(planned.verdict, Verdict::DryRun { .. }), "{planned:?}");
    // The policy counts it (a second proposal is a duplicate)…
    assert!(matches!(d.dispatch(proposal("r", "a", SECOND)).await.verdict, Verdict::Duplicate { .. }));
    assert_eq!(d.policy().in_effect().count(), 1);
    // …but nothing changed, so nothing is in effect.
    assert_eq!(d.changed_in_effect().count(), 0);
    assert_eq!(knobs.executes(), 0);
}
