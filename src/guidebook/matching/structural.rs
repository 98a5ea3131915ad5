//! Structural (`ast:`) leaves: ast-grep patterns on a file's syntax tree; the only ast-grep user.
//!
//! The rest of the code sees [`StructuralSpec`] (what a guideline says, plain data that the parse
//! cache serialises), [`StructuralPattern`] (a spec compiled for one language) and
//! [`SyntaxTree`] (one file parsed once, shared by every leaf that asks). A language whose
//! grammar is not compiled in (our `ast-*` cargo features) is never handed to ast-grep, which
//! panics on it: [`grammar`] answers `None` instead, and the loader makes that a load error.
//!
//! What a leaf matches is what `ast-grep run --pattern P --lang L` reports on the same file
//! (same crate version, same pattern strictness, the same pre-order walk); `inside`/`has` are
//! ast-grep's `inside`/`has` relations with `stopBy: end` (any ancestor, any descendant), and
//! their meta-variables are their own (not shared with `pattern`).

use std::cell::Cell;

use ast_grep_core::matcher::MatcherExt;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Pattern};
use ast_grep_language::SupportLang;
use serde::{Deserialize, Serialize};

/// An `ast` leaf as written: an ast-grep pattern and, optionally, a pattern some ancestor of a
/// match must match (`inside`) and one some descendant must match (`has`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuralSpec {
    pub pattern: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has: Option<String>,
}

#[cfg(test)]
impl StructuralSpec {
    /// How the differential test names a leaf in its failures (`explain` and `scan` show the
    /// pattern alone).
    fn describe(&self) -> String {
        let mut out = self.pattern.clone();
        if let Some(inside) = &self.inside {
            out.push_str(&format!(" inside {inside}"));
        }
        if let Some(has) = &self.has {
            out.push_str(&format!(" has {has}"));
        }
        out
    }
}

/// The languages whose grammar this build holds, in `language::LANGUAGES` order.
pub fn compiled_in() -> Vec<&'static str> {
    crate::language::LANGUAGES
        .iter()
        .copied()
        .filter(|l| grammar(l).is_some())
        .collect()
}

/// The languages an `ast` leaf can ever name (with every `ast-*` feature on).
pub const STRUCTURAL_LANGUAGES: &[&str] = &[
    "kotlin",
    "java",
    "python",
    "typescript",
    "javascript",
    "go",
    "rust",
];

/// The grammar of `language` (a name of `language::LANGUAGES`), when this build holds it.
fn grammar(language: &str) -> Option<SupportLang> {
    Some(match language {
        "kotlin" if cfg!(feature = "ast-kotlin") => SupportLang::Kotlin,
        "java" if cfg!(feature = "ast-java") => SupportLang::Java,
        "python" if cfg!(feature = "ast-python") => SupportLang::Python,
        "typescript" if cfg!(feature = "ast-typescript") => SupportLang::TypeScript,
        "javascript" if cfg!(feature = "ast-typescript") => SupportLang::JavaScript,
        "go" if cfg!(feature = "ast-go") => SupportLang::Go,
        "rust" if cfg!(feature = "ast-rust") => SupportLang::Rust,
        _ => return None,
    })
}

/// Why a spec cannot be used for a language.
pub fn language_error(language: &str) -> String {
    if STRUCTURAL_LANGUAGES.contains(&language) {
        format!(
            "`ast` patterns for {language} are not built into this guidebook binary (cargo feature `ast-{}`); built in: {}",
            if language == "javascript" { "typescript" } else { language },
            list(&compiled_in())
        )
    } else {
        format!(
            "`ast` patterns do not support {language}; they support {}",
            list(STRUCTURAL_LANGUAGES)
        )
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// A spec compiled for one language.
pub struct StructuralPattern {
    pattern: Pattern,
    inside: Option<Pattern>,
    has: Option<Pattern>,
    /// The longest named token of `pattern` (an identifier, say): every match holds a token of
    /// exactly this text, so only the nodes around its occurrences are tried.
    anchor: Option<String>,
}

/// The longest token of `pattern` that ast-grep matches by its text: a named leaf (an
/// identifier, a literal), not a meta-variable. Unnamed tokens (`(`, keywords) are matched by
/// kind and may be skipped after `$$$`, so they say nothing certain about a match's text.
fn named_token(pattern: &Pattern) -> Option<String> {
    fn walk(d: &ast_grep_core::matcher::DumpPattern<'_>, best: &mut Option<String>) {
        if d.children.is_empty() {
            let named = !d.is_meta_var && d.kind.is_some();
            if named
                && !d.text.trim().is_empty()
                && best.as_ref().is_none_or(|b| b.len() < d.text.len())
            {
                *best = Some(d.text.to_string());
            }
        }
        d.children.iter().for_each(|c| walk(c, best));
    }
    let dump = pattern.dump(&|_| Some("named".into()))?;
    let mut best = None;
    walk(&dump, &mut best);
    best
}

impl std::fmt::Debug for StructuralPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StructuralPattern")
    }
}

/// One pattern compiled for `lang`, refused when it does not parse as one node.
fn compile_one(
    source: &str,
    key: &str,
    lang: SupportLang,
    language: &str,
) -> Result<Pattern, String> {
    if source.trim().is_empty() {
        return Err(format!("`ast.{key}` is empty"));
    }
    if source.len() > super::MAX_PATTERN_LEN {
        return Err(format!(
            "`ast.{key}` is {} bytes long; the limit is {}",
            source.len(),
            super::MAX_PATTERN_LEN
        ));
    }
    let pattern = Pattern::try_new(source, lang)
        .map_err(|e| format!("`ast.{key}` `{source}` is not a {language} pattern: {e}"))?;
    // A pattern that does not parse into a node (its root is a syntax error) is refused. An
    // error tree-sitter recovers from inside the node (Java's `{ $$$ }`, where `$$$` is no
    // statement) is kept: ast-grep matches such patterns as written, and so do we.
    if pattern.has_error() {
        return Err(format!(
            "`ast.{key}` `{source}` does not parse as {language} code"
        ));
    }
    Ok(pattern)
}

impl StructuralPattern {
    /// `spec` compiled for `language`, or why it cannot be (the language is not compiled in, or
    /// a pattern does not parse in it). Never panics.
    pub fn compile(spec: &StructuralSpec, language: &str) -> Result<StructuralPattern, String> {
        let lang = grammar(language).ok_or_else(|| language_error(language))?;
        Ok(StructuralPattern {
            pattern: compile_one(&spec.pattern, "pattern", lang, language)?,
            inside: spec
                .inside
                .as_deref()
                .map(|s| compile_one(s, "inside", lang, language))
                .transpose()?,
            has: spec
                .has
                .as_deref()
                .map(|s| compile_one(s, "has", lang, language))
                .transpose()?,
            anchor: None,
        }
        .anchored())
    }

    fn anchored(mut self) -> StructuralPattern {
        self.anchor = named_token(&self.pattern);
        self
    }

    /// Text every match's file must hold: the longest named token of the pattern and of its
    /// relations (each must match somewhere); `None` when none has one (`$A + $B`).
    pub fn required_text(&self) -> Option<String> {
        [Some(&self.pattern), self.inside.as_ref(), self.has.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(named_token)
            .max_by_key(|s| s.len())
    }

    /// The byte ranges of every node of `tree` that matches, ordered as a pre-order walk finds
    /// them (by start; an ancestor before its descendant). With an anchor, only the nodes that
    /// hold one of its occurrences are tried (the smallest node around it and its ancestors),
    /// instead of every node of the tree: the same matches, since each holds the anchor token.
    pub fn find(&self, tree: &SyntaxTree) -> Vec<(usize, usize)> {
        let Some(anchor) = &self.anchor else {
            return self.find_everywhere(tree);
        };
        let root = &tree.root;
        let mut tried = std::collections::HashSet::new();
        let mut found = Vec::new();
        for (at, _) in root.get_text().match_indices(anchor.as_str()) {
            let Some(inner) = root
                .root()
                .get_inner_node()
                .descendant_for_byte_range(at, at + anchor.len())
            else {
                continue;
            };
            let node = root.adopt(inner);
            for candidate in std::iter::once(node.clone()).chain(node.ancestors()) {
                if !tried.insert(candidate.node_id()) {
                    // Its ancestors were tried from an earlier occurrence too.
                    break;
                }
                if self.pattern.match_node(candidate.clone()).is_some()
                    && self.relations_hold(&candidate)
                {
                    let r = candidate.range();
                    found.push((
                        r.start,
                        std::cmp::Reverse(r.end),
                        candidate.ancestors().count(),
                    ));
                }
            }
        }
        found.sort_unstable();
        found.into_iter().map(|(s, e, _)| (s, e.0)).collect()
    }

    fn relations_hold(&self, node: &ast_grep_core::Node<'_, StrDoc<SupportLang>>) -> bool {
        self.inside.as_ref().is_none_or(|p| node.inside(p))
            && self.has.as_ref().is_none_or(|p| node.has(p))
    }

    /// [`Self::find`] by trying every node of the tree, as `ast-grep run` does.
    fn find_everywhere(&self, tree: &SyntaxTree) -> Vec<(usize, usize)> {
        let root = tree.root.root();
        root.find_all(&self.pattern)
            .filter(|m| self.relations_hold(m.get_node()))
            .map(|m| {
                let r = m.get_node().range();
                (r.start, r.end)
            })
            .collect()
    }
}

/// `spec` checked in each of `languages` (each must be built in and every pattern must parse in
/// it), and the regex of the text each of its matches needs in whichever language: the
/// escaped required text of each language, as alternatives (`None`: some language has none).
pub fn prefilter(spec: &StructuralSpec, languages: &[&str]) -> Result<Option<String>, String> {
    let mut texts = Vec::new();
    let mut all = true;
    for language in languages {
        match StructuralPattern::compile(spec, language)?.required_text() {
            Some(t) => texts.push(regex::escape(&t)),
            None => all = false,
        }
    }
    texts.sort();
    texts.dedup();
    Ok(match texts.len() {
        _ if !all || texts.is_empty() => None,
        1 => texts.pop(),
        _ => Some(format!("(?:{})", texts.join("|"))),
    })
}

/// One file parsed with its language's grammar.
pub struct SyntaxTree {
    root: AstGrep<StrDoc<SupportLang>>,
}

thread_local! {
    static PARSES: Cell<usize> = const { Cell::new(0) };
}

/// How many files this thread has parsed: what tests count to show a file is parsed only when
/// it can match, and at most once per evaluation.
#[cfg(test)]
pub fn parses_on_this_thread() -> usize {
    PARSES.with(Cell::get)
}

impl SyntaxTree {
    /// `content` parsed as `language`; `None` when the grammar is not compiled in or the
    /// content is not UTF-8 (a structural leaf then does not hold).
    pub fn parse(language: &str, content: &[u8]) -> Option<SyntaxTree> {
        let lang = grammar(language)?;
        let source = std::str::from_utf8(content).ok()?;
        PARSES.with(|p| p.set(p.get() + 1));
        let doc = StrDoc::try_new(source, lang).ok()?;
        Some(SyntaxTree {
            root: AstGrep::doc(doc),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(p: &str) -> StructuralSpec {
        StructuralSpec {
            pattern: p.to_string(),
            inside: None,
            has: None,
        }
    }

    #[test]
    fn a_call_is_told_from_comments_and_strings() {
        let code = b"fun f() {\n  // runBlocking { }\n  val s = \"runBlocking { x }\"\n  runBlocking { work() }\n}\n";
        let p = StructuralPattern::compile(&spec("runBlocking { $$$ }"), "kotlin").unwrap();
        let tree = SyntaxTree::parse("kotlin", code).unwrap();
        let found = p.find(&tree);
        assert_eq!(found.len(), 1);
        let (s, e) = found[0];
        assert_eq!(&code[s..e], b"runBlocking { work() }");
        assert_eq!(p.required_text().as_deref(), Some("runBlocking"));
    }

    #[test]
    fn relations_narrow_matches() {
        let code = b"class C {\n  @GetMapping fun a() { runBlocking { } }\n  fun b() { runBlocking { } }\n}\n";
        let tree = SyntaxTree::parse("kotlin", code).unwrap();
        let mut s = spec("runBlocking { $$$ }");
        s.inside = Some("@GetMapping fun $F() { $$$ }".into());
        let p = StructuralPattern::compile(&s, "kotlin").unwrap();
        let lines: Vec<usize> = p
            .find(&tree)
            .iter()
            .map(|(s, _)| code[..*s].iter().filter(|b| **b == b'\n').count() + 1)
            .collect();
        assert_eq!(lines, [2]);
    }

    #[test]
    fn bad_patterns_and_missing_grammars_are_errors_not_panics() {
        let e = StructuralPattern::compile(&spec("fun ((("), "kotlin").unwrap_err();
        assert!(e.contains("kotlin"), "{e}");
        let e = StructuralPattern::compile(&spec("$A"), "markdown").unwrap_err();
        assert!(e.contains("do not support markdown"), "{e}");
        assert!(SyntaxTree::parse("markdown", b"# x").is_none());
        assert!(SyntaxTree::parse("kotlin", b"\xff\xfe").is_none());
        let p = StructuralPattern::compile(&spec("$A"), "kotlin").unwrap();
        assert_eq!(p.required_text(), None);
    }
}

/// The differential test: our structural leaves against the `ast-grep` CLI of the same version
/// (PyPI's `ast-grep-cli`, installed into a venv under `target/agents/` on first use) on real
/// sources (`tests/fixtures/structural/`, or the directory `GUIDEBOOK_AST_DIFF_DIR` names).
/// It runs where `ADAPTIVE_GUIDEBOOK_REAL_TESTS=1` (`scripts/test`, not `--offline`), as the other
/// tests that install tools do, or with the CLI already installed or named.
#[cfg(test)]
mod differential {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};

    /// The CLI's version: the library's, pinned in Cargo.toml.
    const CLI_VERSION: &str = "0.50.0";

    fn cli() -> Option<PathBuf> {
        if let Some(given) = std::env::var_os("AST_GREP_CLI") {
            return Some(PathBuf::from(given));
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/agents")
            .join(format!("ast-grep-cli-{CLI_VERSION}"));
        let exe = dir.join("bin/ast-grep");
        if exe.exists() {
            return Some(exe);
        }
        // Installed from PyPI only where the real tools' tests run (`scripts/test`).
        if std::env::var("ADAPTIVE_GUIDEBOOK_REAL_TESTS").as_deref() != Ok("1") {
            return None;
        }
        let venv = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status();
        assert!(venv.is_ok_and(|s| s.success()), "python3 -m venv failed");
        let out = Command::new(dir.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                &format!("ast-grep-cli=={CLI_VERSION}"),
            ])
            .stdin(Stdio::null())
            .output()
            .expect("running pip");
        if !(out.status.success() && exe.exists()) {
            let _ = std::fs::remove_dir_all(&dir);
            panic!(
                "pip install ast-grep-cli=={CLI_VERSION} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Some(exe)
    }

    fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let path = e.path();
            if path.is_dir() {
                files(&path, ext, out);
            } else if path.extension().is_some_and(|x| x == ext) {
                out.push(path);
            }
        }
    }

    type Found = BTreeMap<PathBuf, Vec<(usize, usize)>>;

    /// What the CLI reports for `spec` in `language` over `paths`.
    fn cli_matches(exe: &Path, spec: &StructuralSpec, language: &str, paths: &[PathBuf]) -> Found {
        let mut rule = format!(
            "id: diff\nlanguage: {language}\nrule:\n  pattern: {:?}\n",
            spec.pattern
        );
        if let Some(inside) = &spec.inside {
            rule.push_str(&format!("  inside: {{pattern: {inside:?}, stopBy: end}}\n"));
        }
        if let Some(has) = &spec.has {
            rule.push_str(&format!("  has: {{pattern: {has:?}, stopBy: end}}\n"));
        }
        let mut found = Found::new();
        for chunk in paths.chunks(200) {
            let out = Command::new(exe)
                .args(["scan", "--inline-rules", &rule, "--json=compact"])
                .args(chunk)
                .stdin(Stdio::null())
                .output()
                .expect("running ast-grep");
            assert!(
                out.status.success() || out.status.code() == Some(1),
                "ast-grep: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            for m in json.as_array().unwrap() {
                let at = &m["range"]["byteOffset"];
                found
                    .entry(PathBuf::from(m["file"].as_str().unwrap()))
                    .or_default()
                    .push((
                        at["start"].as_u64().unwrap() as usize,
                        at["end"].as_u64().unwrap() as usize,
                    ));
            }
        }
        found.values_mut().for_each(|v| v.sort_unstable());
        found
    }

    #[test]
    fn our_matches_are_the_ast_grep_clis() {
        let Some(exe) = cli() else {
            eprintln!("skipped: ADAPTIVE_GUIDEBOOK_REAL_TESTS is not 1 (scripts/test sets it), and no ast-grep CLI under target/agents/");
            return;
        };
        let root = std::env::var_os("GUIDEBOOK_AST_DIFF_DIR").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/structural"),
            PathBuf::from,
        );
        let spec = |p: &str, inside: Option<&str>, has: Option<&str>| StructuralSpec {
            pattern: p.into(),
            inside: inside.map(Into::into),
            has: has.map(Into::into),
        };
        let cases = [
            ("kotlin", "kt", spec("runBlocking { $$$ }", None, None)),
            ("kotlin", "kt", spec("runBlocking($$$ARGS)", None, None)),
            ("kotlin", "kt", spec("launch { $$$ }", None, None)),
            ("kotlin", "kt", spec("$SCOPE.launch($$$)", None, None)),
            ("kotlin", "kt", spec("assertEquals($A, $B)", None, None)),
            ("kotlin", "kt", spec("expect($N)", None, None)),
            ("kotlin", "kt", spec("val $V = $E", None, None)),
            (
                "kotlin",
                "kt",
                spec("try { $$$ } finally { $$$ }", None, None),
            ),
            ("kotlin", "kt", spec("$C.newCall($R).execute()", None, None)),
            ("kotlin", "kt", spec("$A == $B", None, None)),
            (
                "kotlin",
                "kt",
                spec("expect($N)", Some("runBlocking { $$$ }"), None),
            ),
            (
                "kotlin",
                "kt",
                spec("runBlocking { $$$ }", None, Some("delay($D)")),
            ),
            ("java", "java", spec("System.out.println($A)", None, None)),
            ("java", "java", spec("$C.newCall($R).execute()", None, None)),
            ("java", "java", spec("new $T($$$)", None, None)),
            (
                "java",
                "java",
                spec(
                    "$R.close()",
                    Some("try { $$$ } catch ($E $V) { $$$ }"),
                    None,
                ),
            ),
            ("java", "java", spec("if ($C) { $$$ }", None, None)),
        ];
        let mut compared = 0;
        for (language, ext, spec) in cases {
            let mut paths = Vec::new();
            files(&root, ext, &mut paths);
            assert!(
                !paths.is_empty(),
                "no .{ext} files under {}",
                root.display()
            );
            let pattern = StructuralPattern::compile(&spec, language)
                .unwrap_or_else(|e| panic!("{}: {e}", spec.describe()));
            let mut ours = Found::new();
            let required = pattern.required_text();
            for path in &paths {
                let content = std::fs::read(path).unwrap();
                if let Some(tree) = SyntaxTree::parse(language, &content) {
                    let found = pattern.find(&tree);
                    let mut everywhere = pattern.find_everywhere(&tree);
                    let mut sorted = found.clone();
                    sorted.sort_unstable();
                    everywhere.sort_unstable();
                    assert_eq!(sorted, everywhere, "{}: around the anchor", path.display());
                    if let (Some(text), false) = (&required, found.is_empty()) {
                        assert!(
                            String::from_utf8_lossy(&content).contains(text.as_str()),
                            "{}: a match without `{text}`",
                            path.display()
                        );
                    }
                    if !found.is_empty() {
                        let mut found = found;
                        found.sort_unstable();
                        ours.insert(path.clone(), found);
                    }
                }
            }
            let theirs = cli_matches(&exe, &spec, language, &paths);
            assert_eq!(ours, theirs, "{language}: {}", spec.describe());
            compared += ours.values().map(Vec::len).sum::<usize>();
            eprintln!(
                "{language} `{}`: {} matches in {} files, the same as ast-grep's",
                spec.describe(),
                ours.values().map(Vec::len).sum::<usize>(),
                ours.len()
            );
        }
        assert!(compared > 100, "only {compared} matches compared");
    }
}
