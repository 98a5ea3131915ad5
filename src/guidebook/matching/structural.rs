//! Structural (`ast:`) leaves: ast-grep patterns matched on a file's syntax tree. The only ast-grep user.
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

use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Pattern};
use ast_grep_language::{Language, SupportLang};
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

impl StructuralSpec {
    /// How `explain`, `scan`, examples and the hook text name the leaf.
    pub fn describe(&self) -> String {
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
    // The pattern as ast-grep parses it (meta-variables made identifiers), down to the node it
    // matches with (it unwraps single children, as `Pattern` does): a syntax error anywhere in
    // that node would match something else than written. A token tree-sitter made up (Java's
    // `;` after `foo($A)`) or an error wrapped around the whole pattern ast-grep leaves out.
    let processed = lang.pre_process_pattern(source);
    let broken = StrDoc::try_new(&processed, lang).map_or(true, |doc| {
        let root = AstGrep::doc(doc);
        let mut node = root.root();
        loop {
            let only = match node.children().len() {
                1 => node.child(0),
                2 => node
                    .child(1)
                    .filter(|c| c.is_missing() || c.kind().is_empty())
                    .and_then(|_| node.child(0)),
                _ => None,
            };
            match only {
                Some(child) => node = child,
                None => break,
            }
        }
        let broken = node.dfs().any(|n| n.is_error());
        broken
    });
    if broken || pattern.has_error() {
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
        })
    }

    /// Text every match's file must hold: the longest fixed token of the pattern and its
    /// relations (ast-grep's own `fixed_string`, what its CLI pre-filters files by); `None` when
    /// the patterns have no fixed token (`$A`).
    pub fn required_text(&self) -> Option<String> {
        [Some(&self.pattern), self.inside.as_ref(), self.has.as_ref()]
            .into_iter()
            .flatten()
            .map(|p| p.fixed_string().to_string())
            .max_by_key(|s| s.len())
            .filter(|s| !s.trim().is_empty())
    }

    /// The byte ranges of every node of `tree` that matches, in the order of a pre-order walk
    /// (so by start offset).
    pub fn find(&self, tree: &SyntaxTree) -> Vec<(usize, usize)> {
        let root = tree.root.root();
        root.find_all(&self.pattern)
            .filter(|m| self.inside.as_ref().is_none_or(|p| m.get_node().inside(p)))
            .filter(|m| self.has.as_ref().is_none_or(|p| m.get_node().has(p)))
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
