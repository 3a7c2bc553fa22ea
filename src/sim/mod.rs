//! A deterministic simulation of a host: an in-memory ordered source, out-of-order answers,
//! injected failures, source mutations and window moves, with the loader's properties checked
//! after every step.
//!
//! The source is keyed by `(key, id)` with many equal keys, so cursors must encode the
//! tiebreaker for keyset pagination to be exact. A cursor is the 8 bytes `key ++ id` (big
//! endian) of the last item read; empty is the source's start.
//!
//! A source may filter keys out, as a query with a `WHERE` clause does: a read scans up to
//! `limit` items after its cursor and returns the ones the filter keeps, so a filtered stretch
//! answers empty pages whose cursor still advances.
//!
//! Everything is driven by [`Op`]s, so a run is replayable from its op list (or from a seed,
//! through [`random_ops`]), and a property-testing framework can shrink a failing list.
//!
//! The parts: `source` (the simulated ordered source and its cursors), `op` (the steps a run
//! is made of), `host` (the host that applies them and carries out the loader's effects),
//! `checks` (the properties checked after every step, at quiescence and at close), `cost`
//! (the cost properties' budgets, checked after every step) and `run` (seeded op lists, and
//! a whole run).

mod checks;
mod cost;
mod host;
mod op;
mod run;
mod source;

pub use cost::{Costs, APPEND_COST, PAGE_FAILURE_COST};
pub use host::{Host, Violation};
pub use op::Op;
pub use run::{cost_ops, random_ops, run};
pub use source::{encode_cursor, Answer, Bounded, Item, Source};
