//! The architecture test: every module imports only from the floors below it, in the
//! order written at the top of `src/lib.rs`, and no two files import each other.
//!
//! It parses every file under `src/` (with `syn`) and reads every path that starts
//! with `crate::`, `super::`, `self::` or a child module's name — in `use` items, in
//! code, in attributes and inside macro calls — resolving each to the file that
//! defines the module it names (the longest prefix that is a file module). An import
//! through a re-export counts as an import of the file that re-exports, which is why
//! a folder's files import the file that defines what they use, never their
//! `mod.rs`. Unit-test modules are read too. `src/main.rs` (the binary) stands above
//! every floor and is not checked.
//!
//! Beyond the floors, some modules keep apart from one below them ([`APART`]): the
//! scorer imports nothing from the strategies. And inside `strategy/`, the families —
//! its folders but the composite — import no other family: they meet only in the
//! composite, which stacks them, and in `defined`, which lists their events.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Modules that import nothing from another although it is below them, and why.
const APART: [(&str, &str, &str); 1] = [(
    "score",
    "strategy",
    "the scorer judges addresses and counts the events a strategy names, so it knows no strategy",
)];

/// One path of one file, resolved to the file module it reaches.
#[derive(Debug, Clone)]
struct Import {
    /// The importing file, relative to the crate root (`src/...`).
    file: String,
    /// The path as written, e.g. `crate::scenario::RESERVED_TOOL_NAMES`.
    written: String,
    /// The module path of the file module it reaches.
    target: Vec<String>,
}

/// The file modules of a source tree: module path → file (relative to the crate root).
fn file_modules(root: &Path) -> BTreeMap<Vec<String>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(root.join("src")).expect("under src");
        if rel == Path::new("main.rs") {
            continue;
        }
        let mut parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
            parts.pop();
        }
        out.insert(parts, format!("src/{}", rel.display()));
    }
    out
}

/// Reads the paths of one file, module by module.
struct Reader<'a> {
    modules: &'a BTreeMap<Vec<String>, String>,
    file: String,
    /// The module being read: the file's module, then any inline modules inside it.
    current: Vec<String>,
    out: Vec<Import>,
}

impl Reader<'_> {
    fn add(&mut self, segments: Vec<String>) {
        let Some(first) = segments.first() else {
            return;
        };
        let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (self.current.clone(), &segments[1..]),
            "super" => {
                let mut base = self.current.clone();
                let mut i = 0;
                while segments.get(i).is_some_and(|s| s == "super") {
                    base.pop();
                    i += 1;
                }
                (base, &segments[i..])
            }
            name => {
                let mut child = self.current.clone();
                child.push(name.to_string());
                if !self.modules.contains_key(&child) {
                    return; // an external crate, std, or a local name
                }
                (self.current.clone(), &segments[..])
            }
        };
        base.extend(rest.iter().cloned());
        let target = (0..=base.len())
            .rev()
            .map(|k| base[..k].to_vec())
            .find(|p| self.modules.contains_key(p))
            .unwrap_or_default();
        self.out.push(Import {
            file: self.file.clone(),
            written: segments.join("::"),
            target,
        });
    }

    /// Paths inside attribute arguments and macro calls, which `syn` leaves as tokens.
    fn scan(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(g) = &trees[i] {
                self.scan(g.stream());
                i += 1;
                continue;
            }
            let starts = matches!(&trees[i], TokenTree::Ident(id) if ["crate", "super", "self"].contains(&id.to_string().as_str()));
            if !starts {
                i += 1;
                continue;
            }
            let mut segs = vec![trees[i].to_string()];
            let mut j = i + 1;
            loop {
                let colons = matches!((trees.get(j), trees.get(j + 1)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
                match (colons, trees.get(j + 2)) {
                    (true, Some(TokenTree::Ident(id))) => {
                        segs.push(id.to_string());
                        j += 3;
                    }
                    _ => break,
                }
            }
            if segs.len() > 1 {
                self.add(segs);
            }
            i = j.max(i + 1);
        }
    }
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut v = prefix.clone();
            if n.ident != "self" {
                v.push(n.ident.to_string());
            }
            out.push(v);
        }
        syn::UseTree::Rename(r) => {
            let mut v = prefix.clone();
            if r.ident != "self" {
                v.push(r.ident.to_string());
            }
            out.push(v);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        for a in &m.attrs {
            self.visit_attribute(a);
        }
        if let Some((_, items)) = &m.content {
            self.current.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.current.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        for p in paths {
            self.add(p);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() > 1 {
            self.add(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.scan(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_meta_list(&mut self, m: &'ast syn::MetaList) {
        self.scan(m.tokens.clone());
        syn::visit::visit_meta_list(self, m);
    }
}

/// Every path of every file under `root/src`, resolved.
fn imports(root: &Path, modules: &BTreeMap<Vec<String>, String>) -> Vec<Import> {
    let mut out = Vec::new();
    for (module, file) in modules {
        let text = std::fs::read_to_string(root.join(file)).expect("readable source");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file} does not parse: {e}"));
        let mut r = Reader {
            modules,
            file: file.clone(),
            current: module.clone(),
            out: Vec::new(),
        };
        r.visit_file(&ast);
        out.extend(r.out);
    }
    out
}

/// The floors written in `src/lib.rs`'s doc comment, top first: the lines of the
/// ```` ```text ```` block under `# Floors`, each a list of modules (after an optional
/// `name:` label).
fn floors(lib: &str) -> Vec<Vec<String>> {
    let doc: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let start = doc
        .iter()
        .position(|l| *l == "# Floors")
        .expect("src/lib.rs has a `# Floors` section");
    let open = start
        + doc[start..]
            .iter()
            .position(|l| l.starts_with("```"))
            .expect("the floors are in a fenced block");
    doc[open + 1..]
        .iter()
        .take_while(|l| !l.starts_with("```"))
        .map(|l| {
            let list = l.split_once(':').map_or(*l, |(_, r)| r);
            list.split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .filter(|v: &Vec<String>| !v.is_empty())
        .collect()
}

/// Every violation of the floors and of "no two files import each other" in the crate
/// at `root`, each naming the file and the import.
fn violations(root: &Path) -> Vec<String> {
    let modules = file_modules(root);
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs");
    let floors = floors(&lib);
    let mut out = Vec::new();
    let floor_of: BTreeMap<&str, usize> = floors
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let top: BTreeSet<&str> = modules
        .keys()
        .filter(|p| p.len() == 1)
        .map(|p| p[0].as_str())
        .collect();
    for m in &top {
        if !floor_of.contains_key(m) {
            out.push(format!(
                "src/lib.rs: the module `{m}` is on no floor; add it to the floors"
            ));
        }
    }
    for m in floor_of.keys() {
        if !top.contains(m) {
            out.push(format!(
                "src/lib.rs: the floors name `{m}`, which is not a module"
            ));
        }
    }
    let all = imports(root, &modules);
    let module_of = |file: &str| -> Vec<String> {
        modules
            .iter()
            .find(|(_, f)| f.as_str() == file)
            .map(|(m, _)| m.clone())
            .unwrap_or_default()
    };
    let mut seen = BTreeSet::new();
    for i in &all {
        let from = module_of(&i.file);
        let (Some(a), Some(b)) = (from.first(), i.target.first()) else {
            continue; // lib.rs itself, or a path to the crate root
        };
        if a == b || !seen.insert((i.file.clone(), i.written.clone())) {
            continue;
        }
        if let Some((_, _, why)) = APART.iter().find(|(x, y, _)| x == a && y == b) {
            out.push(format!(
                "{}: `{}` imports `{b}`, which `{a}` keeps apart from: {why}",
                i.file, i.written
            ));
        }
        if let (Some(&fa), Some(&fb)) = (floor_of.get(a.as_str()), floor_of.get(b.as_str())) {
            if fb == fa {
                out.push(format!(
                    "{}: `{}` imports `{b}`, on the same floor as `{a}` (modules of one floor do not import each other)",
                    i.file, i.written
                ));
            } else if fb < fa {
                out.push(format!(
                    "{}: `{}` imports `{b}`, a floor above `{a}`",
                    i.file, i.written
                ));
            }
        }
    }
    // Strategy families keep apart from each other.
    let families: BTreeSet<&str> = modules
        .keys()
        .filter(|p| p.len() == 2 && p[0] == "strategy" && p[1] != "composite")
        .filter(|p| modules.keys().any(|q| q.len() == 3 && q[..2] == p[..]))
        .map(|p| p[1].as_str())
        .collect();
    let family = |m: &[String]| -> Option<String> {
        (m.len() >= 2 && m[0] == "strategy" && families.contains(m[1].as_str()))
            .then(|| m[1].clone())
    };
    for i in &all {
        let from = module_of(&i.file);
        if let (Some(a), Some(b)) = (family(&from), family(&i.target)) {
            if a != b {
                out.push(format!(
                    "{}: `{}` imports the strategy family `{b}` from the family `{a}` (families meet only in the composite)",
                    i.file, i.written
                ));
            }
        }
    }
    // File by file: no cycle, so no two files import each other.
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for i in &all {
        let Some(to) = modules.get(&i.target) else {
            continue;
        };
        if *to != i.file {
            edges
                .entry(i.file.clone())
                .or_default()
                .entry(to.clone())
                .or_insert_with(|| i.written.clone());
        }
    }
    for cycle in cycles(&edges) {
        let steps: Vec<String> = cycle
            .iter()
            .zip(cycle.iter().cycle().skip(1))
            .map(|(a, b)| format!("{a} (`{}`) → {b}", edges[a][b]))
            .collect();
        out.push(format!("files import each other: {}", steps.join(", ")));
    }
    out
}

/// One cycle through each strongly connected component of more than one file.
fn cycles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges
        .keys()
        .chain(edges.values().flat_map(|m| m.keys()))
        .collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for next in edges.get(&n).into_iter().flat_map(|m| m.keys()) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        if done.contains(n) || !reach(n).contains(n) {
            continue;
        }
        // A shortest way back to `n`, by breadth-first search.
        let mut prev: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([n.clone()]);
        'bfs: while let Some(cur) = queue.pop_front() {
            for next in edges.get(&cur).into_iter().flat_map(|m| m.keys()) {
                if next == n {
                    prev.insert(n.clone(), cur.clone());
                    break 'bfs;
                }
                if !prev.contains_key(next) {
                    prev.insert(next.clone(), cur.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        let mut cycle = vec![n.clone()];
        let mut cur = prev[n].clone();
        while &cur != n {
            cycle.push(cur.clone());
            cur = prev[&cur].clone();
        }
        cycle.reverse();
        cycle.rotate_right(1);
        let component: BTreeSet<String> = reach(n)
            .into_iter()
            .filter(|m| reach(m).contains(n))
            .collect();
        done.extend(component);
        out.push(cycle);
    }
    out
}

#[test]
fn every_module_imports_only_from_the_floors_below_it() {
    let v = violations(
        &std::env::var("LAYERS_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    );
    assert!(v.is_empty(), "\n{}\n", v.join("\n"));
}

#[test]
fn the_floors_are_read_from_lib_rs() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let f = floors(&lib);
    assert_eq!(
        f.first().map(|v| v.as_slice()),
        Some(&["cli".to_string()][..])
    );
    assert!(f.iter().any(|v| v.contains(&"catalog".to_string())));
    assert!(f.len() >= 10, "{f:?}");
}

/// A small crate written to a temporary directory.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

const LIB: &str = "//! # Floors\n//!\n//! ```text\n//! top\n//! ground: low, wire\n//! ```\n\npub mod low;\npub mod top;\npub mod wire;\n";

#[test]
fn an_upward_import_is_named_with_its_file() {
    let dir = tree(&[
        ("src/lib.rs", LIB),
        ("src/top.rs", "use crate::low::Low;\npub struct Top(pub Low);\n"),
        (
            "src/low.rs",
            "pub struct Low;\npub fn f() -> usize { crate::top::g() }\n",
        ),
        ("src/wire.rs", "#[derive(Debug)]\npub struct W(#[allow(dead_code)] u8);\npub fn h() { let _ = format!(\"{:?}\", crate::low::Low); }\n"),
    ]);
    let v = violations(dir.path());
    assert!(
        v.iter()
            .any(|m| m == "src/low.rs: `crate::top::g` imports `top`, a floor above `low`"),
        "{v:#?}"
    );
    // A path inside a macro call is read too; `wire` and `low` share a floor.
    assert!(
        v.iter()
            .any(|m| m
                .starts_with("src/wire.rs: `crate::low::Low` imports `low`, on the same floor")),
        "{v:#?}"
    );
    assert!(!v.iter().any(|m| m.starts_with("src/top.rs")), "{v:#?}");
}

#[test]
fn files_that_import_each_other_are_named() {
    let dir = tree(&[
        (
            "src/lib.rs",
            "//! # Floors\n//!\n//! ```text\n//! a\n//! ```\n\npub mod a;\n",
        ),
        ("src/a/mod.rs", "mod b;\npub use b::B;\npub struct A;\n"),
        ("src/a/b.rs", "use super::A;\npub struct B(pub A);\n"),
    ]);
    let v = violations(dir.path());
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(v[0].starts_with("files import each other: "), "{v:?}");
    assert!(
        v[0].contains("src/a/b.rs (`super::A`) → src/a/mod.rs")
            && v[0].contains("src/a/mod.rs (`b::B`) → src/a/b.rs"),
        "{v:?}"
    );
}

#[test]
fn a_module_missing_from_the_floors_is_named() {
    let dir = tree(&[
        (
            "src/lib.rs",
            "//! # Floors\n//!\n//! ```text\n//! a\n//! ```\n\npub mod a;\npub mod b;\n",
        ),
        ("src/a.rs", ""),
        ("src/b.rs", ""),
    ]);
    assert_eq!(
        violations(dir.path()),
        vec!["src/lib.rs: the module `b` is on no floor; add it to the floors".to_string()]
    );
}

#[test]
fn the_scorer_importing_a_strategy_is_named() {
    let lib = "//! # Floors\n//!\n//! ```text\n//! score\n//! strategy\n//! ```\n\npub mod score;\npub mod strategy;\n";
    let dir = tree(&[
        ("src/lib.rs", lib),
        (
            "src/strategy.rs",
            "pub const TOOL_SEARCH: &str = \"tool_search\";\n",
        ),
        (
            "src/score.rs",
            "pub fn searches(t: &str) -> bool { t == crate::strategy::TOOL_SEARCH }\n",
        ),
    ]);
    let v = violations(dir.path());
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with(
            "src/score.rs: `crate::strategy::TOOL_SEARCH` imports `strategy`, which `score` keeps apart from"
        ),
        "{v:?}"
    );
}

#[test]
fn one_strategy_family_importing_another_is_named() {
    let lib = "//! # Floors\n//!\n//! ```text\n//! strategy\n//! ```\n\npub mod strategy;\n";
    let dir = tree(&[
        ("src/lib.rs", lib),
        (
            "src/strategy/mod.rs",
            "pub mod composite;\npub mod shared;\npub mod one;\npub mod two;\n",
        ),
        ("src/strategy/shared.rs", "pub struct S;\n"),
        (
            "src/strategy/composite/mod.rs",
            "pub mod build;\n",
        ),
        (
            "src/strategy/composite/build.rs",
            "pub fn b() { let _ = crate::strategy::one::x::X; let _ = crate::strategy::two::y::Y; }\n",
        ),
        ("src/strategy/one/mod.rs", "pub mod x;\n"),
        (
            "src/strategy/one/x.rs",
            "pub struct X;\npub fn f() { let _ = crate::strategy::shared::S; }\n",
        ),
        ("src/strategy/two/mod.rs", "pub mod y;\n"),
        (
            "src/strategy/two/y.rs",
            "pub struct Y;\npub fn g() { let _ = crate::strategy::one::x::X; }\n",
        ),
    ]);
    let v = violations(dir.path());
    assert_eq!(
        v,
        ["src/strategy/two/y.rs: `crate::strategy::one::x::X` imports the strategy family `one` from the family `two` (families meet only in the composite)"],
        "the composite and the shared vocabulary may be reached from anywhere"
    );
}
