//! A recording kept in memory: a [`Sink`](crate::loader::Sink) whose bytes the caller reads
//! back, for tests and for generating the corpus of recorded runs.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A shared in-memory log: give [`Memory::sink`] to a loader, read [`Memory::text`] after.
#[derive(Clone, Debug, Default)]
pub struct Memory(Arc<Mutex<Vec<u8>>>);

impl Memory {
    /// A new, empty log.
    pub fn new() -> Memory {
        Memory::default()
    }

    /// A sink writing to this log.
    pub fn sink(&self) -> crate::loader::Sink {
        Box::new(self.clone())
    }

    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

impl Write for Memory {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
