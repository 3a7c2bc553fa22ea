//! Letting reads go: `abandon`, and the loader's memory of the reads it let go of.
//!
//! The host gives up on a read, or a superseded read is let go (abandoned or timed out); a
//! bounded list remembers them, so that a late answer is stale.

use super::{Answer, Kind, LedgerError, Loader, LoaderError};

impl Loader {
    /// The host gives up on read `read_id` and will not answer it. For a read the loader no
    /// longer needed (it was superseded: `Effect::Cancel` hinted it, if the host hears
    /// hints) this costs nothing: no debt, no re-read, and the reads it blocked may start.
    /// For a read still needed it is a failure, as [`Loader::fail`]. An answer that arrives
    /// later anyway is classified stale, and its acquisition is released at once. Abandoning a
    /// read the loader already let go of (its timeout came first) is stale and changes
    /// nothing.
    pub fn abandon(&mut self, read_id: u64) -> Result<Answer, LoaderError> {
        let r = self.abandon_unrecorded(read_id);
        self.note(super::record::Call::Abandon(read_id), &r);
        r
    }

    fn abandon_unrecorded(&mut self, read_id: u64) -> Result<Answer, LoaderError> {
        self.open()?;
        let at = match self.reads.find(read_id) {
            Ok(at) => at,
            // Already let go of (its timeout came first): nothing more to do; a late answer
            // is still stale.
            Err(_) if self.abandoned_limit(read_id).is_some() => return Ok(Answer::Stale),
            Err(e) => return Err(e),
        };
        if !self.reads.get(at).superseded {
            let limit = self.reads.get(at).limit;
            let answer = self.fail_unrecorded(read_id)?;
            self.remember_abandoned(read_id, limit);
            return Ok(answer);
        }
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        self.let_go(at)?;
        self.pump();
        Ok(Answer::Stale)
    }

    /// Lets go of the superseded read at `at`: its request ends as an empty answer would end
    /// it (stale: it costs no debt), nothing enters the view, and a late answer is expected.
    pub(super) fn let_go(&mut self, at: usize) -> Result<(), LoaderError> {
        let read = self.reads.answer(at);
        let read_id = self.reads.last_answered();
        self.pools.cursors.recycle(read.cursor);
        // Its mark of a change ahead, if it had one: nothing of it enters the view.
        if let Some(c) = self.reads.take_ahead(read_id) {
            self.pools.cursors.recycle(c);
        }
        if read.kind == Kind::Finite {
            self.requests.live(read.request).read = None;
            self.ledger.settle(read.request, &mut self.scratch)?;
        } else {
            if self.repair_retried == Some(read_id) {
                self.repair_retried = None;
            }
            self.fail_request(read.request, true)?;
        }
        self.out.stats.abandoned += 1;
        self.remember_abandoned(read_id, read.limit);
        Ok(())
    }

    /// Remembers that read `read_id` (of `limit` items) was let go of.
    pub(super) fn remember_abandoned(&mut self, read_id: u64, limit: u32) {
        const KEEP: usize = 4096;
        if self.abandoned.len() == KEEP {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back((read_id, limit));
    }

    /// The limit of read `read_id` if it was let go of and not answered since.
    pub(super) fn abandoned_limit(&self, read_id: u64) -> Option<u32> {
        self.abandoned
            .iter()
            .find(|&&(id, _)| id == read_id)
            .map(|&(_, limit)| limit)
    }

    /// Whether `read_id` was let go of; forgets it (it is answered now).
    pub(super) fn forget_abandoned(&mut self, read_id: u64) -> bool {
        match self.abandoned.iter().position(|&(id, _)| id == read_id) {
            Some(i) => {
                self.abandoned.remove(i);
                true
            }
            None => false,
        }
    }
}
