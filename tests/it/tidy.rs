//! Tidy checks over the repository's own text: file headers and references to other documents.
//!
//! In the manner of rust-analyzer's tidy test: every `.rs` file opens with a `//!` line of at
//! most 100 characters that says what it is, and no source comment or document names a
//! document that is not in this repository (a user who clones it has nothing beside it). A
//! Markdown link must resolve as a reader's browser resolves it: relative to its own file, and
//! to a heading (or `id`) of the target when it names one (`file.md#section`, `#section`).

use std::path::{Component, Path, PathBuf};

use regex::Regex;

use crate::harness::manifest_dir;

/// The longest first `//!` line; a longer one is a paragraph that belongs below it.
const MAX_HEADER_CHARS: usize = 100;

/// Every file of the repository with one of `extensions`, skipping build output, VCS data and
/// installed packages.
fn repository_files(extensions: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![manifest_dir().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if !matches!(name.as_ref(), "target" | ".git" | "node_modules") {
                    stack.push(path);
                }
            } else if kind.is_file()
                && path
                    .extension()
                    .is_some_and(|e| extensions.contains(&e.to_string_lossy().as_ref()))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(manifest_dir())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_rust_file_opens_with_a_short_doc_line() {
    let mut problems = Vec::new();
    for file in repository_files(&["rs"]) {
        let text = std::fs::read_to_string(&file).unwrap();
        let first = text.lines().next().unwrap_or("");
        if !first.starts_with("//! ") {
            problems.push(format!(
                "{}: the first line is not a `//!` line",
                relative(&file)
            ));
        } else if first.chars().count() > MAX_HEADER_CHARS {
            problems.push(format!(
                "{}: the `//!` line has {} characters (at most {MAX_HEADER_CHARS})",
                relative(&file),
                first.chars().count()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `target` resolved against `dir`, lexically; `None` when it leaves the repository.
fn resolve_in_repository(dir: &Path, target: &str) -> Option<PathBuf> {
    let root = manifest_dir();
    let mut path = if target.starts_with('/') {
        root.to_path_buf()
    } else {
        dir.to_path_buf()
    };
    for component in Path::new(target.trim_start_matches('/')).components() {
        match component {
            Component::ParentDir if !path.pop() || !path.starts_with(root) => return None,
            Component::ParentDir => {}
            Component::Normal(part) => path.push(part),
            _ => {}
        }
    }
    path.starts_with(root).then_some(path)
}

/// The anchor GitHub gives a heading: lower case, spaces to `-`, every character but letters,
/// digits, `-` and `_` dropped (so `` `guidebook mcp` `` and punctuation leave no trace).
fn heading_slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a Markdown text offers: each heading's slug (the second of a name gets `-1`, as
/// on GitHub), outside fenced code, and every explicit `id="..."` or `name="..."`.
fn anchors(text: &str) -> Vec<String> {
    let explicit = Regex::new(r#"\b(?:id|name)="([^"]+)""#).unwrap();
    let mut out: Vec<String> = Vec::new();
    let mut times: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        out.extend(explicit.captures_iter(line).map(|c| c[1].to_string()));
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let slug = heading_slug(&line[hashes..]);
            let seen = times.entry(slug.clone()).or_insert(0);
            out.push(if *seen == 0 {
                slug
            } else {
                format!("{slug}-{seen}")
            });
            *seen += 1;
        }
    }
    out
}

/// What is wrong with the Markdown link `target` written in `file` (whose text is `text`):
/// `None` when it resolves, relative to `file`'s directory (or, starting with `/`, to the
/// repository's root), to a path that exists, and its `#fragment`, if any, to an anchor of the
/// Markdown file it points at.
fn broken_link(file: &Path, text: &str, target: &str) -> Option<&'static str> {
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        match resolve_in_repository(file.parent().unwrap(), path) {
            Some(resolved) if resolved.exists() => resolved,
            _ => return Some("no such file, relative to this one"),
        }
    };
    let fragment = fragment.filter(|f| !f.is_empty())?;
    if resolved.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let target_text = if resolved == file {
        text.to_string()
    } else {
        std::fs::read_to_string(&resolved).ok()?
    };
    (!anchors(&target_text).iter().any(|a| a == fragment)).then_some("no such heading or id there")
}

/// The documents `text` (from `file`) names that this repository does not hold: Markdown link
/// targets, and `.md` files named in prose or comments. In a document (not `only_comments`),
/// a link must also resolve as [`broken_link`] says.
fn missing_references(file: &Path, text: &str, only_comments: bool) -> Vec<String> {
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let url = Regex::new(r"[a-z]+://\S+").unwrap();
    let document = Regex::new(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b").unwrap();
    let upward = Regex::new(r"(?:^|[\s`(\[])(\.\./[A-Za-z0-9_./-]+)").unwrap();
    let dir = file.parent().unwrap();
    let all_md: Vec<String> = repository_files(&["md"])
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut missing = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = url.replace_all(line, "");
        let line = if only_comments {
            match line.find("//") {
                Some(at) => &line[at..],
                None => continue,
            }
        } else {
            &line[..]
        };
        let links: Vec<&str> = link
            .captures_iter(line)
            .map(|c| c.get(1).unwrap().as_str())
            .filter(|t| !t.contains("://") && !t.starts_with("mailto:"))
            .collect();
        if !only_comments {
            for target in &links {
                if let Some(why) = broken_link(file, text, target) {
                    missing.push(format!("{}:{}: {target} ({why})", relative(file), n + 1));
                }
            }
        }
        let link_paths: Vec<&str> = links
            .iter()
            .filter(|t| !t.starts_with('#'))
            .map(|t| t.split('#').next().unwrap())
            .collect();
        // In a document the links were checked above, strictly; what is left is prose, which
        // may name a file from the repository's root.
        let mut targets: Vec<&str> = if only_comments {
            link_paths.clone()
        } else {
            Vec::new()
        };
        targets.extend(document.find_iter(line).map(|m| m.as_str()));
        targets.extend(
            upward
                .captures_iter(line)
                .map(|c| c.get(1).unwrap().as_str()),
        );
        if !only_comments {
            targets.retain(|t| !link_paths.contains(t));
        }
        targets.sort_unstable();
        targets.dedup();
        // The names of the agents' rule files the sidecar reads in other repositories are
        // formats, not references.
        targets.retain(|t| !names_a_rule_file_format(t));
        for target in targets {
            let exists = if target.contains('/') {
                // As written relative to this file, or from the repository's root.
                [dir, manifest_dir()]
                    .iter()
                    .filter_map(|base| resolve_in_repository(base, target))
                    .any(|p| p.exists())
            } else {
                all_md.iter().any(|name| name == target) || dir.join(target).exists()
            };
            if !exists {
                missing.push(format!("{}:{}: {target}", relative(file), n + 1));
            }
        }
    }
    missing
}

/// Whether `target` is a rule file of a format the sidecar reads in a repository (`AGENTS.md`,
/// `src/api/CLAUDE.md`, `.claude/rules/x.md`, `.github/instructions/a.instructions.md`, …).
fn names_a_rule_file_format(target: &str) -> bool {
    let name = target.rsplit('/').next().unwrap_or(target);
    matches!(name, "AGENTS.md" | "CLAUDE.md")
        || name.ends_with(".instructions.md")
        || [
            ".claude/rules/",
            ".continue/rules/",
            ".cursor/rules/",
            ".github/instructions/",
        ]
        .iter()
        .any(|place| target.contains(place))
}

#[test]
fn no_comment_or_document_names_a_document_outside_this_repository() {
    let mut missing = Vec::new();
    // This file's own examples of missing documents are the checker's test, not references.
    let this_file = manifest_dir().join(file!());
    for file in repository_files(&["rs"]) {
        if file == this_file {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        missing.extend(missing_references(&file, &text, true));
    }
    for file in repository_files(&["md"]) {
        let text = std::fs::read_to_string(&file).unwrap();
        missing.extend(missing_references(&file, &text, false));
    }
    assert!(
        missing.is_empty(),
        "references to documents this repository does not hold:\n{}",
        missing.join("\n")
    );
}

/// The checker itself: it must see a reference outside the repository and a broken link.
#[test]
fn the_reference_checker_finds_what_is_missing() {
    let file = manifest_dir().join("README.md");
    let text = "see [the contract](../shared/CONTRACT.md) and `docs/NOPE.md`\n\
                and [ok](ARCHITECTURE.md) and [web](https://example.org/x.md)\n";
    let missing = missing_references(&file, text, false);
    assert_eq!(
        missing,
        [
            "README.md:1: ../shared/CONTRACT.md (no such file, relative to this one)",
            "README.md:1: docs/NOPE.md"
        ]
    );
    let rust = "let x = 1; // as `../shared/STYLE.md` says\nlet y = \"NOPE.md\";\n";
    assert_eq!(
        missing_references(&manifest_dir().join("src/lib.rs"), rust, true),
        ["src/lib.rs:1: ../shared/STYLE.md"]
    );
}

/// A link is resolved as a browser resolves it: `docs/CONTRACT.md` exists from the root, but a
/// link to it from `docs/guide/` is broken; so is a `#fragment` no heading of the target has.
#[test]
fn the_link_checker_finds_a_broken_link_and_a_broken_anchor() {
    let file = manifest_dir().join("docs/guide/README.md");
    let text = "# Guide\n\
                ## Wire it into `Codex`\n\
                [ok](../CONTRACT.md) [ok](agents.md#install-the-hooks-with-one-command)\n\
                [ok](#wire-it-into-codex) [ok](../../README.md#command-line)\n\
                [bad](docs/CONTRACT.md) [bad](agents.md#no-such-section) [bad](#guide-1)\n\
                [bad](../../README.md#two-commands) [bad](nope.md)\n\
                ```sh\n# not-a-heading\n```\n[bad](#not-a-heading)\n";
    assert_eq!(
        missing_references(&file, text, false),
        [
            "docs/guide/README.md:5: docs/CONTRACT.md (no such file, relative to this one)",
            "docs/guide/README.md:5: agents.md#no-such-section (no such heading or id there)",
            "docs/guide/README.md:5: #guide-1 (no such heading or id there)",
            "docs/guide/README.md:6: ../../README.md#two-commands (no such heading or id there)",
            "docs/guide/README.md:6: nope.md (no such file, relative to this one)",
            "docs/guide/README.md:10: #not-a-heading (no such heading or id there)",
        ]
    );
}

#[test]
fn headings_get_githubs_anchors() {
    assert_eq!(
        anchors("# A\n## Hooks with no process per edit: `guidebook mcp`\n## A\n## A\n<a id=\"x\"></a>\n"),
        ["a", "hooks-with-no-process-per-edit-guidebook-mcp", "a-1", "a-2", "x"]
    );
    assert_eq!(
        heading_slug(" Issue 12: the ≤ 0.5 ms search and the 1.6× under load (2026-12-05, night)"),
        "issue-12-the--05-ms-search-and-the-16-under-load-2026-12-05-night"
    );
}

/// The names one `rpc::` path in `text` takes from the RPC layer: `rpc::m::Name` or
/// `rpc::m::{A, B}` give their last segments.
fn rpc_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices("rpc::") {
        let rest = &text[at + "rpc::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '{' | '}' | ',' | ' '))
            .collect();
        let path = path.split(';').next().unwrap_or_default();
        let inner = match (path.find('{'), path.find('}')) {
            (Some(open), Some(close)) if open < close => path[open + 1..close].to_string(),
            _ => path
                .split([' ', ','])
                .next()
                .unwrap_or_default()
                .rsplit("::")
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        names.extend(
            inner
                .split(',')
                .map(|n| n.trim().rsplit("::").next().unwrap_or_default().to_string())
                .filter(|n| !n.is_empty()),
        );
    }
    names
}

/// The CLI never calls an RPC handler: it asks the sidecar, or calls the domain when none runs.
/// From `rpc` it takes only wire types (capitalised names), never a function or `self`.
#[test]
fn the_cli_takes_only_wire_types_from_the_rpc_layer() {
    let mut found = Vec::new();
    for file in repository_files(&["rs"]) {
        let rel = relative(&file);
        if !rel.starts_with("src/cli/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for name in rpc_names(&text) {
            if !name.starts_with(|c: char| c.is_ascii_uppercase()) {
                found.push(format!("{rel}: rpc::…{name}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the CLI calls into the RPC layer: {found:?}"
    );
    assert_eq!(
        rpc_names("use crate::rpc::get_flags::{self, FlagState};\nget_flags::answer(x)"),
        ["self", "FlagState"]
    );
    assert_eq!(
        rpc_names("let a = crate::rpc::status::handle(e, p);"),
        ["handle"]
    );
}

/// README.md is the short front door and ARCHITECTURE.md a one-screen map plus invariants:
/// history, long figures and decisions go to docs/.
#[test]
fn the_front_door_and_the_map_stay_short() {
    for (file, most) in [("README.md", 200), ("ARCHITECTURE.md", 150)] {
        let lines = std::fs::read_to_string(manifest_dir().join(file))
            .unwrap()
            .lines()
            .count();
        assert!(lines <= most, "{file} has {lines} lines, more than {most}");
    }
}

/// `cargo install` builds the release profile: it ships stripped, without debug info; line
/// tables and symbols are the profiling profile's.
#[test]
fn the_release_build_is_stripped() {
    let manifest: toml_edit::DocumentMut =
        std::fs::read_to_string(manifest_dir().join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
    let release = &manifest["profile"]["release"];
    assert_eq!(release["strip"].as_bool(), Some(true), "{release}");
    assert!(release.get("debug").is_none(), "{release}");
    let profiling = &manifest["profile"]["profiling"];
    assert_eq!(profiling["inherits"].as_str(), Some("release"));
    assert_eq!(profiling["debug"].as_str(), Some("line-tables-only"));
}

/// A crate's modules and the modules each one's code (tests aside) names: `crate::a::b`,
/// `crate::{a, b::c}` and `super::x`, each resolved to the deepest module file that exists.
/// Keys are module paths (`store/metrics`; the crate root is ``).
fn module_imports(
    src: &Path,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut parts: Vec<String> = rel
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                files.insert(parts.join("/"), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let path_re =
        Regex::new(r"\b(crate|super)::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*|\{)").unwrap();
    let mut graph = BTreeMap::new();
    for (module, text) in &files {
        let code = match text.find("#[cfg(test)]\nmod tests") {
            Some(at) => &text[..at],
            None => text,
        };
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let is_dir_module =
            files.keys().any(|k| k.starts_with(&format!("{module}/"))) || module.is_empty();
        let here: Vec<&str> = module.split('/').filter(|p| !p.is_empty()).collect();
        let mut named: Vec<Vec<String>> = Vec::new();
        for m in path_re.captures_iter(&code) {
            let base: Vec<String> = match &m[1] {
                "crate" => Vec::new(),
                _ if is_dir_module => here.iter().map(|s| s.to_string()).collect(),
                _ => here[..here.len().saturating_sub(1)]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            };
            if &m[2] == "{" {
                let rest = &code[m.get(2).unwrap().start()..];
                let (mut depth, mut end) = (0, rest.len());
                for (i, c) in rest.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = i;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                named.extend(use_tree(&base, &rest[1..end]));
            } else {
                let mut p = base;
                p.extend(m[2].split("::").map(str::to_owned));
                named.push(p);
            }
        }
        let mut deps = BTreeSet::new();
        for path in named {
            for k in (1..=path.len()).rev() {
                let candidate = path[..k].join("/");
                if files.contains_key(&candidate) {
                    if candidate != *module {
                        deps.insert(candidate);
                    }
                    break;
                }
            }
        }
        graph.insert(module.clone(), deps);
    }
    graph
}

/// The paths a `use` list names (`a, b::{self, c}` under `base`), nested lists expanded.
fn use_tree(base: &[String], list: &str) -> Vec<Vec<String>> {
    let mut items = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[from..]);
    let mut out = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let (head, nested) = match item.find('{') {
            Some(open) => (
                &item[..open],
                Some(&item[open + 1..item.rfind('}').unwrap_or(item.len())]),
            ),
            None => (item, None),
        };
        let mut path = base.to_vec();
        path.extend(
            head.split("::")
                .map(|s| s.trim().split(' ').next().unwrap_or_default())
                .filter(|s| !s.is_empty() && *s != "self")
                .map(str::to_owned),
        );
        match nested {
            Some(list) => {
                out.push(path.clone());
                out.extend(use_tree(&path, list));
            }
            None => out.push(path),
        }
    }
    out
}

/// The import circles of a graph: its strongly connected components of more than one module.
fn circles(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<Vec<String>> {
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(m) = stack.pop() {
            for d in graph.get(&m).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen
    };
    let reached: std::collections::BTreeMap<&String, _> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for m in graph.keys() {
        if out.iter().any(|c| c.contains(m)) {
            continue;
        }
        let circle: Vec<String> = graph
            .keys()
            .filter(|o| *o == m || (reached[m].contains(*o) && reached[*o].contains(m)))
            .cloned()
            .collect();
        if circle.len() > 1 {
            out.push(circle);
        }
    }
    out
}

/// The top-level modules `src/lib.rs` lists under one of its layout headings (`- [`name`]`).
fn layer(lib: &str, heading: &str) -> Vec<String> {
    let start = lib
        .find(heading)
        .unwrap_or_else(|| panic!("src/lib.rs has no `{heading}`"));
    let section = &lib[start..];
    let end = section[1..]
        .find("\n//!\n//! ")
        .map_or(section.len(), |i| i + 1);
    Regex::new(r"//! - \[`([a-z_]+)`\]")
        .unwrap()
        .captures_iter(&section[..end])
        .map(|c| c[1].to_string())
        .collect()
}

/// No import circle in any crate, and the layers `src/lib.rs` states hold: a domain module
/// never imports `rpc`, `server`, `cli` or `mcp`; a leaf imports only leaves; only `store/`
/// names the SQL crates.
#[test]
fn the_house_has_no_circle_and_no_arrow_up() {
    for src in ["src", "hook-shim/src", "edits/src"] {
        let graph = module_imports(&manifest_dir().join(src));
        assert!(graph.len() > 5, "{src}: {} modules read", graph.len());
        assert_eq!(
            circles(&graph),
            Vec::<Vec<String>>::new(),
            "import circles in {src}"
        );
    }
    let lib = std::fs::read_to_string(manifest_dir().join("src/lib.rs")).unwrap();
    let clients = layer(&lib, "Clients and hosts");
    let domain = layer(&lib, "The domain");
    let leaves = layer(&lib, "Leaves");
    assert_eq!(clients, ["cli", "mcp", "server", "rpc"]);
    assert!(
        domain.len() > 10 && leaves.len() > 5,
        "{domain:?} {leaves:?}"
    );
    let graph = module_imports(&manifest_dir().join("src"));
    let top = |m: &str| m.split('/').next().unwrap_or_default().to_string();
    let mut up = Vec::new();
    for (module, deps) in &graph {
        let from = top(module);
        for dep in deps.iter().map(|d| top(d)).filter(|d| *d != from) {
            let wrong = (domain.contains(&from) && clients.contains(&dep))
                || (leaves.contains(&from) && !leaves.contains(&dep));
            if wrong {
                up.push(format!("{module} -> {dep}"));
            }
        }
    }
    assert_eq!(
        up,
        Vec::<String>::new(),
        "imports that run back up the layers"
    );
    let sql: Vec<String> = repository_files(&["rs"])
        .into_iter()
        .map(|f| relative(&f))
        .filter(|f| f.starts_with("src/") && !f.starts_with("src/store/"))
        .filter(|f| {
            let text = std::fs::read_to_string(manifest_dir().join(f)).unwrap();
            text.contains("rusqlite") || text.contains("r2d2")
        })
        .collect();
    assert_eq!(sql, Vec::<String>::new(), "SQL outside src/store/");
}

/// The import reader and the circle finder on a made-up crate: a circle through `super::`,
/// a brace list, a test module's imports ignored.
#[test]
fn the_import_reader_finds_circles_and_ignores_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::write(src.join("lib.rs"), "//! x\nmod a;\nmod store;\n").unwrap();
    std::fs::write(src.join("a.rs"), "//! a\nuse crate::{store::{self, b}};\n").unwrap();
    std::fs::write(src.join("store/mod.rs"), "//! s\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("store/b.rs"), "//! b\nuse super::c::X;\n").unwrap();
    std::fs::write(
        src.join("store/c.rs"),
        "//! c\npub struct X;\nfn f() { super::b::g() }\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
    )
    .unwrap();
    let graph = module_imports(src);
    assert_eq!(
        graph["a"].iter().collect::<Vec<_>>(),
        ["store", "store/b"],
        "{graph:?}"
    );
    assert_eq!(
        circles(&graph),
        [vec!["store/b".to_string(), "store/c".to_string()]]
    );
    assert!(!graph["store/c"].contains("a"), "a test module's import");
}

/// One lock-poison policy: a lock is taken through `sync::Locked::locked`, which recovers a
/// poisoned one, never with `.lock().unwrap()` (one panic would make every later request panic).
#[test]
fn locks_are_taken_through_the_one_recovering_helper() {
    let found: Vec<String> = repository_files(&["rs"])
        .into_iter()
        .map(|f| relative(&f))
        .filter(|f| f.starts_with("src/") || f.starts_with("hook-shim/src/"))
        .filter(|f| {
            let text = std::fs::read_to_string(manifest_dir().join(f)).unwrap();
            let code = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            code.contains(".lock().unwrap()") || code.contains(".lock().expect(")
        })
        .collect();
    assert_eq!(found, Vec::<String>::new());
}
