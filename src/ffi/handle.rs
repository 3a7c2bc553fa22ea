//! Generation-checked handle table: the only way a host names an object across the C ABI.
//!
//! A host holds a non-zero `u64` instead of a pointer, so a NULL, freed, double-freed or forged
//! handle is a lookup that fails with a [`HandleError`], never undefined behaviour. This module
//! owns the mapping from handle to `Arc<T>` and nothing else: it knows no loader and no C types.
//!
//! # Handle layout
//!
//! ```text
//!  63                32 31                 0
//! +--------------------+--------------------+
//! |     generation     |     index + 1      |
//! +--------------------+--------------------+
//! ```
//!
//! - The low half is never 0, so the whole handle is never 0 and 0 can only mean NULL.
//! - Generations start at 1, so no handle fits in 32 bits: a host that truncates a handle to a C
//!   `int` (Python ctypes' default return type) gets `Invalid`, not somebody else's object.
//! - A slot remembers the last generation it issued. A handle whose generation is below that was
//!   freed (`Stale`); one above it, or 0, was never issued (`Invalid`). Equal means live, unless
//!   the slot has been freed since (`Stale`).
//!
//! # Reuse and wrap
//!
//! A freed slot is reused with its generation plus one, and free slots are reused oldest first,
//! so reuses spread over every free slot instead of wearing out one. A slot whose generation has
//! reached `u32::MAX` is retired when freed: it is never reused, because the next generation would
//! wrap and make a handle issued about 4 billion reuses ago valid again. That costs one vacant
//! 16-byte entry per 4 billion reuses of a slot, which no realistic workload notices.

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::VecDeque;
use std::sync::Arc;

/// Why a handle did not resolve, or why no handle could be issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HandleError {
    /// The handle is 0, the C side's NULL.
    #[error("handle is null")]
    Null,
    /// The handle was issued by this table and has since been freed (including a double free).
    #[error("handle was freed")]
    Stale,
    /// The handle was never issued by this table: forged, corrupted, truncated or out of range.
    #[error("handle is not valid")]
    Invalid,
    /// Every index is live or retired; no further handle can be issued.
    #[error("handle table is full")]
    Full,
}

/// A thread-safe map from opaque `u64` handles to shared objects.
///
/// `get` takes a shared lock and clones an `Arc`: O(1) and allocation-free. The table never runs
/// `T`'s code under its lock: `remove` hands the `Arc` back, so `T`'s destructor runs in the
/// caller, where it may call back into the same table.
pub(crate) struct HandleTable<T> {
    inner: RwLock<Slots<T>>,
}

struct Slots<T> {
    slots: Vec<Slot<T>>,
    /// Indices of vacant, non-retired slots, oldest first.
    free: VecDeque<u32>,
}

struct Slot<T> {
    /// The last generation issued from this slot; every slot in the table has issued one.
    generation: u32,
    value: Option<Arc<T>>,
}

/// The number of indices a handle's low half can name (`index + 1` must fit in a `u32`).
const MAX_SLOTS: usize = u32::MAX as usize;

impl<T> HandleTable<T> {
    /// An empty table. `const` so a process-wide table can be a plain `static`.
    pub(crate) const fn new() -> Self {
        HandleTable {
            inner: RwLock::new(Slots {
                slots: Vec::new(),
                free: VecDeque::new(),
            }),
        }
    }

    /// Stores `value` and returns a fresh handle for it.
    ///
    /// On `Err(Full)` the table has dropped `value`, after releasing its lock.
    pub(crate) fn insert(&self, value: Arc<T>) -> Result<u64, HandleError> {
        self.insert_below(value, MAX_SLOTS)
    }

    /// `insert` with a smaller index space, so a test can reach `Full`.
    fn insert_below(&self, value: Arc<T>, max_slots: usize) -> Result<u64, HandleError> {
        let mut inner = self.write();
        let index = match inner.free.pop_front() {
            Some(index) => {
                let slot = &mut inner.slots[index as usize];
                // Retired slots never enter `free`, so this cannot wrap.
                slot.generation += 1;
                slot.value = Some(value);
                index
            }
            None => {
                if inner.slots.len() >= max_slots {
                    drop(inner);
                    return Err(HandleError::Full);
                }
                inner.slots.push(Slot {
                    generation: 1,
                    value: Some(value),
                });
                // Cannot truncate: the length was below `max_slots <= MAX_SLOTS` before the push.
                (inner.slots.len() - 1) as u32
            }
        };
        Ok(encode(inner.slots[index as usize].generation, index))
    }

    /// The object `handle` names, shared with the table.
    pub(crate) fn get(&self, handle: u64) -> Result<Arc<T>, HandleError> {
        let inner = self.read();
        let index = inner.find(handle)?;
        inner.slots[index].value.clone().ok_or(HandleError::Stale)
    }

    /// Frees `handle` and returns the object it named; the handle is `Stale` from now on.
    ///
    /// Other clones of the `Arc` (from an earlier `get` on another thread) stay valid, so the
    /// object dies when the last of them is dropped, outside this table's lock.
    pub(crate) fn remove(&self, handle: u64) -> Result<Arc<T>, HandleError> {
        let mut inner = self.write();
        let index = inner.find(handle)?;
        let slot = &mut inner.slots[index];
        let value = slot.value.take().ok_or(HandleError::Stale)?;
        if slot.generation < u32::MAX {
            // Cannot truncate: `find` only returns indices below `MAX_SLOTS`.
            inner.free.push_back(index as u32);
        }
        Ok(value)
    }

    // parking_lot locks do not poison: the only panic possible under these guards, a capacity
    // overflow in `push`, happens before anything changes, so the slots stay consistent.
    fn read(&self) -> RwLockReadGuard<'_, Slots<T>> {
        self.inner.read()
    }

    fn write(&self) -> RwLockWriteGuard<'_, Slots<T>> {
        self.inner.write()
    }
}

impl<T> Slots<T> {
    /// The index of the slot that issued `handle`, whether or not it has been freed since.
    fn find(&self, handle: u64) -> Result<usize, HandleError> {
        if handle == 0 {
            return Err(HandleError::Null);
        }
        let (generation, index) = decode(handle).ok_or(HandleError::Invalid)?;
        let slot = self.slots.get(index).ok_or(HandleError::Invalid)?;
        if generation > slot.generation {
            return Err(HandleError::Invalid);
        }
        if generation < slot.generation {
            return Err(HandleError::Stale);
        }
        Ok(index)
    }
}

fn encode(generation: u32, index: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(index + 1)
}

/// `(generation, index)`, or `None` for a value no slot could ever have issued.
fn decode(handle: u64) -> Option<(u32, usize)> {
    let generation = (handle >> 32) as u32;
    let low = handle as u32;
    if generation == 0 || low == 0 {
        return None;
    }
    Some((generation, low as usize - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Barrier, Mutex};
    use std::thread;

    fn table_with(values: &[u32]) -> (HandleTable<u32>, Vec<u64>) {
        let table = HandleTable::new();
        let handles = values
            .iter()
            .map(|&v| table.insert(Arc::new(v)).unwrap())
            .collect();
        (table, handles)
    }

    #[test]
    fn live_handles_resolve_to_their_own_values() {
        let (table, handles) = table_with(&[10, 20, 30]);
        for (handle, expected) in handles.iter().zip([10, 20, 30]) {
            assert_ne!(*handle, 0);
            assert_eq!(*table.get(*handle).unwrap(), expected);
        }
    }

    #[test]
    fn null_is_reported_as_null() {
        let (table, _) = table_with(&[1]);
        assert_eq!(table.get(0), Err(HandleError::Null));
        assert_eq!(table.remove(0), Err(HandleError::Null));
    }

    #[test]
    fn freed_and_double_freed_handles_are_stale() {
        let (table, handles) = table_with(&[1, 2]);
        assert_eq!(*table.remove(handles[0]).unwrap(), 1);
        assert_eq!(table.get(handles[0]), Err(HandleError::Stale));
        assert_eq!(table.remove(handles[0]), Err(HandleError::Stale));
        assert_eq!(*table.get(handles[1]).unwrap(), 2);
    }

    #[test]
    fn a_reused_slot_does_not_revive_the_old_handle() {
        let (table, handles) = table_with(&[1]);
        table.remove(handles[0]).unwrap();
        let reused = table.insert(Arc::new(2)).unwrap();
        assert_eq!(reused as u32, handles[0] as u32, "same slot");
        assert_ne!(reused, handles[0]);
        assert_eq!(table.get(handles[0]), Err(HandleError::Stale));
        assert_eq!(table.remove(handles[0]), Err(HandleError::Stale));
        assert_eq!(*table.get(reused).unwrap(), 2);
    }

    #[test]
    fn forged_handles_are_invalid() {
        let (table, handles) = table_with(&[1, 2]);
        let live = handles[0];
        let generation = live >> 32;
        let index_bits = live & 0xffff_ffff;
        let forged = [
            // Index beyond every slot.
            (generation << 32) | 3,
            (generation << 32) | 0xffff_ffff,
            // Low half 0 names no slot.
            generation << 32,
            // Generation 0 is never issued: this is also the handle truncated to 32 bits.
            index_bits,
            // A generation the slot has not reached yet.
            ((generation + 1) << 32) | index_bits,
            (u64::from(u32::MAX) << 32) | index_bits,
            u64::MAX,
        ];
        for handle in forged {
            assert_eq!(table.get(handle), Err(HandleError::Invalid), "{handle:#x}");
            assert_eq!(
                table.remove(handle),
                Err(HandleError::Invalid),
                "{handle:#x}"
            );
        }
        assert_eq!(*table.get(live).unwrap(), 1);
        assert_eq!(*table.get(handles[1]).unwrap(), 2);
    }

    #[test]
    fn an_empty_table_rejects_everything() {
        let table = HandleTable::<u32>::new();
        assert_eq!(table.get(0), Err(HandleError::Null));
        assert_eq!(table.get(1), Err(HandleError::Invalid));
        assert_eq!(table.get((1 << 32) | 1), Err(HandleError::Invalid));
    }

    #[test]
    fn random_values_never_resolve() {
        let (table, handles) = table_with(&[1, 2, 3]);
        // A fixed xorshift stream: deterministic, and no dependency for one test.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if handles.contains(&x) {
                continue;
            }
            assert!(matches!(
                table.get(x),
                Err(HandleError::Invalid | HandleError::Null)
            ));
        }
    }

    #[test]
    fn free_slots_are_reused_oldest_first() {
        let (table, handles) = table_with(&[1, 2, 3]);
        table.remove(handles[1]).unwrap();
        table.remove(handles[0]).unwrap();
        let first = table.insert(Arc::new(4)).unwrap();
        let second = table.insert(Arc::new(5)).unwrap();
        assert_eq!(first as u32, handles[1] as u32);
        assert_eq!(second as u32, handles[0] as u32);
    }

    #[test]
    fn a_slot_is_retired_instead_of_wrapping_its_generation() {
        let (table, handles) = table_with(&[1]);
        // Fast-forward the slot to two generations before the wrap.
        table.write().slots[0].generation = u32::MAX - 1;
        let worn = (u64::from(u32::MAX - 1) << 32) | (handles[0] & 0xffff_ffff);
        table.remove(worn).unwrap();

        let last = table.insert(Arc::new(2)).unwrap();
        assert_eq!(last >> 32, u64::from(u32::MAX));
        assert_eq!(last as u32, handles[0] as u32, "the worn slot's last use");
        assert_eq!(*table.remove(last).unwrap(), 2);

        let fresh = table.insert(Arc::new(3)).unwrap();
        assert_ne!(fresh as u32, last as u32, "the worn slot is not reused");
        assert_eq!(fresh >> 32, 1);
        assert_eq!(table.get(last), Err(HandleError::Stale));
        assert_eq!(table.get(handles[0]), Err(HandleError::Stale));
        assert_eq!(
            table.get((1 << 32) | (last & 0xffff_ffff)),
            Err(HandleError::Stale)
        );
        assert_eq!(*table.get(fresh).unwrap(), 3);
    }

    #[test]
    fn a_table_out_of_indices_refuses_new_handles() {
        let table = HandleTable::new();
        let first = table.insert_below(Arc::new(1), 2).unwrap();
        let second = table.insert_below(Arc::new(2), 2).unwrap();
        assert_eq!(table.insert_below(Arc::new(3), 2), Err(HandleError::Full));

        table.remove(first).unwrap();
        let reused = table.insert_below(Arc::new(4), 2).unwrap();

        table.write().slots[reused as u32 as usize - 1].generation = u32::MAX;
        let worn = (u64::from(u32::MAX) << 32) | (reused & 0xffff_ffff);
        table.remove(worn).unwrap();
        assert_eq!(table.insert_below(Arc::new(5), 2), Err(HandleError::Full));
        assert_eq!(*table.get(second).unwrap(), 2);
    }

    #[test]
    fn objects_are_dropped_outside_the_lock() {
        // Freeing one node frees the next from its destructor, as a loader's teardown may call
        // back into the FFI layer; that needs the write lock again.
        struct Node {
            next: u64,
        }
        static NODES: HandleTable<Node> = HandleTable::new();
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        impl Drop for Node {
            fn drop(&mut self) {
                if self.next != 0 {
                    drop(NODES.remove(self.next).unwrap());
                }
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }

        let tail = NODES.insert(Arc::new(Node { next: 0 })).unwrap();
        let head = NODES.insert(Arc::new(Node { next: tail })).unwrap();
        drop(NODES.remove(head).unwrap());
        assert_eq!(DROPS.load(Ordering::SeqCst), 2);
        assert_eq!(NODES.get(tail).err(), Some(HandleError::Stale));
    }

    #[test]
    fn concurrent_insert_get_remove_keep_handles_apart() {
        const THREADS: u32 = 8;
        const ROUNDS: u32 = 2_000;
        let table = HandleTable::new();
        // Slots are reused across threads, so every thread checks handles that any thread freed
        // while other objects may already sit in their slots.
        let freed = Mutex::new(Vec::new());
        thread::scope(|scope| {
            for thread in 0..THREADS {
                let (table, freed) = (&table, &freed);
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    for round in 0..ROUNDS {
                        let value = (thread, round);
                        mine.push((table.insert(Arc::new(value)).unwrap(), value));
                        for &(handle, value) in &mine {
                            assert_eq!(*table.get(handle).unwrap(), value);
                        }
                        if round % 3 != 0 {
                            let (handle, value) = mine.swap_remove(round as usize % mine.len());
                            assert_eq!(*table.remove(handle).unwrap(), value);
                            freed.lock().unwrap().push(handle);
                        }
                        let recent: Vec<u64> = freed
                            .lock()
                            .unwrap()
                            .iter()
                            .rev()
                            .take(8)
                            .copied()
                            .collect();
                        for handle in recent {
                            assert_eq!(table.get(handle), Err(HandleError::Stale));
                        }
                    }
                    for (handle, value) in mine {
                        assert_eq!(*table.remove(handle).unwrap(), value);
                    }
                });
            }
        });
        let inner = table.read();
        assert_eq!(inner.free.len(), inner.slots.len(), "every slot freed");
        assert!(inner.slots.iter().all(|slot| slot.value.is_none()));
        assert!(
            inner.slots.len() < (THREADS * ROUNDS) as usize,
            "slots were reused"
        );
    }

    #[test]
    fn racing_frees_of_one_handle_succeed_once() {
        const RACERS: usize = 4;
        let table = HandleTable::new();
        for round in 0..200 {
            let handle = table.insert(Arc::new(round)).unwrap();
            let start = Barrier::new(RACERS);
            let wins = AtomicUsize::new(0);
            thread::scope(|scope| {
                for _ in 0..RACERS {
                    scope.spawn(|| {
                        start.wait();
                        match table.remove(handle) {
                            Ok(value) => {
                                assert_eq!(*value, round);
                                wins.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(error) => assert_eq!(error, HandleError::Stale),
                        }
                    });
                }
            });
            assert_eq!(wins.load(Ordering::SeqCst), 1);
        }
    }
}
