//! The checker's first canonical form, kept for comparison (`loader-check --loader --canon
//! text`): the host and its loader, with ids renumbered and counters dropped, so that two
//! interleavings that reach the same state are explored once. `canon` (the structural form)
//! replaced it: this one is about ten times slower, and it classifies numbers by field
//! name, so it kept two request ids raw (a read's `request_id`, a ranged run's page names)
//! and dropped the host's prepared answers.
//!
//! It works on the `Debug` text of the state, parsed into a tree. Numbers are classified by
//! the field that holds them (a request id, a read id, an acquisition, an epoch, a time);
//! each class is renumbered by rank, keeping 0 (order and equality are all the loader
//! compares ids by). Times become offsets from the host's clock. Counters that only report
//! (`stats`, the change count, the buffer pools) are dropped. Maps and the host's pending
//! reads are sorted, since their order carries no meaning. A field the classes miss keeps its
//! raw value: that only costs deduplication, never soundness. The explorer checks the form
//! on the pairs it merges (see `explore`).

use std::borrow::Cow;
use std::collections::BTreeMap;

/// A node of a parsed `Debug` text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Node<'a> {
    /// A number, a name, a string, a unit variant.
    Atom(Cow<'a, str>),
    /// `Name { field: value, .. }`.
    Struct(&'a str, Vec<(&'a str, Node<'a>)>),
    /// `Name(a, b)` (name may be empty: a tuple).
    Tuple(&'a str, Vec<Node<'a>>),
    /// `[a, b]`.
    List(Vec<Node<'a>>),
    /// `{k: v, ..}`.
    Map(Vec<(Node<'a>, Node<'a>)>),
}

/// The id classes, each renumbered on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Request,
    Read,
    Acquisition,
    Epoch,
    Time,
}

/// Fields dropped from the canonical form: counters and caches that no rule reads.
const DROPPED: &[&str] = &[
    "stats",
    "announced",
    "changes",
    "pools",
    "spare",
    "scratch",
    "effects",
    "accepted",
    "released",
    "steps",
    "empty_bounded_moved",
    "prepared",
    "far_jumps",
    "located",
    "locate_buf",
    // Only `explain` reads these: when a read was issued, and what made the last own
    // failure. No rule and no property but `explained` (which does not judge them) does.
    "issued_at",
    "cause",
];

/// The class of a number held (directly or in an option or list) by `field` of a struct
/// named `owner`; `key` when it is a map's key, `index` its place in a tuple.
fn classify(owner: &str, field: &str, key: bool, index: Option<usize>) -> Option<Class> {
    match (owner, field) {
        (_, "buckets") if index == Some(0) => Some(Class::Epoch),
        (_, "request" | "inflight_finite" | "buckets" | "failed" | "repairs") => {
            Some(Class::Request)
        }
        ("Ledger", "next_id") => Some(Class::Request),
        (_, "live" | "map") if key => Some(Class::Request),
        (_, "read" | "read_id" | "next" | "last") => Some(Class::Read),
        (_, "list" | "abandoned") if index == Some(0) => Some(Class::Read),
        (_, "acquisition" | "acqs" | "next_acq") => Some(Class::Acquisition),
        ("Host", "held") if key => Some(Class::Acquisition),
        (_, "epoch" | "ep" | "chain_epoch" | "cover_epoch") => Some(Class::Epoch),
        (_, "now" | "deadline" | "superseded_at" | "issued_at") => Some(Class::Time),
        _ => None,
    }
}

struct Parser<'a> {
    text: &'a str,
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn skip(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> u8 {
        self.skip();
        self.s.get(self.at).copied().unwrap_or(0)
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == c {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> &'a str {
        self.skip();
        let from = self.at;
        if self.s.get(self.at) == Some(&b'"') {
            self.at += 1;
            while self.at < self.s.len() && self.s[self.at] != b'"' {
                self.at += if self.s[self.at] == b'\\' { 2 } else { 1 };
            }
            self.at += 1;
        } else {
            while self.at < self.s.len() && !b" \t\n{}[](),:".contains(&self.s[self.at]) {
                self.at += 1;
            }
        }
        // Words end at ASCII punctuation, so the slice is on character boundaries.
        self.text.get(from..self.at.min(self.s.len())).unwrap_or("")
    }

    fn items(&mut self, close: u8) -> Vec<Node<'a>> {
        let mut v = Vec::new();
        while !self.eat(close) && self.at < self.s.len() {
            v.push(self.node());
            self.eat(b',');
        }
        v
    }

    fn node(&mut self) -> Node<'a> {
        match self.peek() {
            b'[' => {
                self.at += 1;
                Node::List(self.items(b']'))
            }
            b'(' => {
                self.at += 1;
                Node::Tuple("", self.items(b')'))
            }
            b'{' => {
                self.at += 1;
                let mut v = Vec::new();
                while !self.eat(b'}') && self.at < self.s.len() {
                    let k = self.node();
                    self.eat(b':');
                    v.push((k, self.node()));
                    self.eat(b',');
                }
                Node::Map(v)
            }
            _ => {
                let name = self.word();
                match self.peek() {
                    b'(' => {
                        self.at += 1;
                        Node::Tuple(name, self.items(b')'))
                    }
                    b'{' => {
                        self.at += 1;
                        let mut fields = Vec::new();
                        while !self.eat(b'}') && self.at < self.s.len() {
                            let f = self.word();
                            self.eat(b':');
                            fields.push((f, self.node()));
                            self.eat(b',');
                        }
                        Node::Struct(name, fields)
                    }
                    _ => Node::Atom(Cow::Borrowed(name)),
                }
            }
        }
    }
}

/// Where a number sits, for [`classify`].
#[derive(Clone, Copy)]
struct Place<'a> {
    owner: &'a str,
    field: &'a str,
    key: bool,
    index: Option<usize>,
}

/// Walks the tree: drops the dropped fields, and calls `f` on every number with its class.
fn walk(node: &mut Node<'_>, at: Place<'_>, f: &mut dyn FnMut(&mut Cow<'_, str>, Class)) {
    match node {
        Node::Atom(a) => {
            if let Some(c) = classify(at.owner, at.field, at.key, at.index) {
                if a.bytes().all(|b| b.is_ascii_digit()) && !a.is_empty() {
                    f(a, c);
                }
            }
        }
        Node::Struct(name, fields) => {
            fields.retain(|(k, _)| !DROPPED.contains(k));
            let owner: &str = name;
            for (k, v) in fields.iter_mut() {
                let place = Place {
                    owner,
                    field: k,
                    key: false,
                    index: None,
                };
                walk(v, place, f);
            }
        }
        Node::Tuple(name, items) => {
            // A tuple struct (`Some`, `Cursor`) keeps its field's place; a bare tuple numbers
            // its elements.
            let bare = name.is_empty();
            let is_cursor = *name == "Cursor";
            for (i, v) in items.iter_mut().enumerate() {
                if is_cursor {
                    continue;
                }
                let place = Place {
                    index: if bare { Some(i) } else { at.index },
                    ..at
                };
                walk(v, place, f);
            }
        }
        Node::List(items) => {
            for v in items.iter_mut() {
                walk(v, Place { index: None, ..at }, f);
            }
        }
        Node::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                walk(k, Place { key: true, ..at }, f);
                walk(v, Place { key: false, ..at }, f);
            }
        }
    }
}

/// Sorts maps, and the list of the host's pending reads, after renumbering.
fn sort(node: &mut Node<'_>, field: &str) {
    match node {
        Node::Atom(_) => {}
        Node::Struct(_, fields) => {
            for (k, v) in fields.iter_mut() {
                sort(v, k);
            }
        }
        Node::Tuple(_, items) => items.iter_mut().for_each(|v| sort(v, field)),
        Node::List(items) => {
            items.iter_mut().for_each(|v| sort(v, field));
            if field == "pending" {
                items.sort();
            }
        }
        Node::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                sort(k, field);
                sort(v, field);
            }
            entries.sort();
        }
    }
}

fn print(node: &Node<'_>, out: &mut String) {
    match node {
        Node::Atom(a) => out.push_str(a),
        Node::Struct(name, fields) => {
            out.push_str(name);
            out.push('{');
            for (k, v) in fields {
                out.push_str(k);
                out.push(':');
                print(v, out);
                out.push(',');
            }
            out.push('}');
        }
        Node::Tuple(name, items) => {
            out.push_str(name);
            out.push('(');
            for v in items {
                print(v, out);
                out.push(',');
            }
            out.push(')');
        }
        Node::List(items) => {
            out.push('[');
            for v in items {
                print(v, out);
                out.push(',');
            }
            out.push(']');
        }
        Node::Map(entries) => {
            out.push('{');
            for (k, v) in entries {
                print(k, out);
                out.push(':');
                print(v, out);
                out.push(',');
            }
            out.push('}');
        }
    }
}

/// The canonical form of `debug` (a state's `{:?}` text), whose clock reads `now`.
pub(super) fn canonical(debug: &str, now: u64) -> String {
    let mut tree = Parser {
        text: debug,
        s: debug.as_bytes(),
        at: 0,
    }
    .node();
    let top = Place {
        owner: "",
        field: "",
        key: false,
        index: None,
    };
    // First pass: the values of each class.
    let mut seen: BTreeMap<Class, Vec<u64>> = BTreeMap::new();
    walk(&mut tree, top, &mut |a, c| {
        if let Ok(v) = a.parse::<u64>() {
            seen.entry(c).or_default().push(v);
        }
    });
    let mut rank: BTreeMap<Class, BTreeMap<u64, u64>> = BTreeMap::new();
    for (c, mut vs) in seen {
        vs.sort_unstable();
        vs.dedup();
        let zero = u64::from(vs.first() != Some(&0));
        let m = vs
            .into_iter()
            .enumerate()
            .map(|(i, v)| (v, i as u64 + zero))
            .collect();
        rank.insert(c, m);
    }
    // Second pass: renumber; times as offsets from `now`.
    walk(&mut tree, top, &mut |a, c| {
        if let Ok(v) = a.parse::<u64>() {
            *a = Cow::Owned(match c {
                Class::Time => format!("{}", i128::from(v) - i128::from(now)),
                _ => format!("{}", rank[&c][&v]),
            });
        }
    });
    sort(&mut tree, "");
    let mut out = String::with_capacity(debug.len() / 2);
    print(&tree, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn ids_are_ranked_counters_dropped_and_maps_sorted() {
        let a = "Host { loader: L { live: {7: R { ep: 3 }, 5: R { ep: 2 }}, stats: S { n: 9 } }, now: 40, deadline: Some(50) }";
        let b = "Host { loader: L { live: {1: R { ep: 2 }, 2: R { ep: 3 }}, stats: S { n: 1 } }, now: 10, deadline: Some(20) }";
        assert_eq!(canonical(a, 40), canonical(b, 10));
        // Another order of epochs is another state.
        let c = "Host { loader: L { live: {1: R { ep: 3 }, 2: R { ep: 2 }}, stats: S { n: 1 } }, now: 10, deadline: Some(20) }";
        assert_ne!(canonical(a, 40), canonical(c, 10));
        // A different deadline is another state.
        let d = "Host { loader: L { live: {7: R { ep: 3 }, 5: R { ep: 2 }}, stats: S { n: 9 } }, now: 40, deadline: Some(51) }";
        assert_ne!(canonical(a, 40), canonical(d, 40));
    }

    #[test]
    fn cursor_bytes_are_kept() {
        let a = "W { read: Some(4), base_cursor: Cursor([00, 07]) }";
        let b = "W { read: Some(9), base_cursor: Cursor([00, 08]) }";
        assert_ne!(canonical(a, 0), canonical(b, 0));
        let c = "W { read: Some(9), base_cursor: Cursor([00, 07]) }";
        assert_eq!(canonical(a, 0), canonical(c, 0));
    }
}
