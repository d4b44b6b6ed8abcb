//! The documentation holds together: every relative link and image in `README.md` and
//! in the book (`docs/src/**/*.md`) names a file that exists, every `#anchor` names a
//! heading of its page (GitHub's and mdBook's slug rule), `docs/readme-headings.tsv`
//! maps each heading of the former one-page README to a page and anchor that exist,
//! every page of the book is listed in `SUMMARY.md`, and the README stays short.
//! Links in fenced code blocks and in inline code are text, not links.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A path as the messages show it: relative to the crate.
fn shown(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.display().to_string()
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The Markdown files under `dir`, recursively, in a stable order.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
}

/// The lines outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(marker) if trimmed.starts_with(marker) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => out.push((i + 1, line)),
        }
    }
    out
}

/// A heading's anchor: inline code marks and link targets removed, lower-cased,
/// letters, digits, `-` and `_` kept, each space turned into `-`, the rest dropped.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        rest = match rest[at..].find(')') {
            Some(close) => &rest[at + close + 1..],
            None => "",
        };
    }
    text.push_str(rest);
    let mut out = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if c.is_whitespace() {
            out.push('-');
        }
    }
    out
}

/// The text of an ATX heading (`## Text`), or None.
fn heading(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    let rest = &line[hashes..];
    if hashes == 0 || hashes > 6 || !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// Every anchor of a page; a repeated heading gets `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    for (_, line) in prose_lines(text) {
        if let Some(title) = heading(line) {
            let base = slug(title);
            let count = seen.entry(base.clone()).or_insert(0);
            out.insert(if *count == 0 {
                base
            } else {
                format!("{base}-{count}")
            });
            *count += 1;
        }
    }
    out
}

/// The link targets of one line: `[text](target)`, `![alt](target)`, `<img src="target">`.
fn targets(line: &str) -> Vec<String> {
    // Inline code spans are the odd pieces between backticks.
    let plain: String = line.split('`').step_by(2).collect();
    let mut out = Vec::new();
    for chunk in plain.split("](").skip(1) {
        let end = chunk.find(')').unwrap_or(chunk.len());
        // A title (`[x](page.md "Title")`) follows the target after a space.
        let target = chunk[..end].split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        if !target.is_empty() {
            out.push(target.to_string());
        }
    }
    for chunk in plain.split("<img").skip(1) {
        if let Some((_, value)) = chunk.split_once("src=\"") {
            out.push(value.split('"').next().unwrap_or_default().to_string());
        }
    }
    out
}

/// What is wrong with one link, naming the file, the line and the link; None when it
/// resolves or leaves the repository (`http:`, `https:`, `mailto:`).
fn check_link(root: &Path, file: &Path, line: usize, target: &str) -> Option<String> {
    let external = ["http://", "https://", "mailto:"];
    if external
        .into_iter()
        .any(|scheme| target.starts_with(scheme))
    {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let dest = match path {
        "" => file.to_path_buf(),
        _ => normalize(&file.parent().expect("a file has a folder").join(path)),
    };
    let at = format!("{}:{line}: link `{target}`", shown(root, file));
    if !dest.exists() {
        return Some(format!("{at}: {} does not exist", shown(root, &dest)));
    }
    if anchor.is_empty() {
        return None;
    }
    if dest.extension().is_none_or(|ext| ext != "md") {
        return Some(format!("{at}: an anchor into a file that is not Markdown"));
    }
    let found = anchors(&read(&dest)).contains(anchor);
    let missing = format!("{at}: {} has no heading #{anchor}", shown(root, &dest));
    (!found).then_some(missing)
}

#[test]
fn the_slug_rule_is_githubs() {
    let title = "Real MCP: `import mcp`, [the gate](ci-gate.md) and `serve`'s";
    assert_eq!(slug(title), "real-mcp-import-mcp-the-gate-and-serves");
    let page = "# A\n\n```sh\n# not a heading\n```\n\n## A\n\n## A\n";
    let expected = ["a", "a-1", "a-2"].map(String::from);
    assert_eq!(anchors(page), HashSet::from(expected));
    let line = "[a](x.md#y) `[b](no.md)` ![c](i.png \"t\") <img src=\"j.png\">";
    assert_eq!(targets(line), ["x.md#y", "i.png", "j.png"]);
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = root();
    let mut files = vec![root.join("README.md")];
    markdown_files(&root.join("docs/src"), &mut files);
    let (mut links, mut problems) = (0, Vec::new());
    for file in files {
        let text = read(&file);
        for (line, content) in prose_lines(&text) {
            for target in targets(content) {
                links += 1;
                problems.extend(check_link(&root, &file, line, &target));
            }
        }
    }
    assert!(links > 0, "no link found in README.md or docs/src");
    let count = problems.len();
    assert!(
        count == 0,
        "{count} broken link(s):\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_former_readme_heading_maps_to_a_page_and_anchor() {
    let root = root();
    let text = read(&root.join("docs/readme-headings.tsv"));
    let (mut rows, mut problems) = (0, Vec::new());
    for (i, row) in text.lines().enumerate() {
        if row.trim().is_empty() {
            continue;
        }
        rows += 1;
        let at = format!("docs/readme-headings.tsv:{}: `{row}`", i + 1);
        let Some((title, place)) = row.split_once('\t') else {
            problems.push(format!("{at}: not `heading<TAB>page#anchor`"));
            continue;
        };
        let Some((page, anchor)) = place.split_once('#') else {
            problems.push(format!("{at}: `{place}` names no anchor"));
            continue;
        };
        if heading(title).is_none() {
            problems.push(format!("{at}: `{title}` is not a heading"));
        }
        let dest = root.join("docs/src").join(page);
        if !dest.is_file() {
            problems.push(format!("{at}: docs/src/{page} does not exist"));
        } else if !anchors(&read(&dest)).contains(anchor) {
            problems.push(format!("{at}: docs/src/{page} has no heading #{anchor}"));
        }
    }
    assert!(rows > 0, "docs/readme-headings.tsv maps no heading");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_book_page_is_in_the_summary() {
    let root = root();
    let book = root.join("docs/src");
    let summary = book.join("SUMMARY.md");
    let text = read(&summary);
    let (mut listed, mut problems) = (HashSet::new(), Vec::new());
    for (line, content) in prose_lines(&text) {
        for target in targets(content) {
            problems.extend(check_link(&root, &summary, line, &target));
            let path = target.split('#').next().unwrap_or_default();
            listed.insert(normalize(&book.join(path)));
        }
    }
    assert!(!listed.is_empty(), "docs/src/SUMMARY.md lists no page");
    let mut pages = Vec::new();
    markdown_files(&book, &mut pages);
    for page in pages {
        if page != summary && !listed.contains(&normalize(&page)) {
            let page = shown(&root, &page);
            problems.push(format!("{page} is not listed in docs/src/SUMMARY.md"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_readme_stays_short() {
    let lines = read(&root().join("README.md")).lines().count();
    let why = "the reference belongs in the book, docs/src";
    assert!(
        lines <= 250,
        "README.md has {lines} lines, at most 250: {why}"
    );
}
