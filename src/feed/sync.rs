//! The feed's synchronisation and clock, as one facade: the standard library's in every
//! build, shuttle's (with a modelled clock) under the `shuttle` feature, for the exploration
//! in `explore.rs`; and the engine's mutants, which exist only there.
//!
//! In a normal build every item is a re-export of `std` or a `const fn` returning `false`:
//! the facade costs nothing.
//!
//! Under `shuttle`, shuttle's condition variables never time out, and shuttle has no clock,
//! so this file models both, as a discrete-event simulation. Time is virtual, in nanoseconds,
//! and moves only when a timed wait times out: it then becomes that wait's deadline. A timed
//! wait times out only when no notification came since it started, every other thread of the
//! execution is blocked (an untimed wait, a join) or in a timed wait itself, and its deadline
//! is the earliest of those pending (a wait of 1 s never expires before a concurrent one of
//! 50 ms). Until then its thread yields to the scheduler, which runs the others in any order.
//! Code between two waits takes no time: a load is late only by hanging (blocked until the
//! exploration lets it return), never by computing.

#[cfg(not(feature = "shuttle"))]
pub(super) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(feature = "shuttle"))]
pub(super) use std::thread_local;
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::time::Instant;

#[cfg(feature = "shuttle")]
pub(crate) use model::Instant;
#[cfg(feature = "shuttle")]
pub(super) use model::{mutant_on, Condvar, Mutex, MutexGuard};
// The exploration's own handles on the model.
#[cfg(all(test, feature = "shuttle"))]
pub(super) use model::{blocking, set_mutant, thread_ended, thread_started};
#[cfg(feature = "shuttle")]
pub(super) use shuttle::thread_local;

/// A deliberate defect of the engine, switched on by the exploration to show that each of its
/// properties can fail. Each names the property that catches it.
#[allow(dead_code)] // Only the `shuttle` build switches them on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mutant {
    /// No mutant.
    None,
    /// (1) A page whose read was answered elsewhere is not handed back.
    DropLatePage,
    /// (2) `finish` lets idle workers go instead of joining them.
    DetachIdle,
    /// (2) `finish` waits for the loads running, not for the answers being given.
    NoAnsweringWait,
    /// (3) `close` waits for the loads as long as they take, whatever its timeout.
    IgnoreCloseTimeout,
    /// (3) `finish` from a feed thread waits for that thread's own work too.
    WaitForOwnThread,
    /// (4) Retries spent is reported while a retry is armed.
    SpentWhileArmed,
    /// (5) The supervisor does not tick the loader when its deadline is due.
    NoTick,
    /// (5) Hosted mode: a read let go of (at its timeout) still counts against `workers`, so
    /// the read issued in its place waits for the stuck one.
    HeldCountsLetGo,
    /// (5) The reads a host's action issued are kept from the workers: its end does not
    /// announce them.
    AnnounceInAction,
}

/// Whether mutant `m` is switched on: never, in a normal build.
#[cfg(not(feature = "shuttle"))]
#[inline(always)]
pub(super) const fn mutant(_m: Mutant) -> bool {
    false
}

/// Whether mutant `m` is switched on.
#[cfg(feature = "shuttle")]
pub(super) fn mutant(m: Mutant) -> bool {
    mutant_on() == m
}

#[cfg(feature = "shuttle")]
mod model {
    use super::Mutant;
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeSet;
    use std::ops::{Add, Deref, DerefMut, Sub};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{LockResult, PoisonError};
    use std::time::Duration;

    // Shuttle runs every thread of an execution on the test's own OS thread: these are the
    // execution's, reset by `Instant::reset` when it starts.
    std::thread_local! {
        static NOW: Cell<u64> = const { Cell::new(1) };
        static PENDING: RefCell<BTreeSet<(u64, u64)>> = const { RefCell::new(BTreeSet::new()) };
        static NEXT_WAIT: Cell<u64> = const { Cell::new(0) };
        static MUTANT: Cell<Mutant> = const { Cell::new(Mutant::None) };
        static LIVE: Cell<usize> = const { Cell::new(1) };
        static BLOCKED: Cell<usize> = const { Cell::new(0) };
    }

    #[cfg(test)]
    /// A thread of the execution started (shuttle's threads started by the exploration call
    /// this; the execution's first thread is counted from the start).
    pub(crate) fn thread_started() {
        LIVE.with(|c| c.set(c.get() + 1));
    }

    #[cfg(test)]
    /// A thread of the execution ended.
    pub(crate) fn thread_ended() {
        LIVE.with(|c| c.set(c.get() - 1));
    }

    /// Runs `f`, which blocks until another thread acts (a join, an untimed wait): meanwhile
    /// this thread does not hold time back.
    pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
        BLOCKED.with(|c| c.set(c.get() + 1));
        let out = f();
        BLOCKED.with(|c| c.set(c.get() - 1));
        out
    }

    /// Whether a timed wait may expire: every other live thread is blocked or in a timed wait
    /// itself (computation takes no time).
    fn idle() -> bool {
        let pending = PENDING.with(|p| p.borrow().len());
        pending + BLOCKED.with(|c| c.get()) >= LIVE.with(|c| c.get())
    }

    #[cfg(test)]
    /// Switches mutant `m` on (`Mutant::None`: off), for the executions run on this thread.
    pub(crate) fn set_mutant(m: Mutant) {
        MUTANT.with(|c| c.set(m));
    }

    pub(crate) fn mutant_on() -> Mutant {
        MUTANT.with(|c| c.get())
    }

    /// A point in virtual time.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub struct Instant(u64);

    impl Instant {
        pub(crate) fn now() -> Instant {
            Instant(NOW.with(|c| c.get()))
        }
        #[cfg(test)]
        /// Starts an execution's clock: no time passed, no wait pending.
        pub(crate) fn reset() {
            NOW.with(|c| c.set(1));
            PENDING.with(|p| p.borrow_mut().clear());
            LIVE.with(|c| c.set(1));
            BLOCKED.with(|c| c.set(0));
        }
        pub(crate) fn elapsed(&self) -> Duration {
            Instant::now().saturating_duration_since(*self)
        }
        pub(crate) fn saturating_duration_since(&self, earlier: Instant) -> Duration {
            Duration::from_nanos(self.0.saturating_sub(earlier.0))
        }
    }

    impl Add<Duration> for Instant {
        type Output = Instant;
        fn add(self, d: Duration) -> Instant {
            Instant(
                self.0
                    .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            )
        }
    }

    impl Sub for Instant {
        type Output = Duration;
        fn sub(self, earlier: Instant) -> Duration {
            self.saturating_duration_since(earlier)
        }
    }

    /// Shuttle's mutex, with a guard that remembers its mutex (a timed wait lets it go and
    /// takes it again).
    pub(crate) struct Mutex<T>(shuttle::sync::Mutex<T>);

    pub(crate) struct MutexGuard<'a, T> {
        lock: &'a Mutex<T>,
        inner: Option<shuttle::sync::MutexGuard<'a, T>>,
    }

    impl<T> Mutex<T> {
        pub(crate) fn new(t: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(t))
        }
        pub(crate) fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
            let inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            Ok(MutexGuard {
                lock: self,
                inner: Some(inner),
            })
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.inner.as_ref().expect("held")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.inner.as_mut().expect("held")
        }
    }

    /// Whether a timed wait timed out.
    #[derive(Debug)]
    pub(crate) struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        #[allow(dead_code)]
        pub(crate) fn timed_out(&self) -> bool {
            self.0
        }
    }

    /// Shuttle's condition variable for untimed waits; timed waits watch `notified`, a plain
    /// atomic (no scheduling point: a shuttle atomic's load may be followed by a switch, and a
    /// wait would then decide to time out on a stale count).
    pub(crate) struct Condvar {
        cv: shuttle::sync::Condvar,
        notified: AtomicU64,
    }

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar {
                cv: shuttle::sync::Condvar::new(),
                notified: AtomicU64::new(0),
            }
        }

        pub(crate) fn wait<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
        ) -> LockResult<MutexGuard<'a, T>> {
            let MutexGuard { lock, mut inner } = guard;
            let g = inner.take().expect("held");
            let g = blocking(|| self.cv.wait(g)).unwrap_or_else(PoisonError::into_inner);
            Ok(MutexGuard {
                lock,
                inner: Some(g),
            })
        }

        pub(crate) fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            dur: Duration,
        ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
            let lock = guard.lock;
            let seen = self.notified.load(Ordering::SeqCst);
            let deadline = (Instant::now() + dur).0;
            let me = NEXT_WAIT.with(|c| {
                c.set(c.get() + 1);
                c.get()
            });
            PENDING.with(|p| p.borrow_mut().insert((deadline, me)));
            drop(guard);
            let timed_out = loop {
                shuttle::thread::yield_now();
                if self.notified.load(Ordering::SeqCst) != seen {
                    break false;
                }
                if idle() && PENDING.with(|p| p.borrow().first() == Some(&(deadline, me))) {
                    NOW.with(|c| c.set(c.get().max(deadline)));
                    break true;
                }
            };
            PENDING.with(|p| p.borrow_mut().remove(&(deadline, me)));
            let guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
            Ok((guard, WaitTimeoutResult(timed_out)))
        }

        pub(crate) fn notify_one(&self) {
            self.notified.fetch_add(1, Ordering::SeqCst);
            self.cv.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.notified.fetch_add(1, Ordering::SeqCst);
            self.cv.notify_all();
        }
    }
}
