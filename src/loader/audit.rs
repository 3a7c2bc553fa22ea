//! Who holds each acquisition: the accounting a checker audits (the view, a running repair,
//! a failed read kept for its retry), and the automatic retries spent. Read-only.

use super::{Effect, Kind, Loader};
use crate::ledger::St;

/// What keeps an acquisition the loader holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A page of the view.
    View,
    /// A page staged by a chain or full read still in flight (a running repair, or one an
    /// invalidation overtook that reads on to its commit). `request` is the ledger's id.
    Repair {
        /// The request.
        request: u64,
    },
    /// A page staged by a chain or full read that failed, kept for the retry to resume.
    Resume,
    /// Anything else: a page no rule will show, held by a request in state `st` of `kind`.
    /// The accounting says this never happens.
    Idle {
        /// The request.
        request: u64,
        /// Its kind.
        kind: Kind,
        /// Its ledger state (`None`: the ledger no longer knows it).
        st: Option<St>,
    },
}

impl Loader {
    /// Every acquisition held now, with what holds it, in no particular order.
    pub fn holders(&self) -> Vec<(u64, Holder)> {
        let mut out = Vec::new();
        for (id, w) in self.requests.iter() {
            let st = self.ledger.request(id).map(|r| r.st);
            for (slot, acq) in w.acqs.iter().enumerate() {
                let Some(acq) = *acq else { continue };
                let shown = self
                    .view
                    .pages()
                    .iter()
                    .any(|p| p.request == id && p.slot as usize == slot);
                let holder = if shown {
                    Holder::View
                } else if w.kind != Kind::Finite && st == Some(St::Inflight) {
                    Holder::Repair { request: id }
                } else if self.kept_for_retry(id, w) {
                    Holder::Resume
                } else {
                    Holder::Idle {
                        request: id,
                        kind: w.kind,
                        st,
                    }
                };
                out.push((acq, holder));
            }
        }
        if let Some(w) = &self.resume {
            out.extend(w.acqs.iter().flatten().map(|&a| (a, Holder::Resume)));
        }
        out
    }

    /// Whether the view knows where its reads continue past empty pages after its last page
    /// (a tail cursor): a change there is not outside what the view knows.
    pub fn tail_known(&self) -> bool {
        self.view.tail_known()
    }

    /// The effects queued for the host and not yet taken.
    pub fn queued_effects(&self) -> &[Effect] {
        self.out.queued()
    }

    /// Automatic retries spent since the last successful answer (since the last commit or
    /// current page, while [`Loader::stall_held`]).
    pub fn auto_retries_spent(&self) -> u32 {
        self.backoff.retries
    }

    /// Whether a stalled cursor is among the own failures in a row: the steps that succeed on
    /// the way back to it do not start the retry count again.
    pub fn stall_held(&self) -> bool {
        self.backoff.stall_held
    }

    /// How many cursors the far-move memo holds, and the bytes they are charged.
    pub fn memo_size(&self) -> (usize, u64) {
        self.view.memo().size()
    }

    /// Where a chain or full read's staged forward pages (or a failed one's kept for its
    /// retry) stop being consecutive from its anchor, if anywhere: each must start where the
    /// one before it ended, the first at the anchor. A later trim judges pages by these
    /// positions (27daac2: kept pages shifted down were then kept past the window).
    pub fn staged_gap(&self) -> Option<String> {
        let works = self
            .requests
            .iter()
            .map(|(_, w)| w)
            .chain(self.resume.as_deref());
        for w in works {
            let mut at = w.base_offset;
            for p in &w.staged {
                if p.start != at {
                    return Some(format!(
                        "staged page starts at {} but the previous ended at {at}",
                        p.start
                    ));
                }
                at += u64::from(p.count);
            }
        }
        None
    }

    /// Whether request `id`'s record `w` is a chain or full read that failed, not retired yet,
    /// kept for its retry to resume: its pages count as the resume's (`holders`,
    /// `staged_spans`).
    fn kept_for_retry(&self, id: u64, w: &super::requests::Work) -> bool {
        w.kind != Kind::Finite
            && w.resume_at.is_some()
            && self.ledger.request(id).map(|r| r.st) != Some(St::Inflight)
    }

    /// The positions of the pages each chain or full read has staged (`None`: the failed one
    /// kept for its retry, retired or not yet), as `(request, start, count)`: forward pages
    /// from the anchor on, backward pages before it.
    pub fn staged_spans(&self) -> Vec<(Option<u64>, u64, u32)> {
        let mut out = Vec::new();
        // Keyed as `holders` keys their acquisitions (`kept_for_retry`).
        let works = self
            .requests
            .iter()
            .map(|(id, w)| ((!self.kept_for_retry(id, w)).then_some(id), w))
            .chain(self.resume.as_deref().map(|w| (None, w)));
        for (id, w) in works {
            for p in &w.staged {
                out.push((id, p.start, p.count));
            }
            let mut at = w.base_offset;
            for p in &w.staged_back {
                at = at.saturating_sub(u64::from(p.count));
                out.push((id, at, p.count));
            }
        }
        out
    }
}
