//! The index at the top of include/loader.h (FUNCTIONS BY TASK) names every function the
//! header declares, once, and nothing else.

use std::collections::BTreeSet;

const HEADER: &str = include_str!("../include/loader.h");

/// The functions the header declares: a declaration starts a line with its return type (a
/// deprecated one after its `LOADER_DEPRECATED("...")`), outside the comments.
fn declared(header: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in header.lines() {
        let line = match line.strip_prefix("LOADER_DEPRECATED(\"") {
            Some(rest) => rest.split_once("\") ").map_or("", |(_, decl)| decl),
            None => line,
        };
        if !line.starts_with(|c: char| c.is_ascii_lowercase()) || line.starts_with("typedef") {
            continue;
        }
        // The name is the identifier just before the parameter list.
        let Some(open) = line.find('(') else { continue };
        let name: String = line[..open]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if name.starts_with("loader_") {
            out.insert(name);
        }
    }
    out
}

/// The functions the index names: the first word of each of its entries (`*   loader_...`),
/// from "FUNCTIONS BY TASK" to the next section; each entry once.
fn indexed(header: &str) -> Vec<String> {
    let start = header
        .find(" * FUNCTIONS BY TASK")
        .expect("the header has an index");
    let end = start
        + header[start..]
            .find(" * THREADS")
            .expect("THREADS follows the index");
    header[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix(" *   "))
        .filter(|l| l.starts_with("loader_"))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_index_names_every_declared_function_once() {
    let declared = declared(HEADER);
    let indexed = indexed(HEADER);
    assert!(
        declared.len() >= 25,
        "too few declarations found: {declared:?}"
    );
    let unique: BTreeSet<String> = indexed.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        indexed.len(),
        "a function is indexed twice: {indexed:?}"
    );
    let missing: Vec<_> = declared.difference(&unique).collect();
    let extra: Vec<_> = unique.difference(&declared).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "include/loader.h's index (cbindgen.toml): missing {missing:?}, not declared {extra:?}"
    );
}

#[test]
fn the_parsers_see_declarations_and_entries() {
    let text = "/*\n * FUNCTIONS BY TASK\n *   loader_a   does a\n * THREADS\n */\n\
                enum loader_result loader_a(loader_handle h);\n\
                LOADER_DEPRECATED(\"use loader_a\") const char *loader_b(void);\n\
                typedef void (*loader_c_fn)(void *userdata);\n";
    assert_eq!(indexed(text), ["loader_a"]);
    let found: Vec<_> = declared(text).into_iter().collect();
    assert_eq!(found, ["loader_a", "loader_b"]);
}
