//! `loader_new` from a decoded config, counters and host, with its expected code; `loader_free`.

use super::calls;
use super::host::Host;
use super::report::tally;
use super::world::{Target, World};
use super::{R, SLOTS};
use crate::input::Input;
use loader::ffi::*;

impl World {
    /// Creates a loader in an empty slot; frees the loader in an occupied one.
    pub(super) fn op_lifecycle(&mut self, input: &mut Input) {
        let slot = input.below(SLOTS);
        if self.slots[slot].is_some() {
            let (h, t, _) = self.choose(input);
            self.log(format!("free({h:#x}) -> {t:?}"));
            match t {
                Target::Live(i) => {
                    let r = self.slots[i].as_ref().expect("live").free();
                    if r != R::Ok {
                        self.fail(format!("free of live slot {i} returned {r:?}"));
                    }
                }
                _ => {
                    let r = loader_free(h);
                    let want = self.gate(t).expect("not live");
                    self.check("loader_free", &format!("free({h:#x})"), r, &want);
                }
            }
            return;
        }
        self.op_new(slot, input);
    }

    /// `loader_new` in `slot`, with a decoded config (valid or not), counters and host.
    fn op_new(&mut self, slot: usize, input: &mut Input) {
        let mut cfg = loader::ffi::loader_config::from(loader::Config::default());
        if calls::config_default(Some(&mut cfg)) != R::Ok {
            self.fail("loader_config_default failed".into());
        }
        cfg.page_size = match input.byte() % 16 {
            0 => 0,
            1 => LOADER_MAX_PAGE_SIZE,
            2 => LOADER_MAX_PAGE_SIZE + 1,
            3 => u32::MAX,
            b => 1 + u32::from(b % 8),
        };
        cfg.prefetch_distance = match input.byte() % 8 {
            7 => u64::MAX,
            b => u64::from(b),
        };
        cfg.drop_margin = [0, 0, 0, 3, 15, 1, u64::MAX, 0][input.below(8)];
        cfg.backoff_initial_ms = match input.byte() % 8 {
            0 => 0,
            1 => u64::MAX,
            _ => 50,
        };
        cfg.backoff_max_ms = match input.byte() % 8 {
            0 => cfg.backoff_initial_ms.wrapping_sub(1),
            1 => u64::MAX,
            _ => 800,
        };
        cfg.backoff_multiplier =
            [2.0, 1.0, 16.0, 0.5, f64::NAN, f64::INFINITY, 16.5, 1.5][input.below(8)];
        cfg.max_auto_retries = input.below(4) as u32;
        cfg.jitter_seed = u64::from(input.u16());
        // One byte for two knobs: its low bits pick `recheck_full`, its high bits `max_pages`
        // (0 for small bytes, so the committed seeds and regressions keep the bound off).
        let knobs = input.byte();
        cfg.recheck_full = [1, 0, 2, 255][usize::from(knobs % 4)];
        cfg.max_pages = [0, 0, 0, 0, 1, 2, 3, u32::MAX][usize::from(knobs >> 5)];
        let counters = match input.byte() % 16 {
            0..=9 => None,
            10 => Some((0, 0)),
            11 => Some((u64::MAX - u64::from(input.byte() % 4), 1)),
            12 => Some((0, u64::MAX - u64::from(input.byte() % 6))),
            13 => {
                let d = u64::from(input.byte() % 4);
                Some((u64::MAX - d, u64::MAX - d - 1))
            }
            _ => Some((u64::from(input.byte()), 1 + u64::from(input.byte()))),
        };
        let high = counters.is_some_and(|(e, i)| e > u64::MAX - 64 || i > u64::MAX - 64);
        let source_len = u64::from(input.byte());
        self.tags += 1;
        let mut host = Box::new(Host::new(source_len, cfg.page_size, self.tags << 40, high));
        let optional = input.byte();
        host.has_changed = optional & 1 == 0;
        host.has_cancel = optional & 2 == 0;
        host.has_compare = optional & 4 == 0;
        host.has_locate = optional & 8 == 0;
        host.read_timeout_ms = cfg.read_timeout_ms;
        let script = input.below(24);
        host.books
            .borrow_mut()
            .script
            .extend(input.take(script).iter().copied());

        let valid_multiplier =
            cfg.backoff_multiplier.is_finite() && (1.0..=16.0).contains(&cfg.backoff_multiplier);
        let want = if cfg.page_size == 0 || cfg.page_size > LOADER_MAX_PAGE_SIZE {
            R::InvalidPageSize
        } else if cfg.backoff_initial_ms == 0 {
            R::InvalidBackoffInitial
        } else if cfg.backoff_max_ms < cfg.backoff_initial_ms {
            R::InvalidBackoffMax
        } else if !valid_multiplier {
            R::InvalidBackoffMultiplier
        } else {
            R::Ok
        };
        let cbs = host.callbacks();
        let mut out: loader_handle = 0xdead;
        let r = calls::new(Some(&cfg), Some(&cbs), counters, Some(&mut out));
        self.log(format!(
            "new(slot {slot}, page {}, prefetch {}, drop {}, max_pages {}, recheck {}, counters {counters:?}, source {source_len}) -> {r:?} {out:#x}",
            cfg.page_size, cfg.prefetch_distance, cfg.drop_margin, cfg.max_pages, cfg.recheck_full
        ));
        tally("loader_new", r);
        if r != want {
            if r == R::Ok {
                loader_free(out);
            }
            self.fail(format!("loader_new returned {r:?}, wanted {want:?}"));
        }
        if r != R::Ok {
            if out != 0xdead {
                self.fail("loader_new wrote its out-parameter on failure".into());
            }
            return;
        }
        if out == 0 || self.resolve(out) != Target::Unknown {
            self.fail(format!(
                "loader_new returned handle {out:#x}, already in use"
            ));
        }
        host.handle.set(out);
        self.slots[slot] = Some(host);
        self.touched[slot] = true;
        self.recheck[slot] = cfg.recheck_full != 0;
        self.now[slot] = 0;
    }
}
