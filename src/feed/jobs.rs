//! Job mode: a [`Source`]'s load handed to threads the host owns. The feed's workers stay the
//! feed's and keep every rule (timeouts, cancel hints, retries, problems, closing); in job mode
//! a worker's load is a [`Hub::load`] that queues the read as a job, which a host thread takes
//! ([`Hub::next`]), runs, and answers ([`Pending::complete`]), and the worker carries that
//! answer back into the feed as if its own load had returned it.
//!
//! This file owns only the hand-over: the job queue, each job's answer, and withdrawing the
//! jobs no host thread took when the feed closes. It makes no decision about a read.

use super::Outcome;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where a job is on its way from the feed's worker to a host thread and back.
#[derive(Debug)]
enum Answer {
    /// Queued: no host thread took it yet.
    Queued,
    /// A host thread runs it.
    Taken,
    /// Answered: the worker carries this back to the feed.
    Done(Outcome),
    /// The feed closed before a host thread took it: the load never ran.
    Withdrawn,
}

/// One job: a read the feed's worker waits on.
pub struct Pending<R> {
    read: R,
    answer: Mutex<Answer>,
    done: Condvar,
}

/// Why [`Pending::complete`] took no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completed {
    /// Answered already (a second completion of the same job).
    Twice,
}

impl<R> Pending<R> {
    /// The read to load.
    pub fn read(&self) -> &R {
        &self.read
    }

    /// Answers the job with what its load came to; its worker wakes and hands it to the feed,
    /// which releases the page if the read was let go meanwhile (even after the feed closed:
    /// the worker outlives the close until this answer). An answer is taken once.
    pub fn complete(&self, outcome: Outcome) -> Result<(), Completed> {
        let mut a = lock(&self.answer);
        match *a {
            Answer::Taken => {
                *a = Answer::Done(outcome);
                drop(a);
                self.done.notify_all();
                Ok(())
            }
            _ => Err(Completed::Twice),
        }
    }
}

/// What [`Hub::next`] got instead of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoJob {
    /// The timeout passed with no job queued.
    TimedOut,
    /// The hub is closed: no job will come.
    Closed,
}

struct Queue<R> {
    jobs: VecDeque<Arc<Pending<R>>>,
    closed: bool,
}

/// The jobs of one feed in job mode: the feed's workers queue them, the host's threads take
/// them.
pub struct Hub<R> {
    queue: Mutex<Queue<R>>,
    queued: Condvar,
    /// Called (on the worker) after a job is queued: a host that waits on an event loop rather
    /// than in [`Hub::next`] is woken by it.
    ready: Option<Box<dyn Fn() + Send + Sync>>,
}

impl<R> Hub<R> {
    /// An open hub; `ready` is called after each job is queued.
    pub fn new(ready: Option<Box<dyn Fn() + Send + Sync>>) -> Self {
        Hub {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            queued: Condvar::new(),
            ready,
        }
    }

    /// A feed worker's load: queues `read` as a job and waits for a host thread's answer. A job
    /// the close withdrew before any host thread took it comes back as [`Outcome::Failed`]
    /// (the feed is closing: nothing retries it).
    pub fn load(&self, read: R) -> Outcome {
        let job = Arc::new(Pending {
            read,
            answer: Mutex::new(Answer::Queued),
            done: Condvar::new(),
        });
        {
            let mut q = lock(&self.queue);
            if q.closed {
                return Outcome::Failed;
            }
            q.jobs.push_back(Arc::clone(&job));
        }
        self.queued.notify_one();
        if let Some(ready) = &self.ready {
            ready();
        }
        let mut a = lock(&job.answer);
        loop {
            match std::mem::replace(&mut *a, Answer::Withdrawn) {
                Answer::Done(outcome) => return outcome,
                Answer::Withdrawn => return Outcome::Failed,
                waiting => *a = waiting,
            }
            a = job.done.wait(a).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The next job, waiting up to `timeout` (`None`: as long as it takes) for one. The caller
    /// runs its load and must [`Pending::complete`] it, whatever the load came to.
    pub fn next(&self, timeout: Option<Duration>) -> Result<Arc<Pending<R>>, NoJob> {
        let end = timeout.map(|t| Instant::now() + t);
        let mut q = lock(&self.queue);
        loop {
            if q.closed {
                return Err(NoJob::Closed);
            }
            if let Some(job) = q.jobs.pop_front() {
                *lock(&job.answer) = Answer::Taken;
                return Ok(job);
            }
            q = match end {
                None => self.queued.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(end) => {
                    let now = Instant::now();
                    if now >= end {
                        return Err(NoJob::TimedOut);
                    }
                    self.queued
                        .wait_timeout(q, end - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }

    /// Closes the hub: the jobs no host thread took are withdrawn (their workers go back to
    /// the closing feed), and every [`Hub::next`] returns [`NoJob::Closed`]. Jobs already
    /// taken still wait for their answer. False if it was closed already.
    pub fn close(&self) -> bool {
        let withdrawn: Vec<_> = {
            let mut q = lock(&self.queue);
            if q.closed {
                return false;
            }
            q.closed = true;
            q.jobs.drain(..).collect()
        };
        self.queued.notify_all();
        for job in withdrawn {
            *lock(&job.answer) = Answer::Withdrawn;
            job.done.notify_all();
        }
        true
    }

    /// How many jobs are queued, not yet taken.
    pub fn queued(&self) -> usize {
        lock(&self.queue).jobs.len()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
