//! The header's CALLBACKS section names the unwind-capable functions: exactly the exports the
//! Rust source declares `extern "C-unwind"`, no more and no fewer.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Every `loader_*` function declared `extern "C-unwind" fn` in src/ffi (the callback types are
/// `extern "C-unwind" fn(`, with no name, and are not exports).
fn unwind_exports() -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi");
    let mut out = BTreeSet::new();
    for entry in fs::read_dir(&dir).expect("src/ffi") {
        let path = entry.expect("an entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a source file");
        for (at, _) in text.match_indices("extern \"C-unwind\" fn ") {
            let rest = &text[at + "extern \"C-unwind\" fn ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.starts_with("loader_") {
                out.insert(name);
            }
        }
    }
    out
}

/// The functions the header lists after "unwind-capable", up to the sentence's end (`;`).
fn listed_in_header() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/loader.h");
    let header = fs::read_to_string(path).expect("include/loader.h");
    let at = header
        .find("unwind-capable")
        .expect("CALLBACKS names the unwind-capable functions");
    let list = &header[at..];
    let list = &list[..list.find(';').expect("the list ends with ';'")];
    list.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("loader_"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_header_lists_every_unwind_capable_export_and_only_those() {
    let exports = unwind_exports();
    let listed = listed_in_header();
    assert!(
        exports.len() >= 10,
        "too few C-unwind exports found: {exports:?}"
    );
    let missing: Vec<_> = exports.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&exports).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "include/loader.h's unwind-capable list is wrong: missing {missing:?}, not C-unwind {extra:?}"
    );
}
