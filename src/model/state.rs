//! The module's state: its nine variables (ten with `unifiedMinEscalate`'s `resumed`), the request slots of `req`, and its constants.

use super::Rules;
use crate::vocab::{spec_enum, Coverage, Debt, Failure, Phase};

spec_enum!(
    /// A request's `kind` (`"none"` only for an unused slot).
    ///
    /// Not the ledger's `ledger::Kind`: the module's `req` maps every id in `Ids` to a
    /// request, so an unused slot has a kind too (`"none"`, in `Unused`). The ledger keeps
    /// live requests alone and has no unused slot; its kind has the other three values only.
    Kind {
        /// An unused slot.
        None => "none",
        /// A finite read: one page of the window.
        Finite => "finite",
        /// A chain read: the repair of bounded debt.
        Chain => "chain",
        /// A full-source read.
        Full => "full",
    }
);
spec_enum!(
    /// A request's `st`.
    St {
        /// The slot was never used.
        Unused => "unused",
        /// Issued, not yet answered.
        Inflight => "inflight",
        /// Answered; its acquisitions are still held.
        Settled => "settled",
        /// Its work failed.
        Failed => "failed",
        /// Retired: its acquisitions were handed back.
        Released => "released",
    }
);

/// One slot of `req`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Req {
    /// `kind`.
    pub kind: Kind,
    /// `ep`: the epoch the request was issued in.
    pub ep: u8,
    /// `st`.
    pub st: St,
    /// `sup`: authoritative work superseded it while it was in flight.
    pub sup: bool,
}

/// `Unused`.
pub const UNUSED: Req = Req {
    kind: Kind::None,
    ep: 0,
    st: St::Unused,
    sup: false,
};

/// The largest `Ids` the explorer supports.
pub const MAX_IDS: usize = 8;

/// One state of the module: its nine variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// `epoch`.
    pub epoch: u8,
    /// `debt`.
    pub debt: Debt,
    /// `phase`.
    pub phase: Phase,
    /// `chainEpoch`.
    pub chain_epoch: u8,
    /// `failure`.
    pub failure: Failure,
    /// `coverage`.
    pub coverage: Coverage,
    /// `req`, indexed by slot; only the first `Bounds::ids` slots are used.
    pub req: [Req; MAX_IDS],
    /// `settledOnce`.
    pub settled_once: bool,
    /// `coverEpoch`.
    pub cover_epoch: u8,
    /// `resumed` (`spec/LoaderLedgerEscalate.tla`): the slot, plus one, of the read a page or
    /// repair failure's retry started again, until its resumed read is answered; 0 when there
    /// is none. Always 0 under the other variants.
    pub resumed: u8,
}

/// The module's constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// `MaxEpoch`.
    pub max_epoch: u8,
    /// The number of `Ids`.
    pub ids: usize,
    /// `Rules`.
    pub rules: Rules,
    /// Keep the `coverage # "full"` guards on `IssueFinite` and `Invalidate` (the variant
    /// module's `ModelBounds`).
    pub model_bounds: bool,
}
