//! NULL and short out-parameters and arrays, on every function that takes them.

use super::calls;
use super::host::Host;
use super::observe::{blank_page, blank_request};
use super::report::tally;
use super::world::World;
use super::R;
use crate::input::Input;
use loader::ffi::*;

/// The calls `op_pointers` makes, by its case number.
const POINTER_CALLS: [&str; 10] = [
    "loader_state (NULL out)",
    "loader_next_deadline (NULL out_armed)",
    "loader_next_deadline (NULL out_deadline_ms)",
    "loader_requests (NULL out_len)",
    "loader_requests (short array)",
    "loader_requests (NULL array)",
    "loader_view (NULL out_len)",
    "loader_view (NULL array)",
    "loader_config_default (NULL)",
    "loader_config_default",
];

impl World {
    /// NULL and short out-parameters, on every function that takes them.
    pub(super) fn op_pointers(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let gate = self.gate(t);
        let n_req = before.as_ref().map(|(_, o, _)| o.requests.len());
        let n_pages = before.as_ref().map(|(_, o, _)| o.pages.len());
        let which = input.byte() % 10;
        let cap = input.below(6);
        let mut n = usize::MAX;
        let (r, want): (R, Vec<R>) = match which {
            0 => (calls::state(h, None), vec![R::NullPointer]),
            1 => (
                calls::next_deadline(h, None, Some(&mut 0)),
                vec![R::NullPointer],
            ),
            2 => (
                calls::next_deadline(h, Some(&mut false), None),
                vec![R::NullPointer],
            ),
            3 | 4 => {
                let mut arr = vec![blank_request(); cap];
                let r = if which == 3 {
                    calls::requests(h, Some(&mut arr), cap, None)
                } else {
                    calls::requests(h, Some(&mut arr), cap, Some(&mut n))
                };
                let want = match (gate, n_req) {
                    (Some(w), _) => w,
                    (None, _) if which == 3 => vec![R::NullPointer],
                    (None, Some(k)) if k > cap => vec![R::BufferTooSmall],
                    _ => vec![R::Ok],
                };
                if r == R::BufferTooSmall
                    && (Some(n) != n_req || arr.iter().any(|e| e.id != u64::MAX))
                {
                    self.fail(format!(
                        "loader_requests too small: n {n}, wrote into the array"
                    ));
                }
                if r == R::Ok && which == 4 {
                    let o = &before.as_ref().expect("live").1;
                    if Some(n) != n_req
                        || arr[..n].iter().zip(&o.requests).any(|(a, b)| a.id != b.id)
                    {
                        self.fail("loader_requests copied the wrong entries".into());
                    }
                }
                (r, want)
            }
            5 => {
                let r = calls::requests(h, None, cap, Some(&mut n));
                let want = match (gate, n_req) {
                    (Some(w), _) => w,
                    (None, Some(k)) if k > cap => vec![R::BufferTooSmall],
                    (None, Some(k)) if k > 0 => vec![R::NullPointer],
                    _ => vec![R::Ok],
                };
                (r, want)
            }
            6 | 7 => {
                let mut arr = vec![blank_page(); cap];
                let mut reval = !before.as_ref().is_some_and(|(_, o, _)| o.revalidating);
                let r = if which == 6 {
                    calls::view(h, Some(&mut arr), cap, None, Some(&mut reval))
                } else {
                    calls::view(h, None, cap, Some(&mut n), Some(&mut reval))
                };
                let want = match (gate, n_pages) {
                    (Some(w), _) => w,
                    (None, _) if which == 6 => vec![R::NullPointer],
                    (None, Some(k)) if k > cap => vec![R::BufferTooSmall],
                    (None, Some(k)) if k > 0 => vec![R::NullPointer],
                    _ => vec![R::Ok],
                };
                if r == R::Ok
                    && before
                        .as_ref()
                        .is_some_and(|(_, o, _)| o.revalidating != reval)
                {
                    self.fail("loader_view wrote the wrong revalidating flag".into());
                }
                (r, want)
            }
            8 => {
                let r = calls::config_default(None);
                let mut stray = Box::new(Host::new(0, 1, 0, false));
                stray.has_cancel = false;
                let mut cbs = stray.callbacks();
                let mut cfg = loader_config::from(loader::Config::default());
                let mut out: loader_handle = 7;
                let (r2, want2) = match input.byte() % 7 {
                    0 => (
                        calls::new(None, Some(&cbs), None, Some(&mut out)),
                        R::NullPointer,
                    ),
                    1 => (
                        calls::new(Some(&cfg), None, None, Some(&mut out)),
                        R::NullPointer,
                    ),
                    2 => (
                        calls::new(Some(&cfg), Some(&cbs), Some((1, 1)), None),
                        R::NullPointer,
                    ),
                    5 => {
                        cfg.struct_size = 0;
                        (
                            calls::new(Some(&cfg), Some(&cbs), None, Some(&mut out)),
                            R::InvalidStructSize,
                        )
                    }
                    6 => {
                        cbs.struct_size = u32::MAX;
                        (
                            calls::new(Some(&cfg), Some(&cbs), None, Some(&mut out)),
                            R::InvalidStructSize,
                        )
                    }
                    3 => {
                        cbs.issue = None;
                        (
                            calls::new(Some(&cfg), Some(&cbs), None, Some(&mut out)),
                            R::MissingCallback,
                        )
                    }
                    _ => {
                        cbs.release = None;
                        cfg.page_size = 0;
                        (
                            calls::new(Some(&cfg), Some(&cbs), None, Some(&mut out)),
                            R::MissingCallback,
                        )
                    }
                };
                tally("loader_new (bad pointer, struct size or callback)", r2);
                if r2 != want2 || out != 7 {
                    self.fail(format!("loader_new with a bad pointer: {r2:?} (out {out})"));
                }
                (r, vec![R::NullPointer])
            }
            _ => {
                let mut cfg = loader_config::from(loader::Config::default());
                cfg.page_size = 0;
                let r = calls::config_default(Some(&mut cfg));
                if cfg.page_size != 50 || cfg.recheck_full != 1 {
                    self.fail("loader_config_default wrote other defaults".into());
                }
                (r, vec![R::Ok])
            }
        };
        self.log(format!("pointers #{which} on {h:#x} (cap {cap}) -> {r:?}"));
        self.check(
            POINTER_CALLS[which as usize],
            &format!("bad-pointer call #{which}"),
            r,
            &want,
        );
        // Introspection changes nothing, whatever it returns.
        self.unchanged(R::Panic, &before, "introspection");
    }
}
