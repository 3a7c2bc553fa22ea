//! Pins: which acquisitions the host's pinned views (`loader_view_acquire`) list, and the
//! `release` callbacks held back until the last view listing each is released.
//!
//! A loader lets go of an acquisition under its lock; whether a view pins it is decided in the
//! same critical section (the registry's lock is taken inside the loader's), so a view made
//! before the release sees the acquisition pinned, and one made after does not list it. A
//! `release` is never dropped, only moved: held here, it comes back out when the last pin goes,
//! so exactly-once release still holds.
//!
//! Pins count by token value. Two accepted acquisitions with the same token are one to this
//! registry: a view listing either defers both. That only delays a release, never loses one.

use crate::loader::Effect;
use std::collections::HashMap;

/// One token's pins and held-back releases.
#[derive(Debug, Default, Clone, Copy)]
struct Pin {
    /// Pinned views listing the token (once per page listing it).
    views: u64,
    /// `release` callbacks owed for it and held back.
    deferred: u64,
}

/// The pins of one loader.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    by_token: HashMap<u64, Pin>,
}

impl Pins {
    /// Pins every token in `tokens` once more.
    pub(crate) fn pin(&mut self, tokens: impl IntoIterator<Item = u64>) {
        for t in tokens {
            self.by_token.entry(t).or_default().views += 1;
        }
    }

    /// Moves every `Release` of a pinned token out of `effects`, keeping the rest in order.
    /// Costs nothing while no view is pinned.
    pub(crate) fn hold_back(&mut self, effects: &mut Vec<Effect>) {
        if self.by_token.is_empty() {
            return;
        }
        effects.retain(|e| match e {
            Effect::Release { acquisition } => match self.by_token.get_mut(acquisition) {
                Some(pin) => {
                    pin.deferred += 1;
                    false
                }
                None => true,
            },
            _ => true,
        });
    }

    /// Unpins every token in `tokens` once, and returns the releases no pin holds back any
    /// more, in the order of `tokens`.
    pub(crate) fn unpin(&mut self, tokens: impl IntoIterator<Item = u64>) -> Vec<Effect> {
        let mut due = Vec::new();
        for t in tokens {
            let Some(pin) = self.by_token.get_mut(&t) else {
                continue;
            };
            pin.views = pin.views.saturating_sub(1);
            if pin.views == 0 {
                let n = pin.deferred;
                self.by_token.remove(&t);
                due.extend((0..n).map(|_| Effect::Release { acquisition: t }));
            }
        }
        due
    }

    /// How many tokens pinned views hold, and how many releases they hold back.
    pub(crate) fn held(&self) -> (usize, u64) {
        (self.by_token.len(), self.deferred())
    }

    /// Releases held back, over every token.
    fn deferred(&self) -> u64 {
        self.by_token.values().map(|p| p.deferred).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(t: u64) -> Effect {
        Effect::Release { acquisition: t }
    }

    fn tokens(effects: &[Effect]) -> Vec<u64> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Release { acquisition } => Some(*acquisition),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_unpinned_release_passes_through() {
        let mut pins = Pins::default();
        pins.pin([1]);
        let mut effects = vec![release(2), Effect::Changed];
        pins.hold_back(&mut effects);
        assert_eq!(tokens(&effects), [2]);
        assert_eq!(effects.len(), 2);
    }

    #[test]
    fn a_pinned_release_waits_for_the_last_view() {
        let mut pins = Pins::default();
        pins.pin([1, 2]);
        pins.pin([1]);
        let mut effects = vec![release(1), Effect::Changed, release(2)];
        pins.hold_back(&mut effects);
        assert!(matches!(effects[..], [Effect::Changed]));
        assert_eq!(pins.deferred(), 2);
        assert_eq!(tokens(&pins.unpin([1, 2])), [2]);
        assert_eq!(tokens(&pins.unpin([1])), [1]);
        assert_eq!(pins.deferred(), 0);
        assert!(pins.by_token.is_empty());
    }

    #[test]
    fn unpinning_without_a_release_owes_nothing() {
        let mut pins = Pins::default();
        pins.pin([5]);
        assert!(pins.unpin([5]).is_empty());
        let mut effects = vec![release(5)];
        pins.hold_back(&mut effects);
        assert_eq!(tokens(&effects), [5]);
    }

    #[test]
    fn a_shared_token_defers_each_of_its_releases_once() {
        let mut pins = Pins::default();
        pins.pin([7]);
        let mut effects = vec![release(7), release(7)];
        pins.hold_back(&mut effects);
        assert!(effects.is_empty());
        assert_eq!(tokens(&pins.unpin([7])), [7, 7]);
    }
}
