//! The settled requests, bucketed by epoch stamp, so that `Normalize` visits only what it
//! retires.
//!
//! Requests are stamped with the epoch current when they start, and most settle in the epoch
//! they started in, so a settle usually appends to the newest bucket. Emptied buckets keep
//! their allocation for reuse, so the steady state allocates nothing.

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub(super) struct SettledIndex {
    /// Buckets in increasing epoch order, none empty.
    buckets: VecDeque<(u64, Vec<u64>)>,
    spare: Vec<Vec<u64>>,
    len: usize,
}

impl SettledIndex {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn insert(&mut self, ep: u64, id: u64) {
        self.len += 1;
        // Search from the newest bucket: the common case is the first probe.
        let mut at = self.buckets.len();
        while at > 0 && self.buckets[at - 1].0 > ep {
            at -= 1;
        }
        if at > 0 && self.buckets[at - 1].0 == ep {
            self.buckets[at - 1].1.push(id);
            return;
        }
        let mut ids = self.spare.pop().unwrap_or_default();
        ids.push(id);
        // A new newest epoch (the usual case) goes at the back: `push_back`, not the general
        // `insert` with its choice of which half to shift.
        if at == self.buckets.len() {
            self.buckets.push_back((ep, ids));
        } else {
            self.buckets.insert(at, (ep, ids));
        }
    }

    /// Removes every request stamped below `ce`, calling `retire` for each.
    pub(super) fn release_below(&mut self, ce: u64, mut retire: impl FnMut(u64)) {
        while let Some(&(ep, _)) = self.buckets.front() {
            if ep >= ce {
                break;
            }
            let (_, mut ids) = self.buckets.pop_front().expect("front exists");
            self.len -= ids.len();
            // Read in place, then cleared: no `Drain` to set up and drop.
            for &id in &ids {
                retire(id);
            }
            ids.clear();
            self.spare.push(ids);
        }
    }

    pub(super) fn min_ep(&self) -> Option<u64> {
        self.buckets.front().map(|&(ep, _)| ep)
    }

    /// The requests stamped exactly `ep`.
    pub(super) fn ids_at(&self, ep: u64) -> impl Iterator<Item = u64> + '_ {
        self.buckets
            .iter()
            .filter(move |(e, _)| *e == ep)
            .flat_map(|(_, ids)| ids.iter().copied())
    }
}

/// The checker's canonical form: each bucket's epoch and request ids (the spare vectors are
/// only capacity).
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for SettledIndex {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let SettledIndex {
            buckets,
            spare: _,
            len,
        } = self;
        e.seq(buckets, |e, (ep, ids)| {
            e.id(Class::Epoch, *ep);
            e.seq(ids, |e, r| e.id(Class::Request, *r));
        });
        len.canon(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_exactly_the_older_buckets_in_order() {
        let mut s = SettledIndex::default();
        s.insert(2, 20);
        s.insert(0, 1);
        s.insert(1, 10);
        s.insert(0, 2);
        s.insert(2, 21);
        assert_eq!(s.len(), 5);
        let mut out = Vec::new();
        s.release_below(2, |id| out.push(id));
        assert_eq!(out, vec![1, 2, 10]);
        assert_eq!(s.len(), 2);
        assert_eq!(s.min_ep(), Some(2));
        assert_eq!(s.ids_at(2).collect::<Vec<_>>(), vec![20, 21]);
        s.release_below(2, |_| panic!("nothing below 2 remains"));
        s.release_below(3, |id| out.push(id));
        assert_eq!(out, vec![1, 2, 10, 20, 21]);
        assert_eq!(s.len(), 0);
        assert_eq!(s.min_ep(), None);
    }
}
