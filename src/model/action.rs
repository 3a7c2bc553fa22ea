//! `Action`: one step of `Next`, named as the module names it, with its request parameters.

use std::fmt;

/// An action with its request parameters. `i` is the request the action acts on; `k` the slot
/// of the request it starts (the module's `\E k \in Free`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `IssueFinite`, starting slot `k`.
    IssueFinite {
        /// The slot it starts.
        k: u8,
    },
    /// `Invalidate`.
    Invalidate,
    /// `StartRepair`, starting slot `k`.
    StartRepair {
        /// The slot it starts.
        k: u8,
    },
    /// `StartFull`, starting slot `k`.
    StartFull {
        /// The slot it starts.
        k: u8,
    },
    /// `ExplicitRetry`, starting slot `k`.
    ExplicitRetry {
        /// The slot it starts.
        k: u8,
    },
    /// `SettleFinite(i)`.
    SettleFinite {
        /// The request that settles.
        i: u8,
    },
    /// `SettleChain(i)`, starting slot `k` when it replaces or abandons the chain.
    SettleChain {
        /// The request that settles.
        i: u8,
        /// The slot it starts, if any.
        k: Option<u8>,
    },
    /// `SettleFull(i)`.
    SettleFull {
        /// The request that settles.
        i: u8,
    },
    /// `Fail(i)`, starting slot `k` when it recovers with a full-source read.
    Fail {
        /// The request that fails.
        i: u8,
        /// The slot it starts, if any.
        k: Option<u8>,
    },
    /// `ResumeAnswered(i)` (`spec/LoaderLedgerEscalate.tla`): the read that chain `i`, a
    /// repair failure's retry, resumed at was answered; the chain reads on, no longer resumed.
    ResumeAnswered {
        /// The resumed chain.
        i: u8,
    },
}

impl Action {
    /// The names of the actions in the module's `Next`, in its order; indexed by
    /// [`Action::tag`].
    pub const NAMES: [&'static str; 10] = [
        "IssueFinite",
        "Invalidate",
        "StartRepair",
        "StartFull",
        "ExplicitRetry",
        "SettleFinite",
        "SettleChain",
        "SettleFull",
        "Fail",
        "ResumeAnswered",
    ];

    /// The action's position in `Next`.
    pub fn tag(self) -> u8 {
        match self {
            Action::IssueFinite { .. } => 0,
            Action::Invalidate => 1,
            Action::StartRepair { .. } => 2,
            Action::StartFull { .. } => 3,
            Action::ExplicitRetry { .. } => 4,
            Action::SettleFinite { .. } => 5,
            Action::SettleChain { .. } => 6,
            Action::SettleFull { .. } => 7,
            Action::Fail { .. } => 8,
            Action::ResumeAnswered { .. } => 9,
        }
    }

    /// The action's name in the module.
    pub fn name(self) -> &'static str {
        Action::NAMES[self.tag() as usize]
    }

    /// A compact code, for storing the action that reached a state.
    pub fn encode(self) -> u16 {
        let (i, k) = match self {
            Action::IssueFinite { k }
            | Action::StartRepair { k }
            | Action::StartFull { k }
            | Action::ExplicitRetry { k } => (0, k + 1),
            Action::Invalidate => (0, 0),
            Action::SettleFinite { i }
            | Action::SettleFull { i }
            | Action::ResumeAnswered { i } => (i, 0),
            Action::SettleChain { i, k } | Action::Fail { i, k } => (i, k.map_or(0, |k| k + 1)),
        };
        ((self.tag() as u16) << 8) | ((i as u16) << 4) | k as u16
    }

    /// The action [`Action::encode`] encoded as `code`.
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
            8 => Action::Fail {
                i,
                k: (k1 != 0).then_some(k),
            },
            _ => Action::ResumeAnswered { i },
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
            | Action::ResumeAnswered { i }
            | Action::SettleChain { i, k: None }
            | Action::Fail { i, k: None } => write!(f, "{}({})", self.name(), i + 1),
            Action::SettleChain { i, k: Some(k) } | Action::Fail { i, k: Some(k) } => {
                write!(f, "{}({}, new {})", self.name(), i + 1, k + 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: [Action; 12] = [
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
        Action::ResumeAnswered { i: 3 },
    ];

    #[test]
    fn action_codes_round_trip() {
        for a in SAMPLES {
            assert_eq!(Action::decode(a.encode()), a);
        }
    }

    #[test]
    fn every_name_is_some_action_s() {
        for (tag, name) in Action::NAMES.iter().enumerate() {
            let a = SAMPLES.iter().find(|a| a.tag() as usize == tag);
            assert_eq!(a.map(|a| a.name()), Some(*name));
        }
    }
}
