//! The immutable, compiled form of a guidebook that requests match against: guidelines sorted
//! by id, their scopes, and every pattern compiled once into a few large `RegexSet`s so that a
//! file is scanned once per set, not once per guideline. Reads nothing; built by `reload`, shared through `arc-swap`.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::bytes::Regex;
use regex_automata::meta;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};

use super::load::{compile_pattern, LoadError, REGEX_SIZE_LIMIT};
use super::Guideline;

/// Compiles a repository glob: `*` stays within a segment, `**` crosses, case-insensitive.
pub(crate) fn compile_repository_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
}

/// A guideline ready for matching. Its own regexes are only needed to locate the first
/// matching line (`explain`) or when the combined set could not be built, so they are compiled
/// on first use: compiling every pattern a second time would double the cost of each reload.
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

#[derive(Debug)]
enum Matcher {
    /// The patterns in automata of at most [`PATTERNS_PER_SET`] patterns each: one pass over
    /// the file per set. `owners[i]` is the guideline that pattern `i` of all sets (numbered
    /// across them) belongs to.
    Sets {
        sets: Vec<meta::Regex>,
        owners: Vec<u32>,
        /// Search caches, one per set, for each search running now or before: a search takes a
        /// row (or makes one) and puts it back. At most one row per concurrent search exists,
        /// where the regex crate's own pool keeps one per thread shard that ever searched.
        caches: std::sync::Mutex<Vec<Vec<meta::Cache>>>,
    },
    /// The combined automaton exceeded its size limit; fall back to one pass per pattern
    /// rather than refusing the whole guidebook.
    EachPattern,
}

/// The most patterns compiled into one `RegexSet`. A file is scanned once per set, so fewer,
/// larger sets scan faster, until a set's lazy DFA no longer fits its cache: it then gives up
/// and regex falls back to its PikeVM, orders of magnitude slower. Measured on generated
/// guidebooks (10 files of 20 KB): 20,000 patterns in one set took minutes per search; in sets
/// of 4,096 / 2,048 / 1,024 they took 2.8 / 4.8 / 10.5 ms, and 8,192 fell off the cliff again.
/// 2,048 keeps a margin below it and leaves guidebooks of up to ~1,000 guidelines in one set.
const PATTERNS_PER_SET: usize = 2048;

/// Compiles `patterns` into sets of at most [`PATTERNS_PER_SET`] each, in order, configured
/// as `regex::bytes::RegexSetBuilder` configures its engine (all matches, no captures, bytes
/// not required to be UTF-8, `^`/`$` at lines). Sets compile in parallel, one per core at a
/// time: a 10,000-guideline guidebook has five, and its first search waits for all of them.
fn build_sets(patterns: &[String]) -> Result<Vec<meta::Regex>, String> {
    let chunks: Vec<&[String]> = patterns.chunks(PATTERNS_PER_SET).collect();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut built: Vec<Result<meta::Regex, String>> = Vec::with_capacity(chunks.len());
    for wave in chunks.chunks(cores.max(1)) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = wave
                .iter()
                .map(|chunk| scope.spawn(move || build_set(chunk)))
                .collect();
            for h in handles {
                built.push(
                    h.join()
                        .unwrap_or_else(|_| Err("compiling a pattern set panicked".into())),
                );
            }
        });
    }
    built.into_iter().collect()
}

fn build_set(chunk: &[String]) -> Result<meta::Regex, String> {
    let config = meta::Config::new()
        .match_kind(MatchKind::All)
        .utf8_empty(false)
        .which_captures(regex_automata::nfa::thompson::WhichCaptures::None)
        .nfa_size_limit(Some(
            REGEX_SIZE_LIMIT
                .saturating_mul(chunk.len().max(1))
                .min(1 << 30),
        ))
        .hybrid_cache_capacity(64 << 20);
    meta::Builder::new()
        .configure(config)
        .syntax(syntax::Config::new().multi_line(true).utf8(false))
        .build_many(chunk)
        .map_err(|e| e.to_string())
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
    matcher: Matcher,
    /// Every repository glob of every guideline, and the guideline each belongs to.
    repo_globs: GlobSet,
    repo_glob_owner: Vec<u32>,
}

impl GuidelineSnapshot {
    /// Compiles `guidelines` (ids must be unique) into a snapshot.
    pub fn build(
        root: PathBuf,
        mut guidelines: Vec<Arc<Guideline>>,
        errors: Vec<LoadError>,
    ) -> Self {
        guidelines.sort_by(|a, b| a.id.cmp(&b.id));
        let mut owners = Vec::new();
        let mut patterns = Vec::new();
        let mut repo_globs = GlobSetBuilder::new();
        let mut repo_glob_owner = Vec::new();
        let compiled: Vec<CompiledGuideline> = guidelines
            .into_iter()
            .enumerate()
            .map(|(gi, g)| {
                for p in &g.patterns {
                    owners.push(gi as u32);
                    patterns.push(p.clone());
                }
                for glob in g.repositories.iter().flatten() {
                    // Validated at load time; a failure here would be a bug, and skipping the
                    // glob only narrows the guideline's scope.
                    if let Ok(glob) = compile_repository_glob(glob) {
                        repo_globs.add(glob);
                        repo_glob_owner.push(gi as u32);
                    }
                }
                CompiledGuideline {
                    guideline: g,
                    regexes: OnceLock::new(),
                    block_tokens: OnceLock::new(),
                }
            })
            .collect();
        let matcher = match build_sets(&patterns) {
            Ok(sets) => Matcher::Sets {
                sets,
                owners,
                caches: std::sync::Mutex::new(Vec::new()),
            },
            Err(e) => {
                tracing::warn!("patterns too large for one automaton ({e}); matching one by one");
                Matcher::EachPattern
            }
        };
        GuidelineSnapshot {
            root,
            guidelines: compiled,
            errors,
            loaded_at: SystemTime::now(),
            matcher,
            repo_globs: repo_globs.build().unwrap_or_else(|_| GlobSet::empty()),
            repo_glob_owner,
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
            for i in self.repo_globs.matches(repo) {
                repo_ok[self.repo_glob_owner[i] as usize] = true;
            }
        }
        self.applicability_with(repo_ok, language)
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
        match &self.matcher {
            Matcher::Sets {
                sets,
                owners,
                caches,
            } => {
                let taken = caches.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let mut row =
                    taken.unwrap_or_else(|| sets.iter().map(|s| s.create_cache()).collect());
                let input = Input::new(content);
                let mut base = 0;
                for (set, cache) in sets.iter().zip(row.iter_mut()) {
                    let mut found = PatternSet::new(set.pattern_len());
                    set.which_overlapping_matches_with(cache, &input, &mut found);
                    for pid in found.iter() {
                        let g = owners[base + pid.as_usize()] as usize;
                        hit[g] = applicable[g];
                    }
                    base += set.pattern_len();
                }
                caches.lock().unwrap_or_else(|p| p.into_inner()).push(row);
            }
            Matcher::EachPattern => {
                for (g, cg) in self.guidelines.iter().enumerate() {
                    hit[g] = applicable[g] && cg.regexes().iter().any(|r| r.is_match(content));
                }
            }
        }
        hit.iter()
            .enumerate()
            .filter_map(|(i, h)| h.then_some(i))
            .collect()
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
        match &self.matcher {
            Matcher::Sets { owners, .. } => owners.len(),
            Matcher::EachPattern => self
                .guidelines
                .iter()
                .map(|g| g.guideline.patterns.len())
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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

    /// More patterns than one set holds: the matches of later sets map back to the right
    /// guidelines (the pattern numbering continues across sets).
    #[test]
    fn searches_one_after_another_share_one_row_of_caches_whatever_their_thread() {
        let s = snapshot();
        let applicable = vec![true; s.guidelines.len()];
        for _ in 0..10 {
            std::thread::scope(|scope| {
                scope.spawn(|| s.matching(b"fun f() { println(1) }", &applicable));
            });
        }
        let Matcher::Sets { caches, .. } = &s.matcher else {
            panic!("sets expected")
        };
        assert_eq!(
            caches.lock().unwrap().len(),
            1,
            "one row, reused by ten threads"
        );
    }

    #[test]
    fn patterns_beyond_the_first_set_match_their_own_guidelines() {
        let n = PATTERNS_PER_SET * 2 + 10;
        let guidelines: Vec<Arc<Guideline>> = (0..n)
            .map(|i| {
                let word = format!("marker{i:05}x");
                g(&format!("g{i:05}"), None, None, &[word.as_str()])
            })
            .collect();
        let s = GuidelineSnapshot::build("/g".into(), guidelines, vec![]);
        assert!(matches!(&s.matcher, Matcher::Sets { sets, .. } if sets.len() == 3));
        let all = vec![true; n];
        let last = n - 1;
        let content = format!(
            "a marker00005x b marker{:05}x c marker{last:05}x",
            PATTERNS_PER_SET
        );
        assert_eq!(
            ids(&s, &s.matching(content.as_bytes(), &all)),
            [
                "g00005".to_string(),
                format!("g{:05}", PATTERNS_PER_SET),
                format!("g{last:05}")
            ]
        );
    }

    fn ids(s: &GuidelineSnapshot, idx: &[usize]) -> Vec<String> {
        idx.iter()
            .map(|i| s.guidelines[*i].id().to_string())
            .collect()
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
