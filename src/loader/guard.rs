//! The test build's guard of the answer path's shortcut: a chain's or full read's step that
//! reads on skips the pump (`Step::ReadOn`), and with the guard on, each such call checks that
//! the pump, run on a copy of the loader, would have changed nothing. The copy allocates, so
//! the guard is off unless asked for (an allocation count must not see it): the loader
//! checker (`loader-check --loader`) turns it on for its whole exploration, and the library's
//! unit tests run with it on. Built with the `testing` feature only; without it the guard is
//! the constant `false`.
//!
//! The pump is a function of the loader's canonical state (`check::canon`: what every rule
//! reads) and its config, so the guard remembers, per thread, the canonical states (under
//! one config) it has found the pump idle in, and checks each such state once (`Seen`), as
//! the loader checker judges each canonical state's properties once.

#[cfg(feature = "testing")]
static ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(cfg!(test));

/// Turns the guard on or off for every loader in the process.
#[cfg(feature = "testing")]
pub fn set(on: bool) {
    ON.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the guard is on.
#[inline(always)]
pub(crate) fn on() -> bool {
    #[cfg(feature = "testing")]
    {
        ON.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "testing"))]
    {
        cfg!(test)
    }
}

/// The canonical states (keys of `check::canon`, [`crate::check::canon::Form::Fields`]) in
/// which the pump was found idle, under `config`; and the encoder's buffers, reused.
#[cfg(any(test, feature = "testing"))]
pub(crate) struct Seen {
    config: Option<super::Config>,
    idle: rustc_hash::FxHashSet<u128>,
    /// The encoder, kept for its buffers.
    pub(crate) enc: crate::check::canon::Enc,
}

/// At most this many states are remembered; past it the memory starts again (a deep run
/// keeps its bytes for the search).
#[cfg(any(test, feature = "testing"))]
const REMEMBERED: usize = 1 << 20;

#[cfg(any(test, feature = "testing"))]
impl Seen {
    /// Whether the pump was found idle in state `key` under `config`.
    pub(crate) fn idle(&mut self, config: &super::Config, key: u128) -> bool {
        if self.config.as_ref() != Some(config) {
            self.config = Some(*config);
            self.idle.clear();
            return false;
        }
        self.idle.contains(&key)
    }

    /// The pump was found idle in state `key` (under the config last asked about).
    pub(crate) fn found_idle(&mut self, key: u128) {
        if self.idle.len() >= REMEMBERED {
            self.idle.clear();
        }
        self.idle.insert(key);
    }
}

#[cfg(any(test, feature = "testing"))]
thread_local! {
    /// This thread's [`Seen`].
    pub(crate) static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen {
        config: None,
        idle: Default::default(),
        enc: crate::check::canon::Enc::new(0, crate::check::canon::Form::Fields),
    });
}
