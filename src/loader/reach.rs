//! A repair's reach: a chain or full read that walks toward a window far from its anchor
//! keeps only the pages the window and its prefetch need. Pages it walks past are handed back
//! as soon as they are read (their cursors are all it needs), so a repair or retry during a
//! far move holds no more than the window's share of the bound.

use super::cursor::CursorPool;
use super::outbox::Outbox;
use super::requests::Work;
use super::view::Want;

impl Work {
    /// Hands back the staged pages that lie wholly outside `want`: forward pages before its
    /// start (while no backward step is owed), and the backward pages nearest the anchor
    /// that lie after its end, with every forward page (which lie after them). The anchor
    /// moves to the first page kept, so positions and cursors stay consistent.
    pub(super) fn keep_within(&mut self, want: &Want, cursors: &mut CursorPool, out: &mut Outbox) {
        if self.ranged.is_some() {
            return;
        }
        // Forward pages before the window: the anchor moves past them.
        while self.back_target == 0
            && self.staged_back.is_empty()
            && self.staged.len() > 1
            && self.staged[0].start + u64::from(self.staged[0].count) <= want.start
        {
            let p = self.staged.remove(0);
            let n = u64::from(p.count);
            self.release_slot(p.slot, out);
            self.base_offset += n;
            self.staged_items -= n;
            self.target = self.target.saturating_sub(n);
            self.counted = self.counted.map(|c| c + n);
            let old = std::mem::replace(&mut self.base_cursor, p.end_cursor.clone());
            cursors.recycle(old);
            let old = std::mem::replace(&mut self.back_cursor, p.end_cursor);
            cursors.recycle(old);
            for q in self.staged.iter_mut() {
                q.start -= n;
            }
        }
        // Backward pages after the window (the anchor lies past it): the nearest goes, with
        // the forward pages, while another backward page remains.
        while self.staged_back.len() > 1 {
            let n = u64::from(self.staged_back[0].count);
            if self.base_offset.saturating_sub(n) < want.end {
                break;
            }
            let p = self.staged_back.remove(0);
            self.release_slot(p.slot, out);
            for q in std::mem::take(&mut self.staged) {
                self.release_slot(q.slot, out);
                cursors.recycle(q.end_cursor);
            }
            self.staged_items = 0;
            self.reached_end = false;
            self.base_offset -= n;
            self.staged_back_items -= n;
            self.back_target = self.back_target.saturating_sub(n);
            self.counted = self.counted.map(|c| c.saturating_sub(n));
            // The view now ends where the dropped page started: the next page's end.
            let end = self.staged_back[0].end_cursor.clone();
            let old = std::mem::replace(&mut self.base_cursor, end.clone());
            cursors.recycle(old);
            let old = std::mem::replace(&mut self.tail, end);
            cursors.recycle(old);
            cursors.recycle(p.end_cursor);
        }
    }

    fn release_slot(&mut self, slot: u32, out: &mut Outbox) {
        if let Some(a) = self.acqs[slot as usize].take() {
            out.release(a);
        }
    }
}
