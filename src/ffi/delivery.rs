//! The callback queue: how one call's effects reach the host, on the calling thread, outside
//! every lock and outside the panic boundary.
//!
//! Callbacks triggered by a call made from inside a callback (a synchronous host that settles
//! inside `issue`, say) are queued on the thread and run, in order, after the running callback
//! returns and before the outermost call returns. That keeps the stack flat however long a
//! chain of synchronous answers is, and never deadlocks: no lock is held while a callback runs.
//!
//! # Threads that end inside a callback
//!
//! A callback may end its thread (`pthread_exit`, or a Python interpreter shutting down under a
//! daemon thread) or throw (a C++ exception). Either unwinds through this module's frames, and
//! no `catch_unwind` may be on the stack when it does: it would catch the forced unwind and
//! abort the process ("FATAL: exception not rethrown"). So every step in Rust runs inside
//! [`boundary`], and each callback runs between two such steps, outside it. The callback types
//! and the exports that deliver are `extern "C-unwind"`, so such an unwind may pass through.
//!
//! When a delivery loop unwinds, its guard resets the thread's state and hands the effects
//! still queued back to their loaders ([`Instance::strand`]); the next call into each loader,
//! from any thread, delivers them first. No lock is held while a callback runs, so none is left
//! locked.
//!
//! # An `issue` that does not return
//!
//! A read whose `issue` callback unwound (threw, panicked, ended its thread) may never have
//! reached the host, and nothing would ever answer it: it would stay outstanding, and the
//! loader would never be quiescent again. So the unwind lets it go on its way out, as
//! `loader_abandon` would ([`LetGoOnUnwind`]): a read still needed becomes an own failure,
//! which the usual retry rules recover; a late answer is stale. The effects of letting it go
//! join the thread's queue, and are stranded with the rest.

use super::instance::{lookup, Instance};
use super::panic::boundary;
use super::pointer::token;
use super::result::loader_result;
use super::types::{loader_callbacks, loader_read};
use crate::loader::{Effect, Loader, LoaderError};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;

thread_local! {
    /// Effects waiting to be delivered on this thread, and whether a delivery loop runs.
    static QUEUE: RefCell<VecDeque<(Arc<Instance>, Effect)>> = const { RefCell::new(VecDeque::new()) };
    static DELIVERING: Cell<bool> = const { Cell::new(false) };
    /// A call's effects on their way from the loader to the queue; kept for its capacity.
    static SPARE: RefCell<Vec<Effect>> = const { RefCell::new(Vec::new()) };
}

/// Runs one loader event for `handle`: the loader call inside the panic boundary, then the
/// callbacks it produced (after any stranded earlier) outside it.
pub(crate) fn event<T>(
    handle: u64,
    f: impl FnOnce(&mut Loader) -> Result<T, LoaderError>,
) -> Result<T, loader_result> {
    event_with(handle, |loader, _| f(loader))
}

/// As [`event`], with the call's effect list open to `f`, for a call that adds effects of its
/// own besides the loader's.
pub(crate) fn event_with<T>(
    handle: u64,
    f: impl FnOnce(&mut Loader, &mut Vec<Effect>) -> Result<T, LoaderError>,
) -> Result<T, loader_result> {
    event_hosted(handle, |loader, effects, _| f(loader, effects))
}

/// As [`event_with`], with the loader's callbacks open to `f` too (for one that may ask the
/// host's `compare`).
pub(crate) fn event_hosted<T>(
    handle: u64,
    f: impl FnOnce(&mut Loader, &mut Vec<Effect>, &loader_callbacks) -> Result<T, LoaderError>,
) -> Result<T, loader_result> {
    let step = boundary(Err(loader_result::Panic), || {
        let inst = lookup(handle)?;
        let mut effects = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let cb = inst.callbacks();
        let r = inst.call(&mut effects, |l, e| f(l, e, cb));
        // A loader that panicked (now or before) delivers nothing; `loader_free` still
        // releases what it holds.
        let owner = match r {
            Err(loader_result::Panic | loader_result::Poisoned) => false,
            _ => enqueue(&inst, &mut effects),
        };
        effects.clear();
        SPARE.with(|s| *s.borrow_mut() = effects);
        Ok((r, owner))
    });
    let (r, owner) = step?;
    if owner {
        drain();
    }
    r
}

/// Delivers `effects` for `inst` on this thread, as an event's callbacks are delivered: at
/// once, or, from inside a callback, after those already queued. For a call that produced
/// effects without an event (a view released).
pub(crate) fn deliver(inst: &Arc<Instance>, mut effects: Vec<Effect>) -> Result<(), loader_result> {
    let owner = boundary(Err(loader_result::Panic), || {
        Ok(enqueue(inst, &mut effects))
    })?;
    if owner {
        drain();
    }
    Ok(())
}

/// Queues the effects stranded on `inst`, then `effects`; true if this frame must run the
/// delivery loop (no loop runs on this thread yet).
fn enqueue(inst: &Arc<Instance>, effects: &mut Vec<Effect>) -> bool {
    let stranded = inst.take_stranded();
    if effects.is_empty() && stranded.is_empty() && QUEUE.with(|q| q.borrow().is_empty()) {
        return false;
    }
    QUEUE.with(|q| {
        q.borrow_mut().extend(
            stranded
                .into_iter()
                .chain(effects.drain(..))
                .map(|e| (Arc::clone(inst), e)),
        )
    });
    !DELIVERING.with(|d| d.replace(true))
}

/// Delivers every queued effect in order, including those queued by calls made from the
/// callbacks. Only the two `boundary` steps run Rust code that could panic; the callback runs
/// between them, with nothing to catch its thread's end.
fn drain() {
    let _loop = Delivering;
    while let Some((inst, effect)) = boundary(None, || QUEUE.with(|q| q.borrow_mut().pop_front())) {
        run(&inst, effect);
        // The last reference to a freed loader may be this one: its destructor is Rust code.
        boundary((), move || drop(inst));
    }
}

/// Owns the thread's delivery loop. Dropped normally, the queue is empty; dropped by an unwind
/// out of a callback, it hands what is still queued back to each loader.
struct Delivering;

impl Drop for Delivering {
    fn drop(&mut self) {
        DELIVERING.with(|d| d.set(false));
        let rest: Vec<_> = QUEUE.with(|q| q.borrow_mut().drain(..).collect());
        for (inst, effect) in rest {
            inst.strand([effect]);
        }
    }
}

/// Takes every effect queued on this thread, or stranded, for `inst`, oldest first; effects
/// for other loaders stay queued. For `loader_free`, which delivers them itself.
pub(crate) fn withdraw(inst: &Arc<Instance>) -> Vec<Effect> {
    let mut mine = inst.take_stranded();
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let (own, others): (VecDeque<_>, VecDeque<_>) =
            q.drain(..).partition(|(i, _)| Arc::ptr_eq(i, inst));
        *q = others;
        mine.extend(own.into_iter().map(|(_, e)| e));
    });
    mine
}

/// Lets go of read `read_id` when dropped, unless forgotten: armed around an `issue` callback,
/// it runs only when the callback unwinds (a C++ exception, a Rust panic, a thread that ends).
/// Not a `catch_unwind`: the unwind is not stopped, and a thread's forced unwind may pass.
struct LetGoOnUnwind<'a> {
    inst: &'a Arc<Instance>,
    read_id: u64,
}

impl Drop for LetGoOnUnwind<'_> {
    fn drop(&mut self) {
        let (inst, read_id) = (self.inst, self.read_id);
        boundary((), || {
            if inst.is_freed() {
                return; // freed from inside the callback: closing let every read go
            }
            let mut effects = Vec::new();
            // Already answered (the callback settled it, then threw): an error, and nothing
            // changes. A loader that panics now is poisoned, and delivers nothing.
            let r = inst.call(&mut effects, |l, _| l.abandon(read_id));
            if matches!(r, Err(loader_result::Panic | loader_result::Poisoned)) {
                return;
            }
            // Behind what is queued: the delivery loop's guard strands them all, in order.
            QUEUE.with(|q| {
                q.borrow_mut()
                    .extend(effects.into_iter().map(|e| (Arc::clone(inst), e)))
            });
        });
    }
}

/// Runs the host's callback for one effect. No Rust code here can panic: it copies fields and
/// calls the host. `issue` and `changed` are skipped once the loader is freed. A read whose
/// `issue` unwinds is let go of ([`LetGoOnUnwind`]).
pub(crate) fn run(inst: &Arc<Instance>, effect: Effect) {
    let cb = inst.callbacks();
    let freed = inst.is_freed();
    match effect {
        Effect::Issue(read) if !freed => {
            let r = loader_read {
                read_id: read.read_id,
                request_id: read.request_id,
                kind: read.kind.into(),
                epoch: read.epoch,
                step: read.step,
                cursor: if read.cursor.is_empty() {
                    std::ptr::null()
                } else {
                    read.cursor.as_ptr()
                },
                cursor_len: read.cursor.len(),
                limit: read.limit,
                direction: read.direction.into(),
                until: read.until.as_ref().map_or(std::ptr::null(), |u| u.as_ptr()),
                until_len: read.until.as_ref().map_or(0, |u| u.len()),
            };
            if let Some(issue) = cb.issue {
                let armed = LetGoOnUnwind {
                    inst,
                    read_id: read.read_id,
                };
                // SAFETY: `issue` is the host's function for this signature; `r` and the
                // cursor and `until` bytes it points to live until the call returns.
                unsafe { issue(cb.userdata, &r) };
                std::mem::forget(armed);
            }
        }
        Effect::Release { acquisition } => {
            if let Some(release) = cb.release {
                // SAFETY: the host's function; the token is the one it gave us, unchanged.
                unsafe { release(cb.userdata, token(acquisition)) };
            }
        }
        Effect::Cancel { read_id } => {
            if let Some(cancel) = cb.cancel {
                // SAFETY: the host's function for this signature.
                unsafe { cancel(cb.userdata, read_id) };
            }
        }
        Effect::Changed if !freed => {
            if let Some(changed) = cb.changed {
                // SAFETY: the host's function for this signature.
                unsafe { changed(cb.userdata) };
            }
        }
        Effect::Issue(_) | Effect::Changed => {}
    }
}
