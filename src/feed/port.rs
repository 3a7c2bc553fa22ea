//! What a feed is plugged into: the loader it drives ([`Ledger`]), the host's load and
//! release ([`Source`]), and how it starts a thread ([`Spawn`]).
//!
//! The feed knows nothing of the C ABI; the library's FFI layer implements these three over a
//! loader handle, the host's C function pointers and POSIX threads.

/// How the loader took an answer the feed gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Took {
    /// Current: in the view, or will be when its request commits.
    Current,
    /// Stale: superseded or late; the loader released its acquisition (or will).
    Stale,
    /// The cursor did not advance: a host bug, recorded as an own failure with its backoff.
    CursorStalled,
}

/// The library's result codes (`loader_result`) with which the loader refuses an answer
/// because the read has none left to give: it was never the loader's (`UNKNOWN_READ`), or the
/// loader answered it already (`ALREADY_ANSWERED`: let go of at its read timeout and
/// forgotten since, or answered through the feed's handle by the host). Such a page is no
/// bug of the load: the feed hands it back and reports nothing.
pub const UNKNOWN_READ: i32 = 4;
/// See [`UNKNOWN_READ`].
pub const ALREADY_ANSWERED: i32 = 5;

/// Whether a settle refused with `code` only says that the read needs no answer.
pub fn answered_elsewhere(code: i32) -> bool {
    code == UNKNOWN_READ || code == ALREADY_ANSWERED
}

/// What the loader's state says about quiescence, read in one look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// No read outstanding and no failure recorded.
    pub quiescent: bool,
    /// The source changed and the view shows the old items until a re-read commits.
    pub revalidating: bool,
    /// The loader's own failure is recorded: a retry is due (by the backoff, or the user).
    pub own_failure: bool,
    /// Reads issued and not yet answered.
    pub outstanding: u64,
    /// A deadline is armed (a backoff retry, a read timeout), seen in the same look.
    pub armed: bool,
    /// The loader is freed (or poisoned): nothing more will happen in it.
    pub gone: bool,
}

/// The loader a feed drives. Every method may be called from any thread at any time; the
/// loader's callbacks (`issue`, `cancel`) come back into the feed on the calling thread.
pub trait Ledger: Send + Sync {
    /// Answers `read_id` with a page. `Err` with the library's result code when the loader
    /// refused it (then the acquisition is still the feed's).
    fn settle(
        &self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
    ) -> Result<Took, i32>;
    /// Answers `read_id` with a failure.
    fn fail(&self, read_id: u64);
    /// Lets `read_id` go: free for a read the loader hinted as no longer needed.
    fn abandon(&self, read_id: u64);
    /// The loader's clock moved to `now_ms`: backoff retries and read timeouts fire.
    fn tick(&self, now_ms: u64);
    /// When `tick` is due next, on the same clock; `None` for never.
    fn next_deadline(&self) -> Option<u64>;
    /// The state, in one look.
    fn status(&self) -> Status;
}

/// One read's page, as the host's load returned it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The host's token for the items.
    pub acquisition: u64,
    /// How many items.
    pub count: u32,
    /// Where the next read that way starts (copied from the host's memory).
    pub next_cursor: Vec<u8>,
    /// The source's end (start, for a backward read) was reached.
    pub end_of_source: bool,
}

/// What a load came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A page.
    Page(Loaded),
    /// The load failed: the loader's backoff retries the read.
    Failed,
    /// The load returned a page the loader cannot take (this result code says why, a cursor
    /// pointer that is NULL, say): a bug in the load. The page goes back to the host.
    Refused {
        /// The page's token.
        acquisition: u64,
        /// The library's result code.
        code: i32,
    },
}

/// A read as the feed hands it to its [`Source`]: the feed needs only its id and limit.
pub trait Job: Send + 'static {
    /// The read's id, as the loader named it.
    fn read_id(&self) -> u64;
    /// At most this many items.
    fn limit(&self) -> u32;
}

/// The host's side: the load and the release of a page the loader never got.
pub trait Source: Send + Sync + 'static {
    /// The reads the feed runs.
    type Read: Job;
    /// Runs the host's load for `read` on the calling thread. It may end the thread (a C
    /// host's `pthread_exit`): the feed notices.
    fn load(&self, read: &Self::Read) -> Outcome;
    /// Hands back a page the loader never accepted (a cancelled read's, a refused one's).
    fn release(&self, acquisition: u64);
}

/// A thread the feed started, to join or let go.
pub trait Thread: Send {
    /// Waits for the thread to end.
    fn join(self: Box<Self>);
    /// Lets the thread run on alone; it frees its own resources when it ends.
    fn detach(self: Box<Self>);
}

/// Starts threads for the feed.
pub trait Spawn: Send + Sync + 'static {
    /// Starts `run` on a new thread; `None` if none can be started. A thread that ends inside
    /// `run` (its load ended it) must not abort the process: no `catch_unwind` may be on its
    /// stack.
    fn spawn(&self, run: Box<dyn FnOnce() + Send>) -> Option<Box<dyn Thread>>;
}
