//! A state packed into one `u64`, so the explorer stores eight bytes per distinct state.
//!
//! The layout depends on the constants: an epoch stamp takes as many bits as `MaxEpoch` needs,
//! and there are `Ids` request slots. `Packer::new` refuses constants that do not fit.

use super::{Bounds, Coverage, Debt, Failure, Kind, Phase, Req, St, State, MAX_IDS, UNUSED};

/// Packs and unpacks states under one set of constants.
#[derive(Clone, Copy, Debug)]
pub struct Packer {
    ep_bits: u32,
    ids: usize,
}

impl Packer {
    /// The number of bits a state takes under `bounds`.
    pub fn bits(bounds: &Bounds) -> u32 {
        let ep_bits = ep_bits(bounds.max_epoch);
        // epoch, chainEpoch, coverEpoch; debt, phase, failure, coverage; settledOnce;
        // resumed.
        let globals = 3 * ep_bits + 4 * 2 + 1 + RESUMED_BITS;
        globals + req_bits(ep_bits) * bounds.ids as u32
    }

    /// The packer for `bounds`, or why a state under them does not fit in 64 bits.
    pub fn new(bounds: &Bounds) -> Result<Packer, String> {
        let bits = Self::bits(bounds);
        if bits > 64 || bounds.ids > MAX_IDS || bounds.ids == 0 {
            return Err(format!(
                "max-epoch {} with {} ids needs {} bits per state; at most 64 bits and 1..={} ids are supported",
                bounds.max_epoch, bounds.ids, bits, MAX_IDS
            ));
        }
        Ok(Packer {
            ep_bits: ep_bits(bounds.max_epoch),
            ids: bounds.ids,
        })
    }

    /// `s` as one word.
    pub fn pack(&self, s: &State) -> u64 {
        let mut w = Writer::default();
        let e = self.ep_bits;
        w.put(s.epoch as u64, e);
        w.put(s.chain_epoch as u64, e);
        w.put(s.cover_epoch as u64, e);
        w.put(s.debt as u64, 2);
        w.put(s.phase as u64, 2);
        w.put(s.failure as u64, 2);
        w.put(s.coverage as u64, 2);
        w.put(s.settled_once as u64, 1);
        w.put(s.resumed as u64, RESUMED_BITS);
        for r in &s.req[..self.ids] {
            w.put_req(r, e);
        }
        w.word
    }

    /// Whether [`Packer::pack_spare`] can key states with `spare` request slots beyond those of
    /// `bounds`: the slots exist and theirs fit in 64 bits.
    pub fn spare_fits(bounds: &Bounds, spare: usize) -> Result<(), String> {
        let bits = req_bits(ep_bits(bounds.max_epoch)) * spare as u32;
        if bounds.ids + spare > MAX_IDS || bits > 64 {
            return Err(format!(
                "{} ids and {spare} spare ids at max-epoch {}: at most {MAX_IDS} slots in all, and {bits} bits for the spare ones where 64 fit",
                bounds.ids, bounds.max_epoch
            ));
        }
        Ok(())
    }

    /// The request slots `ids..ids + spare` of `s`, beyond the packer's, each packed as
    /// [`Packer::pack`] packs a slot. With `pack(s)`, a key for the states of the model with
    /// `spare` more slots. [`Packer::spare_fits`] says whether they fit.
    pub fn pack_spare(&self, s: &State, spare: usize) -> u64 {
        let mut w = Writer::default();
        for r in &s.req[self.ids..self.ids + spare] {
            w.put_req(r, self.ep_bits);
        }
        w.word
    }

    /// Decodes a packed state. A field code outside its domain comes back as `None`.
    pub fn unpack(&self, word: u64) -> Option<State> {
        let mut r = Reader { word, at: 0 };
        let e = self.ep_bits;
        let epoch = r.get(e) as u8;
        let chain_epoch = r.get(e) as u8;
        let cover_epoch = r.get(e) as u8;
        let debt = *Debt::ALL.get(r.get(2) as usize)?;
        let phase = *Phase::ALL.get(r.get(2) as usize)?;
        let failure = *Failure::ALL.get(r.get(2) as usize)?;
        let coverage = *Coverage::ALL.get(r.get(2) as usize)?;
        let settled_once = r.get(1) == 1;
        let resumed = r.get(RESUMED_BITS) as u8;
        if resumed as usize > MAX_IDS {
            return None;
        }
        let mut req = [UNUSED; MAX_IDS];
        for slot in req.iter_mut().take(self.ids) {
            let (kind, st) = kind_st(r.get(4))?;
            let ep = r.get(e) as u8;
            let sup = r.get(1) == 1;
            *slot = Req { kind, ep, st, sup };
        }
        Some(State {
            epoch,
            debt,
            phase,
            chain_epoch,
            failure,
            coverage,
            req,
            settled_once,
            cover_epoch,
            resumed,
        })
    }
}

/// `resumed`: 0, or a slot plus one, up to `MAX_IDS` (the spare slots of the progress check's
/// wider model included).
const RESUMED_BITS: u32 = 4;

/// One request slot's bits: its kind and st in one code (see [`kind_st_code`]), ep, sup.
fn req_bits(ep_bits: u32) -> u32 {
    4 + ep_bits + 1
}

/// A slot's kind and st as one code of 4 bits: 0 for an unused slot (whose kind is always
/// `"none"`), else 1 + 4 * (kind - 1) + (st - 1): thirteen codes where the two fields apart
/// would take five bits.
fn kind_st_code(r: &Req) -> u64 {
    if r.st == St::Unused {
        debug_assert_eq!(r.kind, Kind::None, "an unused slot has no kind");
        0
    } else {
        debug_assert_ne!(r.kind, Kind::None, "a used slot has a kind");
        1 + 4 * (r.kind as u64 - 1) + (r.st as u64 - 1)
    }
}

/// The kind and st [`kind_st_code`] encoded as `code`; `None` outside its thirteen codes.
fn kind_st(code: u64) -> Option<(Kind, St)> {
    if code == 0 {
        return Some((Kind::None, St::Unused));
    }
    let c = code as usize - 1;
    Some((*Kind::ALL.get(1 + c / 4)?, *St::ALL.get(1 + c % 4)?))
}

fn ep_bits(max_epoch: u8) -> u32 {
    (u8::BITS - max_epoch.leading_zeros()).max(1)
}

#[derive(Default)]
struct Writer {
    word: u64,
    at: u32,
}

impl Writer {
    fn put(&mut self, v: u64, bits: u32) {
        debug_assert!(v < (1 << bits));
        self.word |= v << self.at;
        self.at += bits;
    }

    /// One request slot: kind and st (one code), ep, sup.
    fn put_req(&mut self, r: &Req, ep_bits: u32) {
        self.put(kind_st_code(r), 4);
        self.put(r.ep as u64, ep_bits);
        self.put(r.sup as u64, 1);
    }
}

struct Reader {
    word: u64,
    at: u32,
}

impl Reader {
    fn get(&mut self, bits: u32) -> u64 {
        let v = (self.word >> self.at) & ((1 << bits) - 1);
        self.at += bits;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Model, Rules};

    #[test]
    fn pack_round_trips_every_reachable_state_shape() {
        let bounds = Bounds {
            max_epoch: 3,
            ids: 5,
            rules: Rules::Current,
            model_bounds: false,
        };
        let p = Packer::new(&bounds).unwrap();
        let m = Model::new(bounds);
        let mut s = m.init();
        s.epoch = 3;
        s.cover_epoch = 2;
        s.chain_epoch = 1;
        s.debt = Debt::Full;
        s.phase = Phase::FullHeld;
        s.failure = Failure::Superseded;
        s.coverage = Coverage::Chain;
        s.settled_once = true;
        s.resumed = 5;
        s.req[4] = Req {
            kind: Kind::Full,
            ep: 3,
            st: St::Released,
            sup: true,
        };
        assert_eq!(p.unpack(p.pack(&s)), Some(s));
        assert_eq!(p.unpack(p.pack(&m.init())), Some(m.init()));
    }

    #[test]
    fn spare_slots_key_what_the_packer_leaves_out() {
        let bounds = Bounds {
            max_epoch: 3,
            ids: 4,
            rules: Rules::UnifiedMinChurn,
            model_bounds: false,
        };
        let p = Packer::new(&bounds).unwrap();
        assert!(Packer::spare_fits(&bounds, 4).is_ok());
        assert!(Packer::spare_fits(&bounds, 5).is_err());
        let mut a = Model::new(bounds).init();
        a.req[0].kind = Kind::Chain;
        a.req[0].st = St::Settled;
        let mut b = a;
        b.req[5] = Req {
            kind: Kind::Chain,
            ep: 3,
            st: St::Inflight,
            sup: false,
        };
        // The same to `pack`, which sees four slots; told apart by the spare slots.
        assert_eq!(p.pack(&a), p.pack(&b));
        assert_eq!(p.pack_spare(&a, 4), 0);
        assert_ne!(p.pack_spare(&b, 4), p.pack_spare(&a, 4));
        assert_eq!(p.pack_spare(&b, 1), 0);
    }

    #[test]
    fn oversize_constants_are_refused() {
        let bounds = Bounds {
            max_epoch: 15,
            ids: 8,
            rules: Rules::UnifiedMin,
            model_bounds: true,
        };
        assert!(Packer::new(&bounds).is_err());
    }
}
