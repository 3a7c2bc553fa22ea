//! The canonical form of a checked state, built from the state's fields: the host and its
//! loader encoded as a sequence of words, with ids renumbered by rank, times made relative to
//! the host's clock and counters that only report left out, then hashed. Two interleavings
//! that reach the same state are explored once.
//!
//! Every type of the state implements [`Canon`], next to its definition, by destructuring
//! itself whole: a field added to the loader does not compile until its type's encoding
//! names it. `u64` has no `Canon`: a 64-bit field is an id, a time or a plain number (a
//! position, a count, a size), and the encoding must say which ([`Enc::id`], [`Enc::time`],
//! [`Enc::num`]), so an id field cannot be encoded as a number by omission.
//!
//! Ids: each [`Class`] is renumbered on its own by rank over the whole state, keeping 0
//! (order and equality are all the loader compares ids by). Ranking keeps order, so maps
//! keyed by an id are encoded in the order of their raw keys, which is the order of their
//! ranks. Times become offsets from the host's clock. The loader's config is fixed for one
//! exploration and is not encoded.
//!
//! `text` is the form this replaced (the `Debug` text, parsed): [`Form::AsText`] keeps what
//! that one kept and drops what it dropped, so that the two find the same states.

use std::collections::{BTreeMap, VecDeque};

/// The id classes, each renumbered on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// A ledger request id.
    Request = 0,
    /// A read id.
    Read = 1,
    /// A host acquisition.
    Acquisition = 2,
    /// An epoch.
    Epoch = 3,
}

/// Which canonical form: the structural one, or the structural one restricted to what the
/// `Debug`-text form saw (for comparison with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Every field that a rule reads, every id ranked.
    Fields,
    /// As the `Debug`-text form: a read's `request_id` and a ranged run's page names kept
    /// raw, the host's prepared answers dropped.
    AsText,
}

/// The encoder: the words of the state, and where each id sits.
pub(crate) struct Enc {
    words: Vec<u64>,
    /// For each class, the (value, word index) of each id.
    ids: [Vec<(u64, u32)>; 4],
    now: u64,
    form: Form,
}

/// A part of the state with a canonical encoding.
pub(crate) trait Canon {
    /// Appends this value's encoding to `e`.
    fn canon(&self, e: &mut Enc);
}

impl Enc {
    /// An encoder for a state whose host clock reads `now`.
    pub(crate) fn new(now: u64, form: Form) -> Enc {
        Enc {
            words: Vec::with_capacity(256),
            ids: Default::default(),
            now,
            form,
        }
    }

    /// Which form is being built.
    pub(crate) fn form(&self) -> Form {
        self.form
    }

    /// An id of class `c`.
    #[inline]
    pub(crate) fn id(&mut self, c: Class, v: u64) {
        self.ids[c as usize].push((v, self.words.len() as u32));
        self.words.push(v);
    }

    /// An id that the `Debug`-text form kept raw: ranked in [`Form::Fields`], a number in
    /// [`Form::AsText`].
    #[inline]
    pub(crate) fn id_text_raw(&mut self, c: Class, v: u64) {
        match self.form {
            Form::Fields => self.id(c, v),
            Form::AsText => self.num(v),
        }
    }

    /// A time on the loader's or the host's clock (ms): kept as its offset from the host's.
    #[inline]
    pub(crate) fn time(&mut self, t: u64) {
        self.words.push(t.wrapping_sub(self.now));
    }

    /// A plain number: a position, a count, a length, a size, a seed.
    #[inline]
    pub(crate) fn num(&mut self, v: u64) {
        self.words.push(v);
    }

    /// Bytes (a cursor, an item list), with their length.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.words.push(b.len() as u64);
        for chunk in b.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.words.push(u64::from_le_bytes(w));
        }
    }

    /// An optional value, encoded by `f` when present.
    #[inline]
    pub(crate) fn opt<T>(&mut self, v: &Option<T>, f: impl FnOnce(&mut Enc, &T)) {
        match v {
            None => self.words.push(0),
            Some(x) => {
                self.words.push(1);
                f(self, x);
            }
        }
    }

    /// A sequence, with its length, each element encoded by `f`.
    #[inline]
    pub(crate) fn seq<'a, T: 'a, I>(&mut self, it: I, mut f: impl FnMut(&mut Enc, &T))
    where
        I: IntoIterator<Item = &'a T>,
        I::IntoIter: ExactSizeIterator,
    {
        let it = it.into_iter();
        self.words.push(it.len() as u64);
        for x in it {
            f(self, x);
        }
    }

    /// A map keyed by ids of class `c`, in the order of its keys (which ranking keeps).
    pub(crate) fn id_map<V>(
        &mut self,
        c: Class,
        m: impl Iterator<Item = (u64, V)>,
        mut f: impl FnMut(&mut Enc, V),
    ) {
        let mut entries: smallvec::SmallVec<[(u64, V); 8]> = m.collect();
        entries.sort_unstable_by_key(|x| x.0);
        self.words.push(entries.len() as u64);
        for (k, v) in entries {
            self.id(c, k);
            f(self, v);
        }
    }

    /// Empties the encoder for another state (keeping its buffers).
    pub(crate) fn reset(&mut self, now: u64, form: Form) {
        self.words.clear();
        for ids in &mut self.ids {
            ids.clear();
        }
        self.now = now;
        self.form = form;
    }

    /// The ids ranked, and the words hashed to 128 bits.
    pub(crate) fn finish(&mut self) -> u128 {
        self.rank();
        hash128(&self.words)
    }

    /// The words, ids ranked (for tests).
    #[cfg(test)]
    pub(crate) fn finish_words(mut self) -> Vec<u64> {
        self.rank();
        self.words
    }

    /// Replaces each id by its rank among its class's distinct values; 0 stays 0, and ranks
    /// start at 1 when 0 is absent.
    fn rank(&mut self) {
        let mut values: smallvec::SmallVec<[u64; 32]> = smallvec::SmallVec::new();
        for ids in &mut self.ids {
            let Some(&(first, _)) = ids.first() else {
                continue;
            };
            let (lo, hi) = ids
                .iter()
                .fold((first, first), |(lo, hi), &(v, _)| (lo.min(v), hi.max(v)));
            let from = u64::from(lo != 0);
            if hi - lo < 256 {
                // The usual case (ids handed out in order, a few hundred apart at most): the
                // class's values as bits from the smallest, each set bit's place counted in
                // order (lowest first), and each id given its value's place.
                let mut bits = [0u64; 4];
                for &(v, _) in ids.iter() {
                    let d = (v - lo) as usize;
                    bits[d >> 6] |= 1 << (d & 63);
                }
                let mut place = [0u8; 256];
                let mut n = 0u32;
                for (w, &word) in bits.iter().enumerate() {
                    let mut m = word;
                    while m != 0 {
                        place[(w << 6) | m.trailing_zeros() as usize] = n as u8;
                        n += 1;
                        m &= m - 1;
                    }
                }
                for &(v, at) in ids.iter() {
                    self.words[at as usize] = from + u64::from(place[(v - lo) as usize]);
                }
                continue;
            }
            // The class's distinct values in order: an id's rank is its place among them.
            values.clear();
            values.extend(ids.iter().map(|x| x.0));
            values.sort_unstable();
            values.dedup();
            for &(v, at) in ids.iter() {
                let place = values.binary_search(&v).expect("a value of the class");
                self.words[at as usize] = from + place as u64;
            }
        }
    }
}

/// A 128-bit hash of the words: four lanes of folded 64×64→128 multiplies (as wyhash
/// mixes), two words to a multiply (one on each side, each keyed), the lanes keyed apart and
/// independent so that they run side by side, folded together with the length at the end.
/// Not cryptographic; the checker's state counts are far below where 128 bits collide by
/// chance.
fn hash128(words: &[u64]) -> u128 {
    #[inline(always)]
    fn fold(x: u64, y: u64) -> u64 {
        let m = u128::from(x) * u128::from(y);
        (m as u64) ^ ((m >> 64) as u64)
    }
    const K: [u64; 5] = [
        0xa076_1d64_78bd_642f,
        0xe703_7ed1_a0b4_28db,
        0x8ebc_6af0_9c88_c6e3,
        0x5899_65cc_7537_4cc3,
        0x1d8e_4e27_c47d_124f,
    ];
    let mut lane = [K[0], K[1], K[2], K[3]];
    let mut chunks = words.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..4 {
            lane[i] = fold(lane[i] ^ c[2 * i], c[2 * i + 1] ^ K[(i + 1) % 4]);
        }
    }
    let rest = chunks.remainder();
    for (i, pair) in rest.chunks(2).enumerate() {
        let second = pair.get(1).copied().unwrap_or(K[4]);
        lane[i] = fold(lane[i] ^ pair[0], second ^ K[(i + 1) % 4]);
    }
    let len = words.len() as u64;
    let a = fold(lane[0] ^ K[4], lane[1] ^ len);
    let b = fold(
        lane[2] ^ K[4].rotate_left(17),
        lane[3] ^ len.rotate_left(32),
    );
    let hi = fold(a ^ K[0], b ^ K[1]);
    let lo = fold(b ^ K[2], a ^ K[3]);
    (u128::from(hi) << 64) | u128::from(lo)
}

macro_rules! canon_as_num {
    ($($t:ty),*) => {$(
        impl Canon for $t {
            #[inline]
            fn canon(&self, e: &mut Enc) {
                e.num(*self as u64);
            }
        }
    )*};
}
canon_as_num!(bool, u8, u16, u32, usize);

impl Canon for i128 {
    fn canon(&self, e: &mut Enc) {
        e.num(*self as u64);
        e.num((*self >> 64) as u64);
    }
}

impl<A: Canon, B: Canon> Canon for (A, B) {
    fn canon(&self, e: &mut Enc) {
        self.0.canon(e);
        self.1.canon(e);
    }
}

impl<T: Canon> Canon for Option<T> {
    fn canon(&self, e: &mut Enc) {
        e.opt(self, |e, x| x.canon(e));
    }
}

impl<T: Canon> Canon for Vec<T> {
    fn canon(&self, e: &mut Enc) {
        e.seq(self, |e, x| x.canon(e));
    }
}

impl<T: Canon> Canon for VecDeque<T> {
    fn canon(&self, e: &mut Enc) {
        e.seq(self, |e, x| x.canon(e));
    }
}

/// A map keyed by plain numbers (positions), in key order.
impl<T: Canon> Canon for BTreeMap<u64, T> {
    fn canon(&self, e: &mut Enc) {
        e.num(self.len() as u64);
        for (k, v) in self {
            e.num(*k);
            v.canon(e);
        }
    }
}

/// The canonical keys of a checked state: of its host alone (what a progress walk depends
/// on), and of the state (the host and the budgets spent); `e` is a buffer.
pub(super) fn keys(st: &super::State, form: Form, e: &mut Enc) -> (u128, u128) {
    e.reset(st.host.now, form);
    st.host.canon(e);
    let host = e.finish();
    (host, state_key(host, st))
}

/// The canonical key of a checked state whose host's key is `host`: that key and the budgets
/// spent, hashed (the host's words are not hashed again).
pub(super) fn state_key(host: u128, st: &super::State) -> u128 {
    let super::State {
        host: _,
        changes,
        moves,
        faults,
        jumps,
        far,
        ranged,
    } = st;
    let opt = |v: &Option<u64>| [u64::from(v.is_some()), v.unwrap_or(0)];
    let [far_is, far_left] = opt(far);
    let [ranged_is, ranged_left] = opt(ranged);
    hash128(&[
        host as u64,
        (host >> 64) as u64,
        u64::from(*changes),
        u64::from(*moves),
        u64::from(*faults),
        u64::from(*jumps),
        far_is,
        far_left,
        ranged_is,
        ranged_left,
    ])
}

#[cfg(test)]
mod tests {
    use super::{Class, Enc, Form};

    fn words(f: impl FnOnce(&mut Enc), now: u64) -> Vec<u64> {
        let mut e = Enc::new(now, Form::Fields);
        f(&mut e);
        e.finish_words()
    }

    #[test]
    fn ids_are_ranked_by_class_and_times_made_relative() {
        let a = words(
            |e| {
                e.id(Class::Request, 7);
                e.id(Class::Epoch, 3);
                e.id(Class::Request, 5);
                e.id(Class::Epoch, 2);
                e.time(50);
            },
            40,
        );
        let b = words(
            |e| {
                e.id(Class::Request, 2);
                e.id(Class::Epoch, 9);
                e.id(Class::Request, 1);
                e.id(Class::Epoch, 4);
                e.time(20);
            },
            10,
        );
        assert_eq!(a, b);
        // Another order of epochs is another state.
        let c = words(
            |e| {
                e.id(Class::Request, 2);
                e.id(Class::Epoch, 4);
                e.id(Class::Request, 1);
                e.id(Class::Epoch, 9);
                e.time(20);
            },
            10,
        );
        assert_ne!(a, c);
        // 0 stays 0; ranks start at 1 without it.
        assert_eq!(
            words(
                |e| {
                    e.id(Class::Read, 0);
                    e.id(Class::Read, 8);
                    e.id(Class::Acquisition, 8);
                },
                0
            ),
            vec![0, 1, 1]
        );
    }

    #[test]
    fn ids_far_apart_are_ranked_as_ids_close_together() {
        let ranked = |ids: &[u64]| {
            words(
                |e| {
                    for &v in ids {
                        e.id(Class::Read, v);
                    }
                },
                0,
            )
        };
        // Close together (bits) and far apart (a search among the sorted values).
        assert_eq!(ranked(&[70, 5, 250, 70, 200]), vec![2, 1, 4, 2, 3]);
        assert_eq!(ranked(&[70, 5, 3000, 70, 200]), vec![2, 1, 4, 2, 3]);
        assert_eq!(ranked(&[0, 64, 63, 255, 0]), vec![0, 2, 1, 3, 0]);
        assert_eq!(ranked(&[0, 64, 63, 1 << 40, 0]), vec![0, 2, 1, 3, 0]);
    }

    #[test]
    fn a_plain_number_is_not_ranked() {
        let a = words(|e| e.num(7), 0);
        let b = words(|e| e.num(8), 0);
        assert_ne!(a, b);
    }
}
