//! An executable transcription of `shared/spec/LoaderLedger.tla`.
//!
//! Every variable, operator, action and invariant of the module appears here under its own
//! name, so the TLA+ text and this file can be read side by side. The module's constants are
//! parameters ([`Bounds`]): `MaxEpoch`, the number of `Ids`, the `Rules` variant, and whether the
//! `coverage # "full"` model-bound guards on `IssueFinite` and `Invalidate` are kept.
//!
//! This layer knows nothing of the production ledger; `crate::refinement` relates the two.

pub mod explore;
mod pack;

pub use pack::Packer;

use std::fmt;

/// The module's `Rules` constant, plus this project's variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rules {
    /// The code's patched case rules: the module's finding.
    Current,
    /// One normalize step; a superseded request's failure only raises debt.
    Unified,
    /// `Unified` without the normalize step.
    UnifiedNoNorm,
    /// `Unified` that keeps settled entries until normalize retires them (the normative rules).
    UnifiedMin,
    /// `UnifiedMin` without the normalize step.
    UnifiedMinNoNorm,
    /// Pre-fix control: a stale prefix supersedes every smaller prefix, the repair's included.
    OldRetire,
    /// Pre-fix control: a stale finite settle is never released.
    OldLeak,
    /// Pre-fix control: a failed repair abandons and nothing restarts.
    OldRecover,
    /// `UnifiedMin` plus this project's fix: a full read that settles with `ep < epoch` leaves
    /// `debt = "bounded"`, so a repair runs at once and no invalidation is lost.
    UnifiedMinRecheck,
}

impl Rules {
    /// Every variant, the module's eight first, in the order the module names them.
    pub const ALL: [Rules; 9] = [
        Rules::Current,
        Rules::Unified,
        Rules::UnifiedNoNorm,
        Rules::UnifiedMin,
        Rules::UnifiedMinNoNorm,
        Rules::OldRetire,
        Rules::OldLeak,
        Rules::OldRecover,
        Rules::UnifiedMinRecheck,
    ];

    /// The module's own variants (everything but this project's addition).
    pub fn is_seed(self) -> bool {
        self != Rules::UnifiedMinRecheck
    }

    pub fn name(self) -> &'static str {
        match self {
            Rules::Current => "current",
            Rules::Unified => "unified",
            Rules::UnifiedNoNorm => "unifiedNoNorm",
            Rules::UnifiedMin => "unifiedMin",
            Rules::UnifiedMinNoNorm => "unifiedMinNoNorm",
            Rules::OldRetire => "oldRetire",
            Rules::OldLeak => "oldLeak",
            Rules::OldRecover => "oldRecover",
            Rules::UnifiedMinRecheck => "unifiedMinRecheck",
        }
    }

    pub fn parse(s: &str) -> Option<Rules> {
        Rules::ALL.into_iter().find(|r| r.name() == s)
    }

    /// `Rules \in {"unified", "unifiedMin"}`: the variants whose `Normalize` is not the identity.
    fn normalizes(self) -> bool {
        matches!(
            self,
            Rules::Unified | Rules::UnifiedMin | Rules::UnifiedMinRecheck
        )
    }

    /// `Rules \in {"unified", "unifiedNoNorm", "unifiedMin", "unifiedMinNoNorm"}`.
    fn unified_family(self) -> bool {
        matches!(
            self,
            Rules::Unified
                | Rules::UnifiedNoNorm
                | Rules::UnifiedMin
                | Rules::UnifiedMinNoNorm
                | Rules::UnifiedMinRecheck
        )
    }

    /// `Rules \in {"unifiedMin", "unifiedMinNoNorm"}`.
    fn min_family(self) -> bool {
        matches!(
            self,
            Rules::UnifiedMin | Rules::UnifiedMinNoNorm | Rules::UnifiedMinRecheck
        )
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

macro_rules! spec_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum $name { #[default] $($variant),* }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The spelling the TLA+ module uses.
            pub fn name(self) -> &'static str { match self { $($name::$variant => $text),* } }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.name()) }
        }
    };
}

spec_enum!(
    /// `debt`: none < bounded < full.
    Debt { None => "none", Bounded => "bounded", Full => "full" }
);
spec_enum!(
    /// `phase`.
    Phase { Idle => "idle", Repair => "repair", FullHeld => "fullheld" }
);
spec_enum!(
    /// `failure`.
    Failure { None => "none", Own => "own", Superseded => "superseded" }
);
spec_enum!(
    /// `coverage`.
    Coverage { Nothing => "nothing", Pages => "pages", Chain => "chain", Full => "full" }
);
spec_enum!(
    /// A request's `kind` (`"none"` only for an unused slot).
    Kind { None => "none", Finite => "finite", Chain => "chain", Full => "full" }
);
spec_enum!(
    /// A request's `st`.
    St { Unused => "unused", Inflight => "inflight", Settled => "settled", Failed => "failed", Released => "released" }
);

/// One slot of `req`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Req {
    pub kind: Kind,
    pub ep: u8,
    pub st: St,
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
    pub epoch: u8,
    pub debt: Debt,
    pub phase: Phase,
    pub chain_epoch: u8,
    pub failure: Failure,
    pub coverage: Coverage,
    /// `req`, indexed by slot; only the first `Bounds::ids` slots are used.
    pub req: [Req; MAX_IDS],
    pub settled_once: bool,
    pub cover_epoch: u8,
}

/// The module's constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub max_epoch: u8,
    pub ids: usize,
    pub rules: Rules,
    /// Keep the `coverage # "full"` guards on `IssueFinite` and `Invalidate`.
    pub model_bounds: bool,
}

/// An action with its request parameters. `i` is the request the action acts on; `k` the slot
/// of the request it starts (the module's `\E k \in Free`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    IssueFinite { k: u8 },
    Invalidate,
    StartRepair { k: u8 },
    StartFull { k: u8 },
    ExplicitRetry { k: u8 },
    SettleFinite { i: u8 },
    SettleChain { i: u8, k: Option<u8> },
    SettleFull { i: u8 },
    Fail { i: u8, k: Option<u8> },
}

impl Action {
    /// The action's name in the module.
    pub fn name(self) -> &'static str {
        match self {
            Action::IssueFinite { .. } => "IssueFinite",
            Action::Invalidate => "Invalidate",
            Action::StartRepair { .. } => "StartRepair",
            Action::StartFull { .. } => "StartFull",
            Action::ExplicitRetry { .. } => "ExplicitRetry",
            Action::SettleFinite { .. } => "SettleFinite",
            Action::SettleChain { .. } => "SettleChain",
            Action::SettleFull { .. } => "SettleFull",
            Action::Fail { .. } => "Fail",
        }
    }

    /// A compact code, for storing the action that reached a state.
    pub fn encode(self) -> u16 {
        let (tag, i, k) = match self {
            Action::IssueFinite { k } => (0, 0, k + 1),
            Action::Invalidate => (1, 0, 0),
            Action::StartRepair { k } => (2, 0, k + 1),
            Action::StartFull { k } => (3, 0, k + 1),
            Action::ExplicitRetry { k } => (4, 0, k + 1),
            Action::SettleFinite { i } => (5, i, 0),
            Action::SettleChain { i, k } => (6, i, k.map_or(0, |k| k + 1)),
            Action::SettleFull { i } => (7, i, 0),
            Action::Fail { i, k } => (8, i, k.map_or(0, |k| k + 1)),
        };
        (tag << 8) | ((i as u16) << 4) | k as u16
    }

    pub fn decode(code: u16) -> Action {
        let i = ((code >> 4) & 0xf) as u8;
        let k1 = (code & 0xf) as u8;
        let k = k1.wrapping_sub(1);
        match code >> 8 {
            0 => Action::IssueFinite { k },
            1 => Action::Invalidate,
            2 => Action::StartRepair { k },
            3 => Action::StartFull { k },
            4 => Action::ExplicitRetry { k },
            5 => Action::SettleFinite { i },
            6 => Action::SettleChain {
                i,
                k: (k1 != 0).then_some(k),
            },
            7 => Action::SettleFull { i },
            _ => Action::Fail {
                i,
                k: (k1 != 0).then_some(k),
            },
        }
    }
}

impl fmt::Display for Action {
    /// Slots print 1-based, as the module's `Ids == {1, 2, 3, 4}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Action::Invalidate => write!(f, "Invalidate"),
            Action::IssueFinite { k }
            | Action::StartRepair { k }
            | Action::StartFull { k }
            | Action::ExplicitRetry { k } => write!(f, "{}(new {})", self.name(), k + 1),
            Action::SettleFinite { i }
            | Action::SettleFull { i }
            | Action::SettleChain { i, k: None }
            | Action::Fail { i, k: None } => write!(f, "{}({})", self.name(), i + 1),
            Action::SettleChain { i, k: Some(k) } | Action::Fail { i, k: Some(k) } => {
                write!(f, "{}({}, new {})", self.name(), i + 1, k + 1)
            }
        }
    }
}

/// The module's invariants, plus `NoLostInvalidation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invariant {
    TypeOK,
    ChainHeld,
    NoLeak,
    NoStrandedStaleFailure,
    NoLostInvalidation,
}

impl Invariant {
    pub const ALL: [Invariant; 5] = [
        Invariant::TypeOK,
        Invariant::ChainHeld,
        Invariant::NoLeak,
        Invariant::NoStrandedStaleFailure,
        Invariant::NoLostInvalidation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::TypeOK => "TypeOK",
            Invariant::ChainHeld => "ChainHeld",
            Invariant::NoLeak => "NoLeak",
            Invariant::NoStrandedStaleFailure => "NoStrandedStaleFailure",
            Invariant::NoLostInvalidation => "NoLostInvalidation",
        }
    }

    /// Whether the invariant holds in `s`.
    pub fn holds(self, m: &Model, s: &State) -> bool {
        match self {
            // Types are enforced by Rust; what can still go wrong is a slot outside `Ids` in use
            // or a stamp outside `0..MaxEpoch`, i.e. a broken transcription.
            Invariant::TypeOK => m.type_ok(s),
            Invariant::ChainHeld => m.chain_held(s),
            Invariant::NoLeak => m.no_leak(s),
            Invariant::NoStrandedStaleFailure => m.no_stranded_stale_failure(s),
            Invariant::NoLostInvalidation => m.no_lost_invalidation(s),
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The module, instantiated with its constants.
#[derive(Clone, Copy, Debug)]
pub struct Model {
    pub bounds: Bounds,
}

impl Model {
    pub fn new(bounds: Bounds) -> Model {
        assert!(
            bounds.ids >= 1 && bounds.ids <= MAX_IDS,
            "ids must be 1..=8"
        );
        Model { bounds }
    }

    fn ids(&self) -> std::ops::Range<usize> {
        0..self.bounds.ids
    }

    fn rules(&self) -> Rules {
        self.bounds.rules
    }

    /// `Init`.
    pub fn init(&self) -> State {
        State {
            epoch: 0,
            debt: Debt::None,
            phase: Phase::Idle,
            chain_epoch: 0,
            failure: Failure::None,
            coverage: Coverage::Nothing,
            req: [UNUSED; MAX_IDS],
            settled_once: false,
            cover_epoch: 0,
        }
    }

    /// `Inflight(k) # {}`.
    pub fn has_inflight(&self, s: &State, kind: Kind) -> bool {
        self.ids()
            .any(|i| s.req[i].st == St::Inflight && s.req[i].kind == kind)
    }

    /// `AnyInflight`.
    pub fn any_inflight(&self, s: &State) -> bool {
        self.ids().any(|i| s.req[i].st == St::Inflight)
    }

    /// `Free`, as slot indices.
    fn free(&self, s: &State) -> impl Iterator<Item = usize> + '_ {
        let req = s.req;
        self.ids().filter(move |&i| req[i].st == St::Unused)
    }

    /// `New(k)`.
    fn new_req(s: &State, kind: Kind) -> Req {
        Req {
            kind,
            ep: s.epoch,
            st: St::Inflight,
            sup: false,
        }
    }

    /// `Supersede(r)`.
    fn supersede(&self, r: &mut [Req; MAX_IDS]) {
        for j in self.ids() {
            if r[j].st == St::Inflight && r[j].kind == Kind::Finite {
                r[j].sup = true;
            }
        }
    }

    /// `Normalize(r, ph, db, ce)`.
    fn normalize(&self, r: &mut [Req; MAX_IDS], ph: Phase, db: Debt, ce: u8) {
        if self.rules().normalizes() && ph == Phase::Idle && db == Debt::None {
            for i in self.ids() {
                if r[i].st == St::Settled && r[i].ep < ce {
                    r[i].st = St::Released;
                }
            }
        }
    }

    /// `ReleaseAllSettledExcept(r, keep)`.
    fn release_all_settled_except(&self, r: &mut [Req; MAX_IDS], keep: usize) {
        for j in self.ids() {
            if j != keep && r[j].st == St::Settled {
                r[j].st = St::Released;
            }
        }
    }

    /// Every successor of `s` under `Next`, each with the action that reaches it.
    pub fn next(&self, s: &State, mut emit: impl FnMut(Action, State)) {
        self.issue_finite(s, &mut emit);
        self.invalidate(s, &mut emit);
        self.start_repair(s, &mut emit);
        self.start_full(s, &mut emit);
        self.explicit_retry(s, &mut emit);
        for i in self.ids() {
            self.settle_finite(s, i, &mut emit);
            self.settle_chain(s, i, &mut emit);
            self.settle_full(s, i, &mut emit);
            self.fail(s, i, &mut emit);
        }
    }

    /// The successors of `s` by one named action (any request, any choice of `k`).
    pub fn successors_by(&self, s: &State, name: &str) -> Vec<(Action, State)> {
        let mut out = Vec::new();
        self.next(s, |a, t| {
            if a.name() == name {
                out.push((a, t))
            }
        });
        out
    }

    pub fn issue_finite(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.phase == Phase::Idle
            && s.debt == Debt::None
            && s.failure == Failure::None
            && (!self.bounds.model_bounds || s.coverage != Coverage::Full)
            && !self.has_inflight(s, Kind::Finite)
        {
            for i in self.free(s) {
                let mut t = *s;
                t.req[i] = Self::new_req(s, Kind::Finite);
                emit(Action::IssueFinite { k: i as u8 }, t);
            }
        }
    }

    pub fn invalidate(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.epoch < self.bounds.max_epoch
            && (!self.bounds.model_bounds || s.coverage != Coverage::Full)
        {
            let mut t = *s;
            t.epoch = s.epoch + 1;
            t.debt = if s.debt == Debt::None && s.settled_once && s.phase == Phase::Idle {
                Debt::Bounded
            } else if s.debt == Debt::None {
                Debt::Full
            } else {
                s.debt
            };
            emit(Action::Invalidate, t);
        }
    }

    pub fn start_repair(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.phase == Phase::Idle
            && s.debt == Debt::Bounded
            && s.failure == Failure::None
            && !self.has_inflight(s, Kind::Chain)
        {
            for i in self.free(s) {
                let mut t = *s;
                self.supersede(&mut t.req);
                t.req[i] = Self::new_req(s, Kind::Chain);
                t.phase = Phase::Repair;
                t.chain_epoch = s.epoch;
                emit(Action::StartRepair { k: i as u8 }, t);
            }
        }
    }

    pub fn start_full(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.phase == Phase::Idle
            && s.debt == Debt::Full
            && s.failure == Failure::None
            && !self.has_inflight(s, Kind::Full)
        {
            for i in self.free(s) {
                let mut t = *s;
                self.supersede(&mut t.req);
                t.req[i] = Self::new_req(s, Kind::Full);
                t.phase = Phase::FullHeld;
                emit(Action::StartFull { k: i as u8 }, t);
            }
        }
    }

    pub fn explicit_retry(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.failure != Failure::None
            && s.phase == Phase::Idle
            && s.debt == Debt::Full
            && !self.has_inflight(s, Kind::Full)
        {
            let mut cleared = s.req;
            for i in self.ids() {
                if cleared[i].st == St::Failed {
                    cleared[i].st = St::Released;
                }
            }
            for k in self.ids() {
                if matches!(cleared[k].st, St::Unused | St::Released) {
                    let mut t = *s;
                    t.failure = Failure::None;
                    t.req = cleared;
                    self.supersede(&mut t.req);
                    t.req[k] = Self::new_req(s, Kind::Full);
                    t.phase = Phase::FullHeld;
                    emit(Action::ExplicitRetry { k: k as u8 }, t);
                }
            }
        }
    }

    pub fn settle_finite(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if !(r.st == St::Inflight && r.kind == Kind::Finite) {
            return;
        }
        let rules = self.rules();
        let current = r.ep == s.epoch && s.phase == Phase::Idle && s.failure == Failure::None;
        let finished = s.phase == Phase::Idle && s.debt == Debt::None;
        let mut nr = s.req;
        nr[i].st = St::Settled;
        if !current && finished && !matches!(rules, Rules::OldLeak) && !rules.min_family() {
            nr[i].st = St::Released;
        }
        if !current && rules == Rules::OldRetire {
            for j in self.ids() {
                if nr[j].kind == Kind::Chain && nr[j].st == St::Settled {
                    nr[j].st = St::Released;
                }
            }
        }
        let mut t = *s;
        t.cover_epoch = if current { s.epoch } else { s.cover_epoch };
        self.normalize(&mut nr, s.phase, s.debt, t.cover_epoch);
        t.req = nr;
        if current {
            t.coverage = Coverage::Pages;
        }
        t.settled_once = s.settled_once || current;
        emit(Action::SettleFinite { i: i as u8 }, t);
    }

    pub fn settle_chain(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if !(r.st == St::Inflight && r.kind == Kind::Chain) {
            return;
        }
        let rules = self.rules();
        if s.chain_epoch != s.epoch {
            // A newer invalidation: start the replacement chain (P5).
            for k in self.free(s) {
                let mut t = *s;
                t.req[i].st = St::Settled;
                t.req[k] = Self::new_req(s, Kind::Chain);
                t.chain_epoch = s.epoch;
                emit(
                    Action::SettleChain {
                        i: i as u8,
                        k: Some(k as u8),
                    },
                    t,
                );
            }
        } else if s.failure != Failure::None || (rules.unified_family() && s.debt == Debt::Full) {
            if rules == Rules::OldRecover {
                // Abandon: debt stays full, nothing restarts.
                let mut t = *s;
                t.req[i].st = St::Settled;
                t.phase = Phase::Idle;
                t.debt = Debt::Full;
                emit(
                    Action::SettleChain {
                        i: i as u8,
                        k: None,
                    },
                    t,
                );
            } else {
                // Abandon and start the full-source read the overlap replaced.
                for k in self.free(s) {
                    let mut t = *s;
                    t.req[i].st = St::Settled;
                    t.req[k] = Self::new_req(s, Kind::Full);
                    t.phase = Phase::FullHeld;
                    t.debt = Debt::Full;
                    emit(
                        Action::SettleChain {
                            i: i as u8,
                            k: Some(k as u8),
                        },
                        t,
                    );
                }
            }
        } else {
            let mut t = *s;
            t.req[i].st = St::Settled;
            if !rules.min_family() {
                self.release_all_settled_except(&mut t.req, i);
            }
            self.normalize(&mut t.req, Phase::Idle, Debt::None, s.epoch);
            t.phase = Phase::Idle;
            t.debt = Debt::None;
            t.coverage = Coverage::Chain;
            t.settled_once = true;
            t.cover_epoch = s.epoch;
            emit(
                Action::SettleChain {
                    i: i as u8,
                    k: None,
                },
                t,
            );
        }
    }

    pub fn settle_full(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if !(r.st == St::Inflight && r.kind == Kind::Full) {
            return;
        }
        let mut t = *s;
        t.req[i].st = St::Settled;
        if self.rules().min_family() {
            self.normalize(&mut t.req, Phase::Idle, Debt::None, r.ep);
        } else {
            self.release_all_settled_except(&mut t.req, i);
        }
        t.phase = Phase::Idle;
        // The fix: a full read an invalidation overtook leaves bounded debt behind it.
        t.debt = if self.rules() == Rules::UnifiedMinRecheck && r.ep < s.epoch {
            Debt::Bounded
        } else {
            Debt::None
        };
        t.coverage = Coverage::Full;
        t.failure = Failure::None;
        t.settled_once = true;
        t.cover_epoch = r.ep;
        emit(Action::SettleFull { i: i as u8 }, t);
    }

    pub fn fail(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if r.st != St::Inflight {
            return;
        }
        let rules = self.rules();
        let finished_before =
            s.phase == Phase::Idle && s.debt == Debt::None && s.failure == Failure::None;
        let authoritative = matches!(r.kind, Kind::Chain | Kind::Full);
        let f = if authoritative {
            Failure::Own
        } else if s.failure == Failure::None {
            if r.sup {
                Failure::Superseded
            } else {
                Failure::Own
            }
        } else {
            s.failure
        };
        let ph = if authoritative { Phase::Idle } else { s.phase };
        let upgrade_only = rules.unified_family() && r.kind == Kind::Finite && r.sup;
        let recover = !upgrade_only && r.sup && finished_before && rules != Rules::OldRecover;
        let mut base = *s;
        base.req[i].st = St::Failed;
        base.failure = if upgrade_only { s.failure } else { f };
        base.debt = if upgrade_only
            && s.coverage == Coverage::Full
            && s.phase == Phase::Idle
            && s.debt == Debt::None
        {
            s.debt
        } else {
            Debt::Full
        };
        if recover {
            for k in self.free(s) {
                let mut t = base;
                t.req[k] = Self::new_req(s, Kind::Full);
                t.phase = Phase::FullHeld;
                emit(
                    Action::Fail {
                        i: i as u8,
                        k: Some(k as u8),
                    },
                    t,
                );
            }
        } else {
            let mut t = base;
            t.phase = if upgrade_only { s.phase } else { ph };
            emit(
                Action::Fail {
                    i: i as u8,
                    k: None,
                },
                t,
            );
        }
    }

    /// `TypeOK`, widened to every variable's domain under the constants.
    pub fn type_ok(&self, s: &State) -> bool {
        let me = self.bounds.max_epoch;
        let in_use_ok = self.ids().all(|i| {
            let r = s.req[i];
            r.ep <= me && ((r.st == St::Unused) == (r.kind == Kind::None))
        });
        let unused_beyond = (self.bounds.ids..MAX_IDS).all(|i| s.req[i] == UNUSED);
        s.epoch <= me && s.chain_epoch <= me && s.cover_epoch <= me && in_use_ok && unused_beyond
    }

    /// `ChainHeld`.
    pub fn chain_held(&self, s: &State) -> bool {
        !(s.phase == Phase::Idle && s.debt == Debt::None && s.coverage == Coverage::Chain)
            || self.ids().any(|i| {
                let r = s.req[i];
                r.kind == Kind::Chain && r.ep == s.cover_epoch && r.st == St::Settled
            })
    }

    /// `NoLeak`.
    pub fn no_leak(&self, s: &State) -> bool {
        !(s.phase == Phase::Idle && s.debt == Debt::None && !self.any_inflight(s))
            || self
                .ids()
                .all(|i| s.req[i].st != St::Settled || s.req[i].ep >= s.cover_epoch)
    }

    /// `NoStrandedStaleFailure`.
    pub fn no_stranded_stale_failure(&self, s: &State) -> bool {
        s.failure != Failure::Superseded || s.phase != Phase::Idle || self.any_inflight(s)
    }

    /// `NoLostInvalidation == (phase = "idle" /\ debt = "none") => coverEpoch = epoch`.
    pub fn no_lost_invalidation(&self, s: &State) -> bool {
        !(s.phase == Phase::Idle && s.debt == Debt::None) || s.cover_epoch == s.epoch
    }

    /// The variables that differ between `a` and `b`, as `name: old -> new` lines.
    pub fn diff(&self, a: &State, b: &State) -> Vec<String> {
        let mut out = Vec::new();
        macro_rules! var {
            ($field:ident, $name:literal) => {
                if a.$field != b.$field {
                    out.push(format!("{}: {} -> {}", $name, a.$field, b.$field));
                }
            };
        }
        var!(epoch, "epoch");
        var!(debt, "debt");
        var!(phase, "phase");
        var!(chain_epoch, "chainEpoch");
        var!(failure, "failure");
        var!(coverage, "coverage");
        var!(settled_once, "settledOnce");
        var!(cover_epoch, "coverEpoch");
        for i in self.ids() {
            if a.req[i] != b.req[i] {
                out.push(format!(
                    "req[{}]: {} -> {}",
                    i + 1,
                    ReqFmt(a.req[i]),
                    ReqFmt(b.req[i])
                ));
            }
        }
        out
    }

    /// Every variable of `s`, one `name = value` per entry.
    pub fn show(&self, s: &State) -> Vec<String> {
        let mut out = vec![
            format!("epoch = {}", s.epoch),
            format!("debt = {}", s.debt),
            format!("phase = {}", s.phase),
            format!("chainEpoch = {}", s.chain_epoch),
            format!("failure = {}", s.failure),
            format!("coverage = {}", s.coverage),
            format!("settledOnce = {}", s.settled_once),
            format!("coverEpoch = {}", s.cover_epoch),
        ];
        for i in self.ids() {
            out.push(format!("req[{}] = {}", i + 1, ReqFmt(s.req[i])));
        }
        out
    }
}

struct ReqFmt(Req);

impl fmt::Display for ReqFmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        if r.st == St::Unused {
            return f.write_str("unused");
        }
        write!(f, "{} ep={} {}", r.kind, r.ep, r.st)?;
        if r.sup {
            f.write_str(" sup")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_codes_round_trip() {
        let actions = [
            Action::IssueFinite { k: 3 },
            Action::Invalidate,
            Action::StartRepair { k: 0 },
            Action::StartFull { k: 7 },
            Action::ExplicitRetry { k: 2 },
            Action::SettleFinite { i: 5 },
            Action::SettleChain { i: 1, k: Some(4) },
            Action::SettleChain { i: 1, k: None },
            Action::SettleFull { i: 6 },
            Action::Fail { i: 2, k: None },
            Action::Fail { i: 2, k: Some(0) },
        ];
        for a in actions {
            assert_eq!(Action::decode(a.encode()), a);
        }
    }

    #[test]
    fn rule_names_round_trip() {
        for r in Rules::ALL {
            assert_eq!(Rules::parse(r.name()), Some(r));
        }
        assert_eq!(Rules::parse("bogus"), None);
    }
}
