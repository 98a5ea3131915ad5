//! The immutable form of a guidebook that requests match against: guidelines sorted by id,
//! their scopes, and their patterns indexed by the matching engine (`matching/`: one
//! pass per file over every pattern's literals, candidates confirmed by regexes compiled on
//! first need). Reads nothing; built by `reload`, shared through `arc-swap`.

use crate::sync::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use globset::{Glob, GlobSet};
use regex::bytes::Regex;

use super::guideline::Guideline;
use super::matching::{
    build_glob_sets, compile_pattern, compile_repository_glob, index_of, leaf_line_in,
    leaf_node_in, stays_on_one_line, Edit, PathScopes, PatternMatcher, StructuralPattern,
    StructuralSpec, Text, Within,
};
use crate::watched::LoadError;

/// A guideline ready for matching. Its own regexes are only needed to locate the first
/// matching line (`explain`), so they are compiled on first use.
#[derive(Debug)]
pub struct CompiledGuideline {
    pub guideline: Arc<Guideline>,
    /// Each pattern compiled, and whether its matches stay on one line.
    regexes: OnceLock<Vec<Option<(Regex, bool)>>>,
    /// Per position in `patterns`: a structural leaf's patterns compiled for each of the
    /// guideline's languages, on first need.
    structural: OnceLock<Vec<Option<StructuralLeaf>>>,
    /// Its condition is today's shape (any of some patterns over the whole file), which the
    /// matcher's hit decides alone; others are evaluated on the files the matcher finds.
    plain: bool,
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

    /// Its patterns compiled, by position. Every pattern compiled once already, at load time;
    /// a failure here cannot happen and would only make that leaf never hold.
    fn regexes(&self) -> &[Option<(Regex, bool)>] {
        self.regexes.get_or_init(|| {
            self.guideline
                .patterns
                .iter()
                .map(|p| Some((compile_pattern(p).ok()?, stays_on_one_line(p))))
                .collect()
        })
    }

    /// Its structural leaves by position in `patterns` (`None`: a regex leaf).
    fn structural(&self) -> &[Option<StructuralLeaf>] {
        self.structural.get_or_init(|| {
            let mut out: Vec<Option<StructuralLeaf>> =
                (0..self.guideline.patterns.len()).map(|_| None).collect();
            for (p, spec, prefiltered) in self.guideline.condition.structural() {
                if let Some(slot) = out.get_mut(p) {
                    *slot = Some(StructuralLeaf {
                        spec: spec.clone(),
                        prefiltered,
                        compiled: Default::default(),
                    });
                }
            }
            out
        })
    }

    /// How a leaf is named to people: a regex leaf's pattern, a structural leaf's ast-grep
    /// pattern.
    pub fn leaf_source(&self, pattern: usize) -> &str {
        match self.structural().get(pattern) {
            Some(Some(s)) => &s.spec.pattern,
            _ => self
                .guideline
                .patterns
                .get(pattern)
                .map_or("", String::as_str),
        }
    }

    /// Each leaf of its condition in the order written, with the line where it held (`None`:
    /// it did not hold).
    pub fn leaves(&self, text: &Text<'_>, edit: &Edit<'_>) -> Vec<LeafOutcome> {
        self.guideline
            .condition
            .leaves()
            .into_iter()
            .map(|(pattern, within, negated)| {
                let at = self.leaf_span(pattern, within, text, edit, true);
                let structural = matches!(self.structural().get(pattern), Some(Some(_)));
                let node = at.and_then(|(start, end, _)| {
                    let end = end?;
                    let (_, last) = text.lines().span(start, end);
                    Some(MatchedNode {
                        text: String::from_utf8_lossy(&text.bytes[start..end]).into_owned(),
                        last_line: last,
                    })
                });
                LeafOutcome {
                    pattern,
                    within,
                    negated,
                    line: at.map(|(_, _, line)| line),
                    offset: at.map(|(offset, _, _)| offset),
                    structural,
                    node,
                }
            })
            .collect()
    }

    fn leaf(
        &self,
        pattern: usize,
        within: Within,
        text: &Text<'_>,
        edit: &Edit<'_>,
        honour_allows: bool,
    ) -> Option<(usize, usize)> {
        self.leaf_span(pattern, within, text, edit, honour_allows)
            .map(|(offset, _, line)| (offset, line))
    }

    /// Where a leaf first holds: its match's start, its end for a structural leaf's node, and
    /// its first line.
    fn leaf_span(
        &self,
        pattern: usize,
        within: Within,
        text: &Text<'_>,
        edit: &Edit<'_>,
        honour_allows: bool,
    ) -> Option<(usize, Option<usize>, usize)> {
        let (regex, one_line) = self.regexes().get(pattern)?.as_ref()?;
        let id = self.id();
        let allowed_for = (honour_allows && text.allows().names(id)).then_some(id);
        let Some(Some(structural)) = self.structural().get(pattern) else {
            return leaf_line_in(regex, *one_line, within, text, edit, allowed_for)
                .map(|(offset, line)| (offset, None, line));
        };
        // The text every match needs, looked for before the file is parsed: a guideline that
        // is a candidate by another leaf does not make a file without it be parsed.
        if structural.prefiltered && !regex.is_match(text.bytes) {
            return None;
        }
        let compiled =
            structural.compiled_for(text.language?, self.guideline.languages.as_deref())?;
        let found = compiled.find(text.tree()?);
        leaf_node_in(&found, within, text, edit, allowed_for)
            .map(|(start, end, line)| (start, Some(end), line))
    }

    /// Whether its condition holds in `text` (`honour_allows`: the matches its
    /// `guidebook:allow` comments allow do not count).
    fn holds(&self, text: &Text<'_>, edit: &Edit<'_>, honour_allows: bool) -> bool {
        self.guideline
            .condition
            .holds(&mut |p, within| self.leaf(p, within, text, edit, honour_allows).is_some())
    }
}

/// A structural leaf of a guideline, with its patterns compiled per language on first need.
#[derive(Debug)]
struct StructuralLeaf {
    spec: StructuralSpec,
    /// Its position in `patterns` holds the regex of the text its matches need.
    prefiltered: bool,
    /// Per language of the guideline's scope (by position): the compiled patterns.
    compiled: OnceLock<Vec<(&'static str, Option<StructuralPattern>)>>,
}

impl StructuralLeaf {
    /// The leaf compiled for `language`, when it is one of the guideline's (every one was
    /// compiled at load time; a failure here only makes the leaf never hold).
    fn compiled_for(
        &self,
        language: &'static str,
        languages: Option<&[&'static str]>,
    ) -> Option<&StructuralPattern> {
        let compiled = self.compiled.get_or_init(|| {
            languages
                .unwrap_or_default()
                .iter()
                .map(|l| (*l, StructuralPattern::compile(&self.spec, l).ok()))
                .collect()
        });
        compiled
            .iter()
            .find(|(l, _)| *l == language)
            .and_then(|(_, p)| p.as_ref())
    }
}

/// Which guidelines apply to one `(repository, language)` pair, as a dense flag per guideline.
pub type Applicability = Vec<bool>;

/// How one leaf of a condition came out in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafOutcome {
    /// The leaf's pattern, by position in the guideline's `patterns`.
    pub pattern: usize,
    pub within: Within,
    /// Under an odd number of `not`s.
    pub negated: bool,
    /// The 1-based line of its first match that counts; `None`: it did not hold.
    pub line: Option<usize>,
    /// The byte offset that match starts at.
    pub offset: Option<usize>,
    /// A structural (`ast`) leaf.
    pub structural: bool,
    /// A structural leaf's matched node, when it held.
    pub node: Option<MatchedNode>,
}

/// The syntax node a structural leaf matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedNode {
    /// Its source text.
    pub text: String,
    /// The 1-based line it ends on (it starts on the leaf's `line`).
    pub last_line: usize,
}

/// Where a file sits, for `scope.paths`.
#[derive(Debug, Clone, Copy)]
pub enum FilePlace<'a> {
    /// Its path relative to its repository's root.
    InRepository(&'a Path),
    /// Outside any repository: path-scoped guidelines leave it out.
    Outside,
    /// Path scopes not checked (a guideline example with no `path`).
    Unchecked,
}

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
    /// Every path glob of every path-scoped guideline.
    path_scopes: PathScopes,
    /// Guidelines whose condition can hold with no pattern matching (`not` alone): every file
    /// in their scope is a candidate.
    unanchored: Vec<u32>,
    /// The repositories some guidelines are confined to (a trusted repository's own rules), each
    /// with its guidelines: they apply to that repository's files only.
    homes: HashMap<PathBuf, Vec<u32>>,
    /// Applicability per (repository, language) seen lately: working it out is a pass over
    /// every guideline, a search's largest cost after the scan at 10,000 guidelines.
    applicable: Mutex<HashMap<ApplicabilityKey, Arc<Applicability>>>,
}

/// A file's repository root (only when some guidelines are confined to it), repository
/// identity and language.
pub type ApplicabilityKey = (Option<PathBuf>, Option<String>, Option<&'static str>);

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
                    plain: g.condition.is_plain(),
                    guideline: g,
                    regexes: OnceLock::new(),
                    structural: OnceLock::new(),
                    block_tokens: OnceLock::new(),
                }
            })
            .collect();
        let mut unanchored = Vec::new();
        // Each pattern with how it was indexed when it was loaded (or now, for a guideline
        // built in memory), borrowed rather than copied.
        // Only the leaves a match needs are indexed: a file where none of them matches cannot
        // match (a `not` leaf would only add candidates).
        let mut patterns = Vec::new();
        for (gi, c) in compiled.iter().enumerate() {
            let g = &c.guideline;
            let indexes = g
                .indexes
                .get_or_init(|| g.patterns.iter().map(|p| index_of(p)).collect());
            let Some(mut required) = g.condition.required_leaves() else {
                unanchored.push(gi as u32);
                continue;
            };
            required.sort_unstable();
            required.dedup();
            for p in required {
                if let (Some(pattern), Some(index)) = (g.patterns.get(p), indexes.get(p)) {
                    patterns.push((gi as u32, pattern.as_str(), index));
                }
            }
        }
        let path_scopes = PathScopes::build(
            compiled
                .iter()
                .enumerate()
                .filter_map(|(gi, c)| Some((gi as u32, c.guideline.paths.as_deref()?))),
        );
        let matcher = PatternMatcher::build_indexed(patterns);
        let mut homes: HashMap<PathBuf, Vec<u32>> = HashMap::new();
        for (gi, c) in compiled.iter().enumerate() {
            if let Some(home) = c.guideline.origin.home() {
                homes.entry(home.to_path_buf()).or_default().push(gi as u32);
            }
        }
        GuidelineSnapshot {
            homes,
            root,
            guidelines: compiled,
            errors,
            loaded_at: SystemTime::now(),
            matcher,
            repo_globs: build_glob_sets(globs),
            path_scopes,
            unanchored,
            applicable: Mutex::new(HashMap::new()),
        }
    }

    /// An empty snapshot, served before the first load finishes.
    pub fn empty(root: PathBuf) -> Self {
        Self::build(root, Vec::new(), Vec::new())
    }

    /// Which guidelines apply to a file with this repository identity and language, outside
    /// every repository that has rules of its own.
    pub fn applicability(&self, repository: Option<&str>, language: Option<&str>) -> Applicability {
        self.applicability_at(None, repository, language)
    }

    /// Which guidelines apply to a file of the repository whose canonical root is `home`, with
    /// this identity and language: the guidebook's, and that repository's own rules.
    pub fn applicability_at(
        &self,
        home: Option<&Path>,
        repository: Option<&str>,
        language: Option<&str>,
    ) -> Applicability {
        let mut repo_ok: Vec<bool> = self
            .guidelines
            .iter()
            .map(|g| g.guideline.repositories.is_none() && g.guideline.origin.home().is_none())
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
        if let Some(own) = home.and_then(|h| self.homes.get(h)) {
            for &g in own {
                repo_ok[g as usize] = true;
            }
        }
        self.applicability_with(repo_ok, language)
    }

    /// Whether some guidelines are confined to the repository at this canonical root.
    pub fn has_rules_of(&self, root: &Path) -> bool {
        self.homes.contains_key(root)
    }

    /// Whether any guideline is confined to a repository.
    pub fn has_repository_rules(&self) -> bool {
        !self.homes.is_empty()
    }

    /// [`Self::applicability_at`], kept for the next file of the same repository and language.
    pub fn applicability_kept(
        &self,
        home: Option<&Path>,
        repository: Option<&str>,
        language: Option<&'static str>,
    ) -> Arc<Applicability> {
        let lock = || self.applicable.locked();
        let home = home.filter(|h| self.homes.contains_key(*h));
        let key = (
            home.map(Path::to_path_buf),
            repository.map(str::to_string),
            language,
        );
        if let Some(a) = lock().get(&key) {
            return a.clone();
        }
        let made = Arc::new(self.applicability_at(home, repository, language));
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

    /// Indices of the applicable guidelines that match `content` as a whole file (every line
    /// written, path scopes unchecked), ascending.
    pub fn matching(&self, content: &[u8], applicable: &Applicability) -> Vec<usize> {
        let edit = Edit::known(super::matching::Written::All);
        self.matching_in(&Text::new(content), applicable, FilePlace::Unchecked, &edit)
    }

    /// For a guideline known to match `content` as a whole file: the 1-based line of its
    /// earliest match and the pattern that matched there.
    pub fn first_match(&self, guideline: usize, content: &[u8]) -> Option<(usize, &str)> {
        let edit = Edit::known(super::matching::Written::All);
        self.first_match_in(guideline, &Text::new(content), &edit)
    }

    /// Indices of the applicable guidelines that match the file `text` at `place`, given what
    /// `edit` wrote, ascending (so in id order). The content is scanned once for all patterns;
    /// a guideline whose condition is more than "any of these patterns" is then evaluated on
    /// its own.
    pub fn matching_in(
        &self,
        text: &Text<'_>,
        applicable: &Applicability,
        place: FilePlace<'_>,
        edit: &Edit<'_>,
    ) -> Vec<usize> {
        self.matching_allowed(text, applicable, place, edit).0
    }

    /// [`Self::matching_in`], and the guidelines that would have matched but for a
    /// `guidebook:allow` comment (a match on the comment's line or the next does not count).
    pub fn matching_allowed(
        &self,
        text: &Text<'_>,
        applicable: &Applicability,
        place: FilePlace<'_>,
        edit: &Edit<'_>,
    ) -> (Vec<usize>, Vec<usize>) {
        let scoped;
        let applicable = match place {
            FilePlace::Unchecked => applicable,
            _ if self.path_scopes.is_empty() => applicable,
            FilePlace::InRepository(relative) => {
                scoped = self.path_scoped(applicable, Some(relative));
                &scoped
            }
            FilePlace::Outside => {
                scoped = self.path_scoped(applicable, None);
                &scoped
            }
        };
        if !applicable.iter().any(|a| *a) {
            return (Vec::new(), Vec::new());
        }
        let mut hit = vec![false; self.guidelines.len()];
        self.matcher.mark_matches(text.bytes, applicable, &mut hit);
        for &g in &self.unanchored {
            hit[g as usize] |= applicable[g as usize];
        }
        let mut found = marked(&hit);
        let mut allowed = Vec::new();
        // Nothing matched: the file's `guidebook:allow` comments need not be looked for.
        if found.is_empty() {
            return (found, allowed);
        }
        // A file with `guidebook:allow` comments: the guidelines they name are evaluated leaf by
        // leaf, with and without the allowances.
        let allows = text.allows();
        found.retain(|&g| {
            let c = &self.guidelines[g];
            if allows.is_empty() || !allows.names(c.id()) {
                return c.plain || c.holds(text, edit, false);
            }
            let held = c.holds(text, edit, true);
            if !held && (c.plain || c.holds(text, edit, false)) {
                allowed.push(g);
            }
            held
        });
        (found, allowed)
    }

    /// Whether `scope.paths` of guideline `g` takes in the file at `relative`.
    pub fn in_path_scope(&self, g: usize, relative: &Path) -> bool {
        let mut one = vec![false; self.guidelines.len()];
        one[g] = true;
        self.path_scopes.restrict(&mut one, Some(relative));
        one[g]
    }

    /// `applicable` less the path-scoped guidelines that leave out the file at `relative`.
    fn path_scoped(&self, applicable: &Applicability, relative: Option<&Path>) -> Applicability {
        let mut scoped = applicable.clone();
        self.path_scopes.restrict(&mut scoped, relative);
        scoped
    }

    /// For a guideline known to match: the 1-based line of its earliest match that counts (of a
    /// leaf not under `not`) and that leaf's pattern.
    pub fn first_match_in(
        &self,
        guideline: usize,
        text: &Text<'_>,
        edit: &Edit<'_>,
    ) -> Option<(usize, &str)> {
        let g = &self.guidelines[guideline];
        // The earliest by offset (two matches on one line: the one further left), then by the
        // order the leaves are written in.
        let (_, line, pattern) = g
            .leaves(text, edit)
            .into_iter()
            .filter(|l| !l.negated)
            .filter_map(|l| Some((l.offset?, l.line?, l.pattern)))
            .min()?;
        Some((line, g.leaf_source(pattern)))
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
            paths: None,
            severity: Default::default(),
            condition: super::super::matching::Condition::any_in_file(pats.len()),
            patterns: pats.iter().map(|s| s.to_string()).collect(),
            content: format!("{id} content"),
            source: Path::new("/g").join(id).join("guideline.yaml"),
            origin: Default::default(),
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

#[cfg(test)]
mod structural_tests {
    use super::*;
    use crate::guidebook::matching::{parses_on_this_thread, Written};
    use crate::guidebook::parse_guideline;

    /// Five real `runBlocking` calls and eight mentions in comments and strings.
    pub(crate) const KOTLIN: &str = r#"package demo

// runBlocking is banned here: runBlocking { } blocks the thread
/* runBlocking in a block comment */
class Orders(private val repo: Repo) {
    val hint = "do not call runBlocking { } here"
    val other = "runBlocking"

    fun load() = runBlocking { repo.all() }

    fun save(o: Order) {
        // runBlocking { repo.save(o) }
        runBlocking {
            repo.save(o)
        }
    }

    /** Calls runBlocking. */
    fun sync() = runBlocking(Dispatchers.IO) { repo.sync() }

    fun nested() {
        val s = "${"runBlocking"}"
        launch { runBlocking { tick() } }
        runBlocking { }
    }
}
"#;

    fn snapshot(yamls: &[(&str, &str)]) -> GuidelineSnapshot {
        let guidelines = yamls
            .iter()
            .map(|(id, y)| {
                Arc::new(parse_guideline(Path::new(&format!("/g/{id}/guideline.yaml")), y).unwrap())
            })
            .collect();
        GuidelineSnapshot::build("/g".into(), guidelines, vec![])
    }

    fn yaml(id: &str, matcher: &str) -> String {
        format!("id: {id}\nscope:\n  languages: [kotlin]\nmatch:\n{matcher}content: x\n")
    }

    fn kotlin(content: &str) -> Text<'_> {
        Text::new(content.as_bytes()).in_language(Some("kotlin"))
    }

    #[test]
    fn a_structural_leaf_sees_the_5_calls_a_regex_sees_13_lines() {
        let regex = Regex::new("runBlocking").unwrap();
        assert_eq!(regex.find_iter(KOTLIN.as_bytes()).count(), 13);
        let s = snapshot(&[(
            "ast",
            &yaml("ast", "  ast:\n    pattern: runBlocking($$$ARGS)\n"),
        )]);
        let g = &s.guidelines[0];
        // Every call, with or without a trailing lambda: `runBlocking($$$)` and `runBlocking { }`
        // are written as two leaves below; here the lines of each call the tree holds.
        let calls = StructuralPattern::compile(
            &StructuralSpec {
                pattern: "runBlocking".into(),
                inside: None,
                has: None,
            },
            "kotlin",
        )
        .unwrap();
        let tree =
            crate::guidebook::matching::SyntaxTree::parse("kotlin", KOTLIN.as_bytes()).unwrap();
        let lines = LineStarts::of(KOTLIN.as_bytes());
        let mut call_lines: Vec<usize> = calls
            .find(&tree)
            .iter()
            .map(|(s, _)| lines.line_of(*s))
            .collect();
        call_lines.dedup();
        assert_eq!(
            call_lines,
            [9, 13, 19, 23, 24],
            "the 5 calls, not the 8 mentions"
        );
        let held = g.leaves(&kotlin(KOTLIN), &Edit::known(Written::All));
        assert_eq!(held[0].line, Some(19), "runBlocking(Dispatchers.IO) {{ }}");
    }

    use super::super::matching::LineStarts;

    #[test]
    fn a_file_whose_only_mentions_are_comments_and_strings_does_not_match() {
        let s = snapshot(&[
            (
                "ast",
                &yaml("ast", "  ast:\n    pattern: runBlocking { $$$ }\n"),
            ),
            ("re", &yaml("re", "  regex:\n    pattern: runBlocking\n")),
        ]);
        let all = s.applicability(None, Some("kotlin"));
        let edit = Edit::known(Written::All);
        let only_mentions = "// runBlocking { }\nval s = \"runBlocking { }\"\n";
        let m = s.matching_in(&kotlin(only_mentions), &all, FilePlace::Unchecked, &edit);
        assert_eq!(m, [1], "only the regex guideline");
        let m = s.matching_in(&kotlin(KOTLIN), &all, FilePlace::Unchecked, &edit);
        assert_eq!(m, [0, 1]);
        assert_eq!(
            s.first_match_in(0, &kotlin(KOTLIN), &edit),
            Some((9, "runBlocking { $$$ }"))
        );
    }

    #[test]
    fn in_changes_means_a_matched_node_overlaps_a_written_line() {
        let s = snapshot(&[(
            "ast",
            &yaml(
                "ast",
                "  ast:\n    pattern: runBlocking { $$$ }\n    in: changes\n",
            ),
        )]);
        let all = s.applicability(None, Some("kotlin"));
        let on = |ranges: Vec<[usize; 2]>| {
            let edit = Edit::known(Written::lines(ranges));
            let text = kotlin(KOTLIN);
            let held = s.guidelines[0].leaves(&text, &edit);
            (
                s.matching_in(&text, &all, FilePlace::Unchecked, &edit),
                held[0].line,
                held[0].node.as_ref().map(|n| n.last_line),
            )
        };
        assert_eq!(on(vec![[12, 12]]), (vec![], None, None), "a comment line");
        // The call on lines 13-15 overlaps a write of its last line only.
        assert_eq!(on(vec![[15, 15]]), (vec![0], Some(13), Some(15)));
        assert_eq!(on(vec![[3, 7]]), (vec![], None, None));
        assert_eq!(on(vec![[24, 24]]), (vec![0], Some(24), Some(24)));
    }

    #[test]
    fn structural_leaves_compose_with_not_and_all() {
        // A `runBlocking { }` call in a file that does not import kotlinx.coroutines.test.
        let s = snapshot(&[(
            "c",
            &yaml(
                "c",
                "  all:\n    - ast:\n        pattern: runBlocking { $$$ }\n    - not:\n        regex:\n          pattern: 'import kotlinx\\.coroutines\\.test'\n",
            ),
        )]);
        let all = s.applicability(None, Some("kotlin"));
        let edit = Edit::known(Written::All);
        let m = |c: &str| s.matching_in(&kotlin(c), &all, FilePlace::Unchecked, &edit);
        assert_eq!(m(KOTLIN), [0]);
        assert!(m(&format!("import kotlinx.coroutines.test.x\n{KOTLIN}")).is_empty());
        assert!(m("// runBlocking { }\n").is_empty());
        // not(ast): a file that has no call matches, one with a call does not.
        let s = snapshot(&[(
            "n",
            &yaml(
                "n",
                "  all:\n    - regex:\n        pattern: class\n    - not:\n        ast:\n          pattern: runBlocking { $$$ }\n",
            ),
        )]);
        let m = |c: &str| s.matching_in(&kotlin(c), &all, FilePlace::Unchecked, &edit);
        assert!(m(KOTLIN).is_empty());
        assert_eq!(m("class A // runBlocking { }\n"), [0]);
    }

    #[test]
    fn a_file_without_the_literals_is_never_parsed_and_others_once() {
        let many: Vec<(String, String)> = (0..5)
            .map(|i| {
                let id = format!("g{i}");
                let y = yaml(&id, "  ast:\n    pattern: runBlocking { $$$ }\n");
                (id, y)
            })
            .chain([(
                // A candidate by its regex: its structural leaf still needs its own text.
                "other".to_string(),
                yaml(
                    "other",
                    "  all:\n    - regex:\n        pattern: class\n    - ast:\n        pattern: runBlocking { $$$ }\n",
                ),
            )])
            .collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let s = snapshot(&refs);
        let all = s.applicability(None, Some("kotlin"));
        let edit = Edit::known(Written::All);
        let without = "class A {\n  fun f() = launch { }\n}\n".repeat(50);
        let before = parses_on_this_thread();
        assert!(s
            .matching_in(&kotlin(&without), &all, FilePlace::Unchecked, &edit)
            .is_empty());
        assert_eq!(parses_on_this_thread(), before, "no literal, no parse");
        let text = kotlin(KOTLIN);
        let m = s.matching_in(&text, &all, FilePlace::Unchecked, &edit);
        assert_eq!(m.len(), 6);
        for g in m {
            s.first_match_in(g, &text, &edit);
            s.guidelines[g].leaves(&text, &edit);
        }
        assert_eq!(
            parses_on_this_thread(),
            before + 1,
            "one parse for six leaves"
        );
    }

    #[test]
    fn load_errors_point_at_the_leaf() {
        let err = |y: &str| parse_guideline(Path::new("/g/x/guideline.yaml"), y).unwrap_err();
        let e = err("id: x\nscope:\n  languages: [kotlin]\nmatch:\n  any:\n    - regex:\n        pattern: a\n    - ast:\n        pattern: 'fun ((('\ncontent: x\n");
        assert_eq!(e.line, Some(8), "{e}");
        assert!(e.to_string().contains("kotlin"), "{e}");
        let e = err("id: x\nmatch:\n  ast:\n    pattern: foo()\ncontent: x\n");
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.to_string().contains("scope.languages"), "{e}");
        let e = err("id: x\nscope:\n  languages: [kotlin, markdown]\nmatch:\n  ast:\n    pattern: foo()\ncontent: x\n");
        assert!(e.to_string().contains("do not support markdown"), "{e}");
        let e = err("id: x\nscope:\n  languages: [kotlin]\nmatch:\n  ast:\n    pattern: foo()\n    kind: call\ncontent: x\n");
        assert!(e.to_string().contains("kind"), "{e}");
        let e = err("id: x\nscope:\n  languages: [kotlin]\nmatch:\n  ast:\n    pattern: foo()\n    inside: 'class ((('\ncontent: x\n");
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.to_string().contains("ast.inside"), "{e}");
    }

    #[test]
    fn an_allow_comment_lets_a_node_on_its_line_or_the_next_through() {
        let s = snapshot(&[(
            "ast",
            &yaml("ast", "  ast:\n    pattern: runBlocking { $$$ }\n"),
        )]);
        let all = s.applicability(None, Some("kotlin"));
        let edit = Edit::known(Written::All);
        let allowed = "// guidebook:allow ast (a test helper)\nfun f() = runBlocking { }\n";
        let (found, allowed) =
            s.matching_allowed(&kotlin(allowed), &all, FilePlace::Unchecked, &edit);
        assert_eq!((found, allowed), (vec![], vec![0]));
        let later =
            "// guidebook:allow ast\nfun f() = runBlocking { }\nfun g() = runBlocking { }\n";
        let text = kotlin(later);
        assert_eq!(s.matching_in(&text, &all, FilePlace::Unchecked, &edit), [0]);
        assert_eq!(s.guidelines[0].leaves(&text, &edit)[0].line, Some(3));
    }

    #[test]
    fn a_pattern_without_fixed_text_makes_every_file_of_its_languages_a_candidate() {
        let s = snapshot(&[
            ("plus", &yaml("plus", "  ast:\n    pattern: $A + $B\n")),
            ("any", &yaml("any", "  ast:\n    pattern: $X\n")),
        ]);
        let all = s.applicability(None, Some("kotlin"));
        let edit = Edit::known(Written::All);
        let m = |c: &str| s.matching_in(&kotlin(c), &all, FilePlace::Unchecked, &edit);
        assert_eq!(m("val x = a + b\n"), [0, 1]);
        assert_eq!(m("val x = \"a + b\"\n"), [0], "a string holds no `+` node");
        let (plus, any) = (&s.guidelines[1].guideline, &s.guidelines[0].guideline);
        // `+` is an unnamed token, matched by its kind: no text is certain, so no prefilter.
        assert!(plus.condition.required_leaves().is_none());
        assert!(any.condition.required_leaves().is_none());
    }
}
