//! The loaders a host holds: the process-wide handle registry, and what each handle names (a
//! loader under its lock, the host's callbacks, the poisoned and freed flags, the pins of the
//! host's views, and the callbacks stranded by a thread that ended mid-delivery).
//!
//! Nothing here runs a callback: [`crate::ffi::delivery`] does, outside every lock.

use super::handle::HandleTable;
use super::pins::Pins;
use super::result::loader_result;
use super::types::loader_callbacks;
use crate::loader::{Effect, Loader, LoaderError};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// An opaque handle to a loader. 0 is never a valid handle.
#[allow(non_camel_case_types)]
pub type loader_handle = u64;

/// The host's callbacks, shared by every thread that calls into one loader.
struct Host(loader_callbacks);

// SAFETY: the contract in `loader_callbacks` makes the host responsible for `userdata` being
// usable from every thread that calls into the loader; the function pointers are plain code.
unsafe impl Send for Host {}
// SAFETY: as above; the library never dereferences `userdata`, it only passes it back.
unsafe impl Sync for Host {}

/// One loader, as a handle names it.
pub(crate) struct Instance {
    loader: Mutex<Loader>,
    host: Host,
    poisoned: AtomicBool,
    freed: AtomicBool,
    /// The acquisitions pinned views list, and the releases held back for them. Locked inside
    /// `loader` (or alone): the loader's lock, then this one.
    pins: Mutex<Pins>,
    /// Effects a thread had queued for this loader when a callback ended that thread (or
    /// threw through it): delivered by the next call into this loader, from any thread.
    stranded: Mutex<Vec<Effect>>,
    /// `stranded` is not empty; read without the lock on every call.
    has_stranded: AtomicBool,
    /// What the callbacks' `userdata` points into, when the library made them (a feed's
    /// loader): kept as long as any callback can still run, pinned views included.
    keep: OnceLock<Arc<dyn Send + Sync>>,
}

static REGISTRY: Lazy<HandleTable<Instance>> = Lazy::new(HandleTable::new);

/// The loader `handle` names.
pub(crate) fn lookup(handle: loader_handle) -> Result<Arc<Instance>, loader_result> {
    REGISTRY.get(handle).map_err(loader_result::from)
}

/// Registers a new loader with the host's callbacks and returns its handle.
pub(crate) fn register(
    loader: Loader,
    callbacks: loader_callbacks,
) -> Result<loader_handle, loader_result> {
    let inst = Arc::new(Instance {
        loader: Mutex::new(loader),
        host: Host(callbacks),
        poisoned: AtomicBool::new(false),
        freed: AtomicBool::new(false),
        pins: Mutex::new(Pins::default()),
        stranded: Mutex::new(Vec::new()),
        has_stranded: AtomicBool::new(false),
        keep: OnceLock::new(),
    });
    REGISTRY.insert(inst).map_err(loader_result::from)
}

/// Removes `handle` from the registry and marks its loader freed: no `issue` or `changed`
/// callback runs for it from now on. Threads already inside a call keep their reference.
pub(crate) fn unregister(handle: loader_handle) -> Result<Arc<Instance>, loader_result> {
    let inst = REGISTRY.remove(handle).map_err(loader_result::from)?;
    inst.freed.store(true, Ordering::Release);
    Ok(inst)
}

impl Instance {
    /// Runs `f` on the loader under its lock, and appends the effects the call produced to
    /// `effects` (after any `f` added itself), less the releases a pinned view holds back. A
    /// panic in `f` poisons the loader; the caller must then drop `effects` undelivered.
    pub(crate) fn call<T>(
        &self,
        effects: &mut Vec<Effect>,
        f: impl FnOnce(&mut Loader, &mut Vec<Effect>) -> Result<T, LoaderError>,
    ) -> Result<T, loader_result> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(loader_result::Poisoned);
        }
        let mut loader = self.loader.lock();
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut loader, effects))) {
            Ok(r) => {
                loader.drain_effects_into(effects);
                // Still under the loader's lock: no view can pin or list these meanwhile.
                self.pins.lock().hold_back(effects);
                r.map_err(loader_result::from)
            }
            Err(_) => {
                self.poisoned.store(true, Ordering::Release);
                Err(loader_result::Panic)
            }
        }
    }

    /// Reads the loader under its lock; produces no effects.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Loader) -> T) -> Result<T, loader_result> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(loader_result::Poisoned);
        }
        Ok(f(&self.loader.lock()))
    }

    /// Why the loader waits (`Loader::explain`, at `now` when given: `Loader::explain_at`),
    /// and what pinned views hold back, read under the loader's lock (then the pins').
    pub(crate) fn explain(&self, now: Option<u64>) -> Result<String, loader_result> {
        self.read(|l| {
            let mut text = match now {
                Some(now) => l.explain_at(now),
                None => l.explain(),
            };
            let (pinned, deferred) = self.pins.lock().held();
            if pinned > 0 {
                text.push_str(&format!(
                    "\npinned views list {pinned} acquisitions; {deferred} of their releases wait for loader_view_release"
                ));
            }
            text
        })
    }

    /// Reads the loader under its lock with `f`, which returns what it read and the tokens of
    /// the acquisitions it listed; those are pinned before the lock is let go.
    pub(crate) fn pin<T>(
        &self,
        f: impl FnOnce(&Loader) -> (T, Vec<u64>),
    ) -> Result<(T, Vec<u64>), loader_result> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(loader_result::Poisoned);
        }
        let loader = self.loader.lock();
        let (value, tokens) = f(&loader);
        self.pins.lock().pin(tokens.iter().copied());
        Ok((value, tokens))
    }

    /// Unpins `tokens` once each (a view is released) and returns the releases now due. Takes
    /// only the pins' lock: it works on a poisoned or freed loader too.
    pub(crate) fn unpin(&self, tokens: &[u64]) -> Vec<Effect> {
        self.pins.lock().unpin(tokens.iter().copied())
    }

    /// Closes the loader and returns what closing it produced: a `release` for every
    /// acquisition it held (less those a pinned view holds back: they follow when their last
    /// view is released) and a `cancel` for every read outstanding. A poisoned loader is
    /// closed too; if closing panics, what it would have produced is lost.
    pub(crate) fn close(&self) -> Vec<Effect> {
        let mut loader = self.loader.lock();
        let mut effects = std::panic::catch_unwind(AssertUnwindSafe(|| {
            loader.close();
            let effects = loader.take_effects();
            loader.flush_recording();
            effects
        }))
        .unwrap_or_default();
        self.pins.lock().hold_back(&mut effects);
        effects
    }

    /// Starts recording this loader's run to `sink` (see `Loader::record_to`); produces no
    /// effects: the creation's stay queued for the first event call.
    pub(crate) fn record_to(&self, sink: crate::loader::Sink) -> Result<(), loader_result> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(loader_result::Poisoned);
        }
        self.loader
            .lock()
            .record_to(sink)
            .map_err(loader_result::from)
    }

    /// Keeps `owner` alive as long as this loader (what its callbacks' `userdata` points
    /// into). Set once; a second call is ignored.
    pub(crate) fn keep_alive(&self, owner: Arc<dyn Send + Sync>) {
        let _ = self.keep.set(owner);
    }

    /// The host's callbacks.
    pub(crate) fn callbacks(&self) -> &loader_callbacks {
        &self.host.0
    }

    /// `loader_free` has begun for this loader.
    pub(crate) fn is_freed(&self) -> bool {
        self.freed.load(Ordering::Acquire)
    }

    /// Keeps `effects`, in order, for the next call into this loader.
    pub(crate) fn strand(&self, effects: impl IntoIterator<Item = Effect>) {
        let mut stranded = self.stranded.lock();
        stranded.extend(effects);
        self.has_stranded
            .store(!stranded.is_empty(), Ordering::Release);
    }

    /// Takes the stranded effects, oldest first; usually none, found without a lock.
    pub(crate) fn take_stranded(&self) -> Vec<Effect> {
        if !self.has_stranded.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut stranded = self.stranded.lock();
        self.has_stranded.store(false, Ordering::Release);
        std::mem::take(&mut *stranded)
    }
}
