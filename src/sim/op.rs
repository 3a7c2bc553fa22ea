//! The steps a simulated run is made of.
//!
//! Answers, failures, source changes, window moves, time, and the host's own mistakes.

/// One step of a simulated run. Indices are taken modulo what they index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Answer a pending read with success; `fresh` reads the source now rather than using
    /// the answer computed when the read was issued.
    Deliver {
        /// Which pending read.
        index: u16,
        /// Read the source now instead of using the prepared answer.
        fresh: bool,
    },
    /// Answer a pending read with success, read from the source now, with the host's count
    /// of the items before the page's first item (`Loader::settle_counted`): the source's
    /// own, which a view the source changed under (a change not yet repaired, or not yet
    /// announced) may not agree with.
    DeliverCounted {
        /// Which pending read.
        index: u16,
    },
    /// Answer a pending read with a failure.
    Fail {
        /// Which pending read.
        index: u16,
    },
    /// Insert an item with this key, then invalidate.
    Insert {
        /// The new item's key (modulo 16).
        key: u8,
    },
    /// Delete an item, then invalidate.
    Delete {
        /// Which item.
        index: u16,
    },
    /// Move the window.
    Window {
        /// The window's first item.
        start: u16,
        /// How many items it shows.
        len: u16,
    },
    /// Move the window with the host's `locate` for a far move: `answer` modulo 3 says how
    /// it answers: the right cursor, unknown, or a wrong one (the cursor of the item three
    /// positions on).
    WindowLocated {
        /// The window's first item.
        start: u32,
        /// How many items it shows.
        len: u16,
        /// How `locate` answers.
        answer: u8,
    },
    /// Let time pass.
    Tick {
        /// How much time passes.
        ms: u16,
    },
    /// An explicit retry.
    Retry,
    /// An invalidation with no change (allowed, and must be harmless).
    Invalidate,
    /// Answer a pending read with items but an unmoved cursor: a host bug.
    Stall {
        /// Which pending read.
        index: u16,
    },
    /// Answer a pending read with the source's items now (as `Deliver` with `fresh`) but an
    /// unmoved cursor: the bug of [`Op::Stall`] on the source as it is, as a server that
    /// repeats the next key does (the loader checker's `RepeatsWithItems` host).
    Repeat {
        /// Which pending read.
        index: u16,
    },
    /// Answer a pending read with no items, an unmoved cursor and no end flag: the same bug
    /// on an empty page.
    StallEmpty {
        /// Which pending read.
        index: u16,
    },
    /// Change the source's filter to hide the keys whose bit is set (keys 0..8), then
    /// invalidate: a filtered stretch appears or goes.
    Hide {
        /// The keys to hide.
        mask: u8,
    },
    /// Insert an item with this key, then invalidate exactly the range it changed.
    InsertRanged {
        /// The new item's key (modulo 16).
        key: u8,
    },
    /// Delete an item, then invalidate exactly the range it changed.
    DeleteRanged {
        /// Which item.
        index: u32,
    },
    /// A host that lies: delete an item, then invalidate a range that misses it.
    DeleteLying {
        /// Which item.
        index: u16,
    },
    /// The host gives up on a pending read (`Loader::abandon`) but answers it later anyway.
    Abandon {
        /// Which pending read.
        index: u16,
    },
    /// The host drops a pending read it was told to cancel, and never answers it.
    Drop {
        /// Which pending read (among the cancelled ones).
        index: u16,
    },
    /// Jump to the item at `index` (modulo the length, plus one): the cursor before it, and
    /// its own position among the visible items, so positions stay the source's.
    Jump {
        /// Which item.
        index: u32,
    },
    /// Answer a pending read, a backward one with the items after its cursor, as if it were
    /// forward: a host bug (the checker's faulty host).
    MisreadBackward {
        /// Which pending read.
        index: u16,
    },
    /// The host's `issue` callback throws for the next read the loader issues: the host never
    /// sees that read, and the C layer lets it go at once (as `loader_abandon`).
    IssueThrows,
    /// Insert an item with this key and report nothing: a host bug.
    InsertSilently {
        /// The new item's key (modulo 16).
        key: u8,
    },
    /// Append `items` items after the source's last one (its key, newer ids), then report
    /// them with `Loader::appended`.
    Append {
        /// How many items.
        items: u8,
    },
}
