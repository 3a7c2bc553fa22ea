//! How a run reports: trace, failure message, result tally, and which panics are crashes.

use super::world::World;
use super::R;
use std::collections::BTreeMap;
use std::sync::{Mutex, Once, OnceLock};

/// `LOADER_FUZZ_TRACE=1`: print every call and callback as it happens (for reproducers).
pub(super) fn tracing() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("LOADER_FUZZ_TRACE").is_some())
}

/// `loader_test_panic` panics on purpose inside the library, which catches it. libFuzzer's
/// panic hook would abort at the panic; this hook lets that one message through quietly and
/// hands every other panic on, so a real panic inside the library is still a crash even
/// though the boundary would have turned it into `LOADER_RESULT_PANIC`.
pub(super) fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let next = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str));
            if msg.is_some_and(|m| m.starts_with("loader_test_panic")) {
                return;
            }
            next(info)
        }));
    });
}

/// `LOADER_FUZZ_STATS=1`: every checked result, by call and code, printed by `print_stats`.
type Tally = Mutex<BTreeMap<(String, String), u64>>;

fn stats() -> Option<&'static Tally> {
    static STATS: OnceLock<Option<Tally>> = OnceLock::new();
    STATS
        .get_or_init(|| std::env::var_os("LOADER_FUZZ_STATS").map(|_| Mutex::new(BTreeMap::new())))
        .as_ref()
}

/// Prints the tally `LOADER_FUZZ_STATS=1` kept: call, result code, how many times.
pub fn print_stats() {
    if let Some(s) = stats() {
        for ((call, code), n) in s.lock().expect("stats lock").iter() {
            println!("{call}\t{code}\t{n}");
        }
    }
}

/// Counts one checked result of `call`, when `LOADER_FUZZ_STATS` is set.
pub(super) fn tally(call: &str, got: impl std::fmt::Debug) {
    if let Some(s) = stats() {
        *s.lock()
            .expect("stats lock")
            .entry((call.to_string(), format!("{got:?}")))
            .or_insert(0) += 1;
    }
}

/// `Ok` (and a tally) if `got` is one of `allowed`, else what went wrong.
fn expect(call: &str, got: R, allowed: &[R]) -> Result<(), String> {
    if allowed.contains(&got) {
        tally(call, got);
        Ok(())
    } else {
        Err(format!("returned {got:?}, wanted one of {allowed:?}"))
    }
}

impl World {
    /// Panics with `what` and the last calls of the trace: the fuzzer's crash report.
    pub(super) fn fail(&self, what: String) -> ! {
        let tail = self.trace.len().saturating_sub(40);
        panic!(
            "fuzz_abi: {what}\nlast calls (of {}):\n  {}",
            self.trace.len(),
            self.trace[tail..].join("\n  ")
        )
    }

    /// Keeps `line` in the trace (and prints it under `LOADER_FUZZ_TRACE`).
    pub(super) fn log(&mut self, line: String) {
        if tracing() {
            eprintln!("{line}");
        }
        self.trace.push(line);
    }

    /// Fails the run unless `got` is one of `allowed`; `what` starts the failure message.
    pub(super) fn check(&self, call: &str, what: &str, got: R, allowed: &[R]) {
        if let Err(e) = expect(call, got, allowed) {
            self.fail(format!("{what} {e}"));
        }
    }
}
