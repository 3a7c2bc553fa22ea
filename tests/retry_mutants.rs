//! The loader checker's `progress` with the hosts of issue 35's regressions fails with either
//! fix undone (`loader::mutant`): the automatic retry count started again by any success (a
//! source that repeats a cursor past a page that succeeds is read for ever), and a page read
//! again that fails again retried as that page (a cursor gone for good is read for ever). The
//! loader as it is passes the same walks. One test, since the active mutant is the whole
//! process's.
#![cfg(feature = "testing")]

use loader::check::{self, fault_grid, Event, HostFault, Property};
use loader::loader::mutant::{self, Mutant};

#[test]
fn progress_fails_with_either_retry_fix_undone() {
    let grid = fault_grid(false);
    let with = |f: HostFault| {
        *grid
            .iter()
            .find(|s| s.fault == Some(f) && s.config.max_auto_retries == 5)
            .expect("a configuration with the default retries")
    };
    let repeats = with(HostFault::RepeatsWithItems);
    let gone = with(HostFault::CursorGone);
    // After the first page: the next read's cursor lies past a page that succeeds.
    let cases = [
        (
            Mutant::RetryResetBySuccess,
            repeats,
            vec![Event::Answer { read: 1 }],
        ),
        (
            Mutant::PageRetriedForEver,
            gone,
            vec![Event::Answer { read: 1 }],
        ),
    ];
    for (m, s, trace) in &cases {
        mutant::set(Some(*m));
        let r = check::replay(s, trace);
        mutant::set(None);
        match r {
            Err((p, message)) => {
                assert_eq!(p, Property::Progress, "{}: {message}", m.name());
                assert!(
                    message.contains(&format!("after {} answers", s.fault_bound())),
                    "{}: {message}",
                    m.name()
                );
            }
            Ok(()) => panic!("{}: progress held", m.name()),
        }
        check::replay(s, trace).unwrap_or_else(|(p, m2)| {
            panic!("{} undone, without it: {}: {m2}", m.name(), p.name())
        });
    }
}
