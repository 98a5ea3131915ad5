//! The immutable form of a guidebook that requests match against: guidelines sorted by id,
//! their scopes, and their patterns indexed by the matching engine (`matching/`: one
//! pass per file over every pattern's literals, candidates confirmed by regexes compiled on
//! first need). Reads nothing; built by `reload`, shared through `arc-swap`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use globset::{Glob, GlobSet};
use regex::bytes::Regex;

use super::guideline::Guideline;
use super::matching::{
    build_glob_sets, compile_pattern, compile_repository_glob, index_of, PatternMatcher,
};
use crate::watched::LoadError;

/// A guideline ready for matching. Its own regexes are only needed to locate the first
/// matching line (`explain`), so they are compiled on first use.
#[derive(Debug)]
pub struct CompiledGuideline {
    pub guideline: Arc<Guideline>,
    regexes: OnceLock<Vec<Regex>>,
    /// The token count of this guideline's block of hook text, counted on first use by a
    /// `search` with `maxTokens` and kept for the snapshot's life (a process counts with one
    /// tokenizer), so repeated hooks do not recount the guidelines they match.
    block_tokens: OnceLock<usize>,
}

impl CompiledGuideline {
    pub fn id(&self) -> &str {
        &self.guideline.id
    }

    /// The token count of this guideline's hook-text block: `count()` the first time, then the
    /// remembered value.
    pub fn block_tokens(&self, count: impl FnOnce() -> usize) -> usize {
        *self.block_tokens.get_or_init(count)
    }

    fn regexes(&self) -> &[Regex] {
        self.regexes.get_or_init(|| {
            // Every pattern compiled once already, at load time; a failure here cannot happen
            // and would only make the guideline match less.
            self.guideline
                .patterns
                .iter()
                .filter_map(|p| compile_pattern(p).ok())
                .collect()
        })
    }
}

/// Which guidelines apply to one `(repository, language)` pair, as a dense flag per guideline.
pub type Applicability = Vec<bool>;

/// A guidebook compiled for matching. Never mutated after it is built.
#[derive(Debug)]
pub struct GuidelineSnapshot {
    pub root: PathBuf,
    /// Sorted by id; indices into this vector identify guidelines within the snapshot.
    pub guidelines: Vec<CompiledGuideline>,
    /// Files that are in error right now (their last good version, if any, is still served).
    pub errors: Vec<LoadError>,
    pub loaded_at: SystemTime,
    matcher: PatternMatcher,
    /// Every repository glob of every guideline, and the guideline each belongs to.
    /// Every distinct repository glob of every guideline, in sets of at most
    /// `matching::scope::GLOBS_PER_SET`, each with the guidelines of each of its globs.
    repo_globs: Vec<(GlobSet, Vec<Vec<u32>>)>,
    /// Applicability per (repository, language) seen lately: working it out is a pass over
    /// every guideline, a search's largest cost after the scan at 10,000 guidelines.
    applicable: Mutex<HashMap<ApplicabilityKey, Arc<Applicability>>>,
}

/// A file's repository identity and language.
pub type ApplicabilityKey = (Option<String>, Option<&'static str>);

/// The most (repository, language) pairs whose applicability a snapshot keeps.
const APPLICABILITY_KEPT: usize = 64;

impl GuidelineSnapshot {
    /// Compiles `guidelines` (ids must be unique) into a snapshot.
    pub fn build(
        root: PathBuf,
        mut guidelines: Vec<Arc<Guideline>>,
        errors: Vec<LoadError>,
    ) -> Self {
        guidelines.sort_by(|a, b| a.id.cmp(&b.id));
        // Distinct globs, each with its guidelines: a company guidebook repeats a few globs
        // thousands of times, and one set of 25,000 copies of `acme/**` failed to build.
        let mut glob_index: std::collections::HashMap<String, usize> = Default::default();
        let mut globs: Vec<(Glob, Vec<u32>)> = Vec::new();
        let compiled: Vec<CompiledGuideline> = guidelines
            .into_iter()
            .enumerate()
            .map(|(gi, g)| {
                for glob in g.repositories.iter().flatten() {
                    // Validated at load time; a failure here would be a bug, and skipping the
                    // glob only narrows the guideline's scope.
                    if let Some(&k) = glob_index.get(glob.as_str()) {
                        globs[k].1.push(gi as u32);
                    } else if let Ok(compiled) = compile_repository_glob(glob) {
                        glob_index.insert(glob.clone(), globs.len());
                        globs.push((compiled, vec![gi as u32]));
                    }
                }
                CompiledGuideline {
                    guideline: g,
                    regexes: OnceLock::new(),
                    block_tokens: OnceLock::new(),
                }
            })
            .collect();
        // Each pattern with how it was indexed when it was loaded (or now, for a guideline
        // built in memory), borrowed rather than copied.
        let patterns = compiled
            .iter()
            .enumerate()
            .flat_map(|(gi, c)| {
                let g = &c.guideline;
                let indexes = g
                    .indexes
                    .get_or_init(|| g.patterns.iter().map(|p| index_of(p)).collect());
                g.patterns
                    .iter()
                    .zip(indexes)
                    .map(move |(p, index)| (gi as u32, p.as_str(), index))
            })
            .collect();
        let matcher = PatternMatcher::build_indexed(patterns);
        GuidelineSnapshot {
            root,
            guidelines: compiled,
            errors,
            loaded_at: SystemTime::now(),
            matcher,
            repo_globs: build_glob_sets(globs),
            applicable: Mutex::new(HashMap::new()),
        }
    }

    /// An empty snapshot, served before the first load finishes.
    pub fn empty(root: PathBuf) -> Self {
        Self::build(root, Vec::new(), Vec::new())
    }

    /// Which guidelines apply to a file with this repository identity and language.
    pub fn applicability(&self, repository: Option<&str>, language: Option<&str>) -> Applicability {
        let mut repo_ok: Vec<bool> = self
            .guidelines
            .iter()
            .map(|g| g.guideline.repositories.is_none())
            .collect();
        if let Some(repo) = repository {
            for (set, owners) in &self.repo_globs {
                for i in set.matches(repo) {
                    for &g in &owners[i] {
                        repo_ok[g as usize] = true;
                    }
                }
            }
        }
        self.applicability_with(repo_ok, language)
    }

    /// [`Self::applicability`], kept for the next file of the same repository and language.
    pub fn applicability_kept(
        &self,
        repository: Option<&str>,
        language: Option<&'static str>,
    ) -> Arc<Applicability> {
        let lock = || self.applicable.lock().unwrap_or_else(|e| e.into_inner());
        let key = (repository.map(str::to_string), language);
        if let Some(a) = lock().get(&key) {
            return a.clone();
        }
        let made = Arc::new(self.applicability(repository, language));
        let mut kept = lock();
        if kept.len() >= APPLICABILITY_KEPT {
            kept.clear();
        }
        kept.insert(key, made.clone());
        made
    }

    /// Which guidelines apply to a file of `language` in whatever repository each is scoped to:
    /// what an example of a guideline is checked under.
    pub fn applicability_in_any_repository(&self, language: Option<&str>) -> Applicability {
        self.applicability_with(vec![true; self.guidelines.len()], language)
    }

    fn applicability_with(&self, repo_ok: Vec<bool>, language: Option<&str>) -> Applicability {
        self.guidelines
            .iter()
            .zip(repo_ok)
            .map(|(g, repo_ok)| {
                repo_ok
                    && match (&g.guideline.languages, language) {
                        (None, _) => true,
                        (Some(langs), Some(l)) => langs.contains(&l),
                        (Some(_), None) => false,
                    }
            })
            .collect()
    }

    /// Indices of the applicable guidelines that match `content`, ascending (so in id order).
    /// The content is scanned once for all patterns.
    pub fn matching(&self, content: &[u8], applicable: &Applicability) -> Vec<usize> {
        if !applicable.iter().any(|a| *a) {
            return Vec::new();
        }
        let mut hit = vec![false; self.guidelines.len()];
        self.matcher.mark_matches(content, applicable, &mut hit);
        marked(&hit)
    }

    /// For a guideline known to match: the 1-based line of its earliest match and the pattern
    /// that matched there.
    pub fn first_match(&self, guideline: usize, content: &[u8]) -> Option<(usize, &str)> {
        let g = &self.guidelines[guideline];
        let (start, pi) = g
            .regexes()
            .iter()
            .enumerate()
            .filter_map(|(pi, r)| r.find(content).map(|m| (m.start(), pi)))
            .min()?;
        let line = content[..start].iter().filter(|b| **b == b'\n').count() + 1;
        Some((line, g.guideline.patterns[pi].as_str()))
    }

    /// Index of a guideline by id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.guidelines.binary_search_by(|g| g.id().cmp(id)).ok()
    }

    /// How many patterns the snapshot holds (for logs and `status`).
    pub fn pattern_count(&self) -> usize {
        self.matcher.counts().patterns
    }
}

/// The indices of the `true`s of `marks`, ascending. A file's (or a search's) hits are a
/// handful among up to 10,000 guidelines: blocks of 64 without one are passed over with one
/// test each (an OR the compiler does many bytes at a time) instead of a compare and branch
/// per guideline, which was 3% of the sidecar's CPU under load at 10,000 guidelines.
pub(crate) fn marked(marks: &[bool]) -> Vec<usize> {
    const BLOCK: usize = 64;
    let mut out = Vec::new();
    for (b, block) in marks.chunks(BLOCK).enumerate() {
        if block.iter().fold(false, |any, &m| any | m) {
            out.extend(
                block
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &m)| m.then_some(b * BLOCK + i)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn marked_lists_every_true_in_order_across_blocks() {
        for len in [0, 1, 63, 64, 65, 200, 10_000] {
            for every in [1, 3, 64, 127, 5_000] {
                let marks: Vec<bool> = (0..len).map(|i| i % every == every - 1).collect();
                let plain: Vec<usize> = (0..len).filter(|&i| marks[i]).collect();
                assert_eq!(marked(&marks), plain, "len {len}, every {every}th");
            }
        }
    }

    fn g(
        id: &str,
        repos: Option<&[&str]>,
        langs: Option<&[&'static str]>,
        pats: &[&str],
    ) -> Arc<Guideline> {
        Arc::new(Guideline {
            id: id.into(),
            repositories: repos.map(|r| r.iter().map(|s| s.to_string()).collect()),
            languages: langs.map(|l| l.to_vec()),
            patterns: pats.iter().map(|s| s.to_string()).collect(),
            content: format!("{id} content"),
            source: Path::new("/g").join(id).join("guideline.yaml"),
            id_line: Some(1),
            examples: Vec::new(),
            indexes: Default::default(),
        })
    }

    fn snapshot() -> GuidelineSnapshot {
        GuidelineSnapshot::build(
            "/g".into(),
            vec![
                g("zeta", None, None, &["TODO"]),
                g("backend", Some(&["acme/backend-*"]), None, &["println"]),
                g("all-acme", Some(&["ACME/**"]), None, &["println"]),
                g(
                    "kotlin",
                    None,
                    Some(&["kotlin"]),
                    &["runBlocking", "^import"],
                ),
            ],
            vec![],
        )
    }

    /// More literal-less patterns than one set holds: the matches of later sets map back to
    /// the right guidelines (the pattern numbering continues across sets).
    #[test]
    fn patterns_beyond_the_first_set_match_their_own_guidelines() {
        // `ab\wcd`: no literal of three bytes, so every one of them goes into a set.
        let code = |i: usize| {
            let l = |k: usize| (b'a' + (k % 26) as u8) as char;
            (
                format!("{}{}", l(i / 26 / 26 / 26), l(i / 26 / 26)),
                format!("{}{}", l(i / 26), l(i)),
            )
        };
        let n = 2048 * 2 + 10;
        let guidelines: Vec<Arc<Guideline>> = (0..n)
            .map(|i| {
                let (a, b) = code(i);
                g(&format!("g{i:05}"), None, None, &[&format!(r"{a}\w{b}")])
            })
            .collect();
        let s = GuidelineSnapshot::build("/g".into(), guidelines, vec![]);
        let counts = s.matcher.counts();
        assert_eq!(
            (counts.sets, counts.prefixed + counts.split + counts.inner),
            (3, 0)
        );
        let all = vec![true; n];
        let text = |i: usize| {
            let (a, b) = code(i);
            format!("{a}_{b}")
        };
        let content = format!("{} . {} . {}", text(5), text(2048), text(n - 1));
        assert_eq!(
            ids(&s, &s.matching(content.as_bytes(), &all)),
            [
                "g00005".to_string(),
                "g02048".into(),
                format!("g{:05}", n - 1)
            ]
        );
    }

    fn ids(s: &GuidelineSnapshot, idx: &[usize]) -> Vec<String> {
        idx.iter()
            .map(|i| s.guidelines[*i].id().to_string())
            .collect()
    }

    /// Thousands of guidelines repeating the same few globs all keep their scope (one set of
    /// 30,000 globs failed to build, and every repository-scoped guideline stopped applying).
    #[test]
    fn many_repeated_repository_globs_all_apply() {
        let n = 30_000;
        let guidelines: Vec<Arc<Guideline>> = (0..n)
            .map(|i| {
                let glob: &[&str] = if i % 2 == 0 {
                    &["acme/**"]
                } else {
                    &["acme/backend-*"]
                };
                g(&format!("g{i:05}"), Some(glob), None, &["TODO"])
            })
            .collect();
        let s = GuidelineSnapshot::build("/g".into(), guidelines, vec![]);
        let applies = |repo| {
            s.applicability(Some(repo), None)
                .iter()
                .filter(|a| **a)
                .count()
        };
        assert_eq!(applies("acme/backend-order"), n);
        assert_eq!(applies("acme/web"), n / 2);
        assert_eq!(applies("other/backend-x"), 0);
    }

    #[test]
    fn scope_by_repository_and_language() {
        let s = snapshot();
        let text = b"import x\nprintln TODO runBlocking";
        let m = |repo, lang| ids(&s, &s.matching(text, &s.applicability(repo, lang)));
        assert_eq!(
            m(Some("acme/backend-order"), Some("kotlin")),
            vec!["all-acme", "backend", "kotlin", "zeta"]
        );
        assert_eq!(
            m(Some("acme/frontend-web"), Some("java")),
            vec!["all-acme", "zeta"]
        );
        assert_eq!(
            m(Some("acme/backend-order/sub"), None),
            vec!["all-acme", "zeta"]
        );
        assert_eq!(m(None, Some("kotlin")), vec!["kotlin", "zeta"]);
        assert_eq!(m(Some("other/backend-order"), None), vec!["zeta"]);
    }

    #[test]
    fn reports_first_matching_line_and_pattern() {
        let s = snapshot();
        let k = s.index_of("kotlin").unwrap();
        assert_eq!(
            s.first_match(k, b"a\nb runBlocking\nimport c\n"),
            Some((2, "runBlocking"))
        );
        assert_eq!(
            s.first_match(k, b"package a\nimport c\n"),
            Some((2, "^import"))
        );
    }

    #[test]
    fn matches_non_utf8_content() {
        let s = snapshot();
        let all = vec![true; s.guidelines.len()];
        assert_eq!(
            ids(&s, &s.matching(b"\xff\xfe TODO \x00", &all)),
            vec!["zeta"]
        );
    }
}
