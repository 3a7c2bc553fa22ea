//! Every relative link in the Markdown pages at the repository's root (README, CONTRIBUTING,
//! CHANGELOG) and in docs/ resolves inside a clone of the repository:
//! to a file or folder that exists, and, with a `#fragment`, to a heading of that page.
//! Links to other sites are not followed.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The link targets on a markdown page, outside code blocks and code spans, with their line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: `a](b)` inside backticks is code, not a link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push((n + 1, rest[..end].to_string()));
                rest = &rest[end..];
            }
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown page's headings.
fn anchors(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The `.md` files directly in `dir`, sorted.
fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(dir)
        .expect("a readable folder")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages
}

/// The pages whose links are checked: the root's and docs/'s, the README and the guides among
/// them (a missing one fails here, not silently).
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = markdown_in(root);
    pages.extend(markdown_in(&root.join("docs")));
    for needed in [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "docs/DESIGN.md",
    ] {
        assert!(
            pages.contains(&root.join(needed)),
            "{needed} is not checked"
        );
    }
    pages
}

/// What is wrong with `target`, linked from `page`, if anything.
fn broken(root: &Path, page: &Path, text: &str, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let (file, body) = if path.is_empty() {
        (page.to_path_buf(), text.to_string())
    } else {
        let file = page.parent().expect("a page is in a folder").join(path);
        let Ok(real) = file.canonicalize() else {
            return Some("no such file in the repository".into());
        };
        if !real.starts_with(root) {
            return Some("points outside the repository".into());
        }
        let body = fs::read_to_string(&real).unwrap_or_default();
        (real, body)
    };
    match fragment {
        Some(f) if file.extension().is_some_and(|x| x == "md") && !anchors(&body).contains(f) => {
            Some(format!("no heading with anchor #{f}"))
        }
        _ => None,
    }
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .expect("the repository exists");
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in pages(&root) {
        let text = fs::read_to_string(&page).expect("readable page");
        for (line, target) in links(&text) {
            checked += 1;
            if let Some(why) = broken(&root, &page, &text, &target) {
                let shown = page.strip_prefix(&root).unwrap_or(&page).display();
                bad.push(format!("{shown}:{line}: {target}: {why}"));
            }
        }
    }
    assert!(checked > 0, "no links found: the parser is broken");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_finds_links_and_headings() {
    let page = "# Top\n## The `loader-check` tool\nSee [a](x.md#top) and `[b](not-a-link)`.\n```\n[c](in-code)\n```\n";
    let found: Vec<String> = links(page).into_iter().map(|(_, t)| t).collect();
    assert_eq!(found, ["x.md#top"]);
    let heads = anchors(page);
    assert!(heads.contains("top") && heads.contains("the-loader-check-tool"));
}
