//! One test per rule of the loader, by name, through the simulated host; the helpers they
//! share. One file per topic.

mod abandon;
mod anchored;
mod contract;
mod explain;
mod failure;
mod far;
mod finite;
mod ranged;
mod repair;
mod window;

use super::*;
use crate::ledger::Failure;
use crate::sim::{encode_cursor, Host, Op, Source};

fn host(config: Config, items: usize) -> Host {
    Host::new(config, Source::with_items(items, 5))
}

fn small() -> Config {
    Config {
        page_size: 4,
        prefetch_distance: 0,
        ..Config::default()
    }
}

fn deliver(h: &mut Host, read_id: u64) {
    let index = h.index_of(read_id);
    h.apply(Op::Deliver { index, fresh: true }).unwrap();
}

fn only_read(h: &Host) -> Read {
    let reads = h.pending_reads();
    assert_eq!(reads.len(), 1, "{reads:?}");
    reads[0].clone()
}

/// Answers reads until none is pending.
fn drain(h: &mut Host) {
    while let Some(r) = h.pending_reads().first().cloned() {
        deliver(h, r.read_id);
    }
}

fn view(h: &Host) -> Vec<crate::sim::Item> {
    h.view_items().unwrap()
}
