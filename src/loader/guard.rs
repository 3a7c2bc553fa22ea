//! The test build's guard of the answer path's shortcut: a chain's or full read's step that
//! reads on skips the pump (`Step::ReadOn`), and with the guard on, each such call checks that
//! the pump, run on a copy of the loader, would have changed nothing. The copy allocates, so
//! the guard is off unless asked for (an allocation count must not see it): the loader
//! checker (`loader-check --loader`) turns it on for its whole exploration, and the library's
//! unit tests run with it on. Built with the `testing` feature only; without it the guard is
//! the constant `false`.

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
